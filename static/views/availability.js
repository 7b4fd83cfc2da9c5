// Cluster history and availability (issue 20): the timeline of who was master
// when, from the server's history intervals, for 24 h / 7 d / 30 d, with
// incidents shaded and unobserved time hatched, and the availability figures the
// server sums for the same window. Also the figures of every cluster for the
// clusters list's "sort by availability".
import { useEffect, useState } from 'preact/hooks';
import { signal } from '@preact/signals';
import { html, exact } from '../ui.js';
import { get, query } from '../api.js';

const HOUR = 3600 * 1000;
export const RANGES = [['24h', 24 * HOUR], ['7d', 7 * 24 * HOUR], ['30d', 30 * 24 * HOUR]];

// Pure: hosts in lane order and the bars, incidents and gaps to draw for
// intervals (as the server clips them) within [from, to].
export function bandsOf(intervals, from, to) {
  const hosts = [...new Set(intervals.flatMap((i) => i.masters))];
  const spans = intervals.map((i) => ({ from: Date.parse(i.from), to: Date.parse(i.to), i }));
  const bars = spans.flatMap((s) => s.i.masters.map((h) => ({ host: h, from: s.from, to: s.to, split: s.i.masters.length > 1, health: s.i.health })));
  const incidents = [];
  for (const s of spans) {
    const last = incidents[incidents.length - 1];
    if (!s.i.incidentId) continue;
    if (last && last.id === s.i.incidentId) last.to = s.to;
    else incidents.push({ id: s.i.incidentId, from: s.from, to: s.to, health: s.i.health });
  }
  const gaps = [];
  let at = from;
  for (const s of spans) {
    if (s.from > at) gaps.push({ from: at, to: s.from });
    at = Math.max(at, s.to);
  }
  if (at < to) gaps.push({ from: at, to });
  return { hosts, bars, incidents, gaps };
}

function duration(seconds) {
  if (seconds == null) return '–';
  if (seconds < 90) return `${Math.round(seconds)} s`;
  if (seconds < 5400) return `${Math.round(seconds / 60)} min`;
  if (seconds < 2 * 86400) return `${(seconds / 3600).toFixed(1)} h`;
  return `${(seconds / 86400).toFixed(1)} d`;
}

export function percent(share) {
  return share == null ? '–' : `${(share * 100).toFixed(share > 0.999 && share < 1 ? 3 : 2)} %`;
}

// The share of observed time in health ok (null when nothing was observed).
export function okShare(a) {
  return a && a.observedSeconds > 0 ? a.seconds.ok / a.observedSeconds : null;
}

function Band({ intervals, from, to }) {
  const { hosts, bars, incidents, gaps } = bandsOf(intervals, from, to);
  const W = 1000, left = 130, laneH = 24, top = 8;
  const lanes = Math.max(1, hosts.length);
  const H = top + lanes * laneH + 24;
  const x = (t) => left + ((t - from) / (to - from)) * (W - left - 10);
  const ticks = [];
  for (let i = 0; i <= 6; i++) ticks.push(from + (i * (to - from)) / 6);
  const label = (t) => (to - from > 2 * 24 * HOUR
    ? new Date(t).toLocaleDateString([], { month: 'short', day: 'numeric' })
    : new Date(t).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' }));
  return html`<svg viewBox=${`0 0 ${W} ${H}`} role="img" aria-label="Who was master when">
    ${incidents.map((w) => html`<rect class="incident-window" x=${x(w.from)} y=${top - 4} width=${Math.max(2, x(w.to) - x(w.from))}
        height=${lanes * laneH + 4}><title>Incident (${w.health}) ${exact(new Date(w.from).toISOString())} – ${exact(new Date(w.to).toISOString())}</title></rect>`)}
    ${gaps.map((g) => html`<rect class="unrecorded" x=${x(g.from)} y=${top} width=${Math.max(1, x(g.to) - x(g.from))} height=${lanes * laneH}>
        <title>Not observed (no history: before the cluster was seen, or the server was stopped)</title></rect>`)}
    ${hosts.map((h, i) => html`<g key=${h}>
      <text class="lane-label" x=${left - 8} y=${top + i * laneH + 16} text-anchor="end">${h.length > 16 ? `${h.slice(0, 15)}…` : h}</text>
      <line class="lane" x1=${left} x2=${W - 10} y1=${top + i * laneH + laneH / 2} y2=${top + i * laneH + laneH / 2} />
      ${bars.filter((b) => b.host === h).map((b) => html`<rect class=${b.split ? 'master split' : 'master'}
          x=${x(b.from)} y=${top + i * laneH + 4} width=${Math.max(2, x(b.to) - x(b.from))} height=${laneH - 8} rx="3">
          <title>${h} MASTER${b.split ? ' (split brain)' : ''} from ${exact(new Date(b.from).toISOString())} (${b.health})</title></rect>`)}
    </g>`)}
    ${ticks.map((t) => html`<text class="tick" x=${x(t)} y=${H - 6} text-anchor="middle">${label(t)}</text>`)}
  </svg>`;
}

function Figures({ a }) {
  if (!a) return html`<p class="empty" id="availability-figures">No history in this window.</p>`;
  const rows = Object.entries(a.seconds).filter(([, s]) => s > 0);
  return html`<dl class="facts" id="availability-figures">
    <dt>Healthy (ok)</dt><dd data-figure="ok-share">${percent(okShare(a))}</dd>
    <dt>Exactly one master</dt><dd data-figure="one-master">${percent(a.oneMasterShare)}</dd>
    <dt>Master changes</dt><dd data-figure="master-changes">${a.masterChanges}</dd>
    <dt>Incidents</dt><dd data-figure="incidents">${a.incidents.count}${a.incidents.count > 0
      ? ` · ${duration(a.incidents.totalSeconds)} in all, longest ${duration(a.incidents.longestSeconds)}` : ''}</dd>
    <dt>Time by health</dt><dd>${rows.map(([h, s]) => `${h} ${duration(s)}`).join(' · ') || '–'}</dd>
    ${a.unobservedSeconds > 0 && html`<dt>Not observed</dt><dd>${duration(a.unobservedSeconds)}</dd>`}
  </dl>`;
}

// The history section of a cluster's detail.
export function HistoryPanel({ clusterKey }) {
  const [range, setRange] = useState('24h');
  const [data, setData] = useState(null);
  useEffect(() => {
    let gone = false;
    const to = Date.now();
    const from = to - RANGES.find(([r]) => r === range)[1];
    const window = { from: new Date(from).toISOString(), to: new Date(to).toISOString() };
    Promise.all([
      get(`/api/v1/keepalived/clusters/history${query({ key: clusterKey, ...window })}`),
      get(`/api/v1/keepalived/clusters/availability${query(window)}`),
    ]).then(([h, a]) => {
      if (!gone) setData({ range, from, to, intervals: h.intervals, a: a.clusters.find((c) => c.key === clusterKey) });
    }).catch(() => { if (!gone) setData({ range, from, to, intervals: [], a: null, failed: true }); });
    return () => { gone = true; };
  }, [clusterKey, range]);
  return html`<figure class="timeline" id="history-timeline" data-range=${data?.range || ''}>
    <div class="row" role="group" aria-label="Time range">
      ${RANGES.map(([r]) => html`<button type="button" data-range=${r} class=${r === range ? 'active' : 'ghost'}
        aria-pressed=${r === range} onClick=${() => setRange(r)}>${r.replace('h', ' h').replace('d', ' d')}</button>`)}
    </div>
    ${!data || data.range !== range ? html`<p class="muted">Loading…</p>`
      : html`<${Band} intervals=${data.intervals} from=${data.from} to=${data.to} />
        <figcaption class="muted">MASTER per host from the cluster history; shaded: incidents; hatched: not observed.${data.failed ? ' The history could not be loaded.' : ''}</figcaption>
        <${Figures} a=${data.a} />`}
  </figure>`;
}

// Every cluster's figures over the last 30 days, fetched once a minute at most,
// for sorting the clusters list.
export const availabilityByKey = signal(null);
let fetchedAt = 0;
export function useAvailabilityList(wanted) {
  useEffect(() => {
    if (!wanted || Date.now() - fetchedAt < 60_000) return;
    fetchedAt = Date.now();
    get('/api/v1/keepalived/clusters/availability')
      .then((a) => { availabilityByKey.value = new Map(a.clusters.map((c) => [c.key, c])); })
      .catch(() => { fetchedAt = 0; });
  }, [wanted]);
  return availabilityByKey.value;
}
