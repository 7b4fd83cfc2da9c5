// Cluster history and availability: the cluster detail's one
// timeline of who was master when, for 24 h / 7 d / 30 d (drawn by the shared
// `MasterTimeline`: incidents shaded, time nobody observed hatched), fed by the
// server's history intervals, with the cluster's stored events only for the time
// before its history begins; and the availability figures the server sums for
// the same window. Also the figures of every cluster for the clusters list's
// "sort by availability".
import { useEffect, useState } from 'preact/hooks';
import { html } from './ui.js';
import { get, query } from './api.js';
import { MasterTimeline, fromClusterEvents } from './timeline.js';
import * as S from './state.js';

const HOUR = 3600 * 1000;
export const RANGES = [['24h', 24 * HOUR], ['7d', 7 * 24 * HOUR], ['30d', 30 * 24 * HOUR]];

// Pure: the timeline's input over [from, to]. From the history intervals (as the
// server clips them to the window; an open one holds until `to`), and before
// `recordedSince` (where the cluster's stored history begins; null: it has none)
// from its stored events, cut off there. After that a time no interval covers
// was not observed (the server was stopped) and stays unknown: events are not
// stretched over it. Incident windows: the intervals of one incident joined, an
// incident the events show open when the history begins joined with its
// continuation in the history.
export function timelineOf({ intervals = [], recordedSince = null, events = [], from, to }) {
  const begins = recordedSince ? Date.parse(recordedSince) : Infinity;
  const bars = [];
  const incidents = [];
  if (begins > from && events.length) {
    const cut = Math.min(begins, to);
    const drawn = fromClusterEvents(events, cut);
    for (const b of drawn.intervals) {
      if (b.from < cut) bars.push({ from: b.from, to: Math.min(b.to, cut), masters: b.masters });
    }
    for (const w of drawn.incidents) {
      if (w.from < cut) incidents.push({ ...w, to: w.to == null ? cut : Math.min(w.to, cut) });
    }
  }
  for (const i of intervals) {
    const f = Date.parse(i.from);
    const t = i.open ? Math.max(Date.parse(i.to), to) : Date.parse(i.to);
    bars.push({ from: f, to: t, masters: i.masters });
    if (!i.incidentId) continue;
    const last = incidents[incidents.length - 1];
    if (last && last.id === i.incidentId) last.to = Math.max(last.to, t);
    else incidents.push({ id: i.incidentId, from: f, to: t, health: i.health });
  }
  return { bars, incidents };
}

function duration(seconds) {
  if (seconds == null) return '–';
  if (seconds > 0 && seconds < 0.5) return 'under 1 s';
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

// The figures are shares of the time the cluster was observed, which for a young
// cluster (or after the server was stopped) is less than the range: said so.
function Figures({ a, range }) {
  if (!a) return html`<p class="empty" id="availability-figures">No history in this window.</p>`;
  const rows = Object.entries(a.seconds).filter(([, s]) => s > 0);
  const part = a.unobservedSeconds > 0;
  return html`<dl class="facts" id="availability-figures">
    <dt>Observed</dt><dd data-figure="observed">${part
      ? `${duration(a.observedSeconds)} of the last ${range.replace('h', ' h').replace('d', ' d')}; the shares below are of that time`
      : `the whole ${range.replace('h', ' h').replace('d', ' d')}`}</dd>
    <dt>Healthy (ok)</dt><dd data-figure="ok-share">${percent(okShare(a))}${part ? ' of the observed time' : ''}</dd>
    <dt>Exactly one master</dt><dd data-figure="one-master">${percent(a.oneMasterShare)}</dd>
    <dt>Master changes</dt><dd data-figure="master-changes">${a.masterChanges}</dd>
    <dt>Incidents</dt><dd data-figure="incidents">${a.incidents.count}${a.incidents.count > 0
      ? ` · ${duration(a.incidents.totalSeconds)} in all, longest ${duration(a.incidents.longestSeconds)}` : ''}</dd>
    <dt>Time by health</dt><dd>${rows.map(([h, s]) => `${h} ${duration(s)}`).join(' · ') || '–'}</dd>
  </dl>`;
}

// The cluster detail's timeline and figures. `hosts`: the members' names in
// lane order; `events`: the cluster's stored events (null while loading), drawn
// only before the history begins. Fetched again (after 300 ms) when the activity
// list changed, as the events are; the open interval grows with the clock.
export function HistoryPanel({ clusterKey, hosts = [], events = null }) {
  const [range, setRange] = useState('24h');
  const [data, setData] = useState(null);
  const version = S.activityVersion.value;
  useEffect(() => {
    let gone = false;
    const t = setTimeout(() => {
      const to = Date.now();
      const from = to - RANGES.find(([r]) => r === range)[1];
      const window = { from: new Date(from).toISOString(), to: new Date(to).toISOString() };
      Promise.all([
        get(`/api/v1/keepalived/clusters/history${query({ key: clusterKey, ...window })}`),
        get(`/api/v1/keepalived/clusters/availability${query({ key: clusterKey, ...window })}`),
      ]).then(([h, a]) => {
        if (!gone) {
          setData({ range, to, intervals: h.intervals, recordedSince: h.recordedSince ?? null,
            a: a.clusters.find((c) => c.key === clusterKey) });
        }
      }).catch(() => {
        if (!gone) setData((d) => ({ ...(d?.range === range ? d : { range, to, intervals: [], recordedSince: null, a: null }), failed: true }));
      });
    }, data?.range === range ? 300 : 0);
    return () => { gone = true; clearTimeout(t); };
  }, [clusterKey, range, version]);
  const ready = data && data.range === range;
  // The range ends now (the 15 s clock), or at the fetch if that is later.
  const to = ready ? Math.max(S.now.value, data.to) : 0;
  const from = to - RANGES.find(([r]) => r === range)[1];
  const drawn = ready ? timelineOf({ intervals: data.intervals, recordedSince: data.recordedSince,
    events: events || [], from, to }) : null;
  const before = ready && (!data.recordedSince || Date.parse(data.recordedSince) > from);
  return html`<div class="history" id="history-timeline" data-range=${ready ? range : ''}
      data-recorded-since=${ready ? data.recordedSince || '' : ''}>
    <div class="row" role="group" aria-label="Time range">
      ${RANGES.map(([r]) => html`<button type="button" data-range=${r} class=${r === range ? 'active' : 'ghost'}
        aria-pressed=${r === range} onClick=${() => setRange(r)}>${r.replace('h', ' h').replace('d', ' d')}</button>`)}
    </div>
    ${!ready ? html`<p class="muted">Loading…</p>`
      : html`<${MasterTimeline} id="master-timeline" label=${`Who was master when, last ${range}`} from=${from} to=${to}
          hosts=${hosts} intervals=${drawn.bars} incidents=${drawn.incidents} />
        <p class="muted">From the cluster history${before ? `; before it began${data.recordedSince
          ? ` (${new Date(data.recordedSince).toLocaleString()})` : ''}, from the cluster's stored events` : ''}.
          Time with no record was not observed (before anything was recorded, or while the server was stopped).${data.failed
          ? ' The history could not be refreshed.' : ''}</p>
        <${Figures} a=${data.a} range=${range} />`}
  </div>`;
}

// Every cluster's figures over the last 30 days (S.availabilityByKey), fetched
// once a minute at most, for sorting the clusters list. Figures cleared by
// S.resetData (the session ended) are fetched again whatever the minute says.
let fetchedAt = 0;
let fetching = false;
export function useAvailabilityList(wanted) {
  useEffect(() => {
    if (!wanted || fetching || (S.availabilityByKey.value && Date.now() - fetchedAt < 60_000)) return;
    fetchedAt = Date.now();
    fetching = true;
    get('/api/v1/keepalived/clusters/availability')
      .then((a) => { S.availabilityByKey.value = new Map(a.clusters.map((c) => [c.key, c])); })
      .catch(() => { fetchedAt = 0; })
      .finally(() => { fetching = false; });
  }, [wanted]);
  return S.availabilityByKey.value;
}
