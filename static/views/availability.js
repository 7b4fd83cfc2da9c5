// Cluster history and availability (issue 20): the timeline of who was master
// when, from the server's history intervals, for 24 h / 7 d / 30 d (drawn by the
// shared `MasterTimeline`: incidents shaded, time no interval covers hatched), and
// the availability figures the server sums for the same window. Also the figures of every cluster for the
// clusters list's "sort by availability".
import { useEffect, useState } from 'preact/hooks';
import { signal } from '@preact/signals';
import { html } from '../ui.js';
import { get, query } from '../api.js';
import { MasterTimeline } from '../timeline.js';

const HOUR = 3600 * 1000;
export const RANGES = [['24h', 24 * HOUR], ['7d', 7 * 24 * HOUR], ['30d', 30 * 24 * HOUR]];

// Pure: the timeline's input from history intervals (as the server clips them):
// hosts in lane order, master intervals, and incident windows (consecutive
// intervals of one incident joined).
export function bandsOf(intervals) {
  const hosts = [...new Set(intervals.flatMap((i) => i.masters))];
  const spans = intervals.map((i) => ({ from: Date.parse(i.from), to: Date.parse(i.to), i }));
  const bars = spans.map((s) => ({ from: s.from, to: s.to, masters: s.i.masters }));
  const incidents = [];
  for (const s of spans) {
    const last = incidents[incidents.length - 1];
    if (!s.i.incidentId) continue;
    if (last && last.id === s.i.incidentId) last.to = s.to;
    else incidents.push({ id: s.i.incidentId, from: s.from, to: s.to, health: s.i.health });
  }
  return { hosts, bars, incidents };
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
  const bands = data ? bandsOf(data.intervals) : null;
  return html`<div class="history" id="history-timeline" data-range=${data?.range || ''}>
    <div class="row" role="group" aria-label="Time range">
      ${RANGES.map(([r]) => html`<button type="button" data-range=${r} class=${r === range ? 'active' : 'ghost'}
        aria-pressed=${r === range} onClick=${() => setRange(r)}>${r.replace('h', ' h').replace('d', ' d')}</button>`)}
    </div>
    ${!data || data.range !== range ? html`<p class="muted">Loading…</p>`
      : html`<${MasterTimeline} id="history-chart" label=${`Who was master when, last ${range}`} from=${data.from} to=${data.to}
          hosts=${bands.hosts} intervals=${bands.bars} incidents=${bands.incidents} />
        <p class="muted">From the cluster history; time with no record was not observed (before the cluster was seen, or the server was stopped).${data.failed ? ' The history could not be loaded.' : ''}</p>
        <${Figures} a=${data.a} />`}
  </div>`;
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
