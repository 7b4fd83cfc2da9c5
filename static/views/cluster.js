// Cluster detail: members, addresses a member lacks, keepalived counters side by
// side, the cluster's own activity, and the timeline of who was master when
// over the last 24 hours (from the stored cluster events; incidents shaded).
import { useEffect, useState } from 'preact/hooks';
import { html, Health, Time, exact } from '../ui.js';
import * as S from '../state.js';
import { get, query } from '../api.js';
import { byPriority, explain, hostOf, MemberRow } from './clusters.js';
import { EventRow } from './activity.js';

const DAY = 24 * 3600 * 1000;

function useClusterEvents(key) {
  const [events, setEvents] = useState(null);
  const version = S.activityVersion.value;
  useEffect(() => {
    let gone = false;
    const t = setTimeout(() => {
      get(`/api/v1/activity${query({ cluster: key, limit: 500 })}`)
        .then((list) => { if (!gone) setEvents(list); })
        .catch(() => { if (!gone) setEvents([]); });
    }, events ? 300 : 0);
    return () => { gone = true; clearTimeout(t); };
  }, [key, version]);
  return events;
}

// Pure: the master segments and incident windows within [from, to] (ms).
export function timelineOf(events, from, to) {
  const withCluster = events.filter((e) => e.data && e.data.cluster)
    .map((e) => ({ at: Date.parse(e.occurredAt), e }))
    .filter((x) => !Number.isNaN(x.at))
    .sort((a, b) => a.at - b.at);
  const segments = [];
  for (let i = 0; i < withCluster.length; i++) {
    const start = withCluster[i].at;
    const end = i + 1 < withCluster.length ? withCluster[i + 1].at : to;
    if (end < from || start > to) continue;
    const c = withCluster[i].e.data.cluster;
    const masters = Array.isArray(c.masters) ? c.masters : (c.master ? [c.master] : []);
    segments.push({ from: Math.max(start, from), to: Math.min(end, to), masters });
  }
  const incidents = new Map();
  for (const { at, e } of withCluster) {
    if (!e.kind.startsWith('vrrp.incident_') || !e.correlationId) continue;
    const inc = incidents.get(e.correlationId) || { from: Date.parse(e.data.incident?.openedAt) || at, to: to, health: e.data.incident?.health };
    if (e.kind === 'vrrp.incident_resolved') inc.to = at;
    else inc.health = e.data.incident?.health || inc.health;
    incidents.set(e.correlationId, inc);
  }
  const windows = [...incidents.values()].filter((w) => w.to >= from && w.from <= to)
    .map((w) => ({ ...w, from: Math.max(w.from, from), to: Math.min(w.to, to) }));
  const firstKnown = segments.length ? segments[0].from : to;
  return { segments, windows, firstKnown };
}

function Timeline({ events, cluster }) {
  const to = S.now.value;
  const from = to - DAY;
  const { segments, windows, firstKnown } = timelineOf(events, from, to);
  const hosts = [...new Set([...cluster.members.map(hostOf), ...segments.flatMap((s) => s.masters)])];
  const W = 1000, left = 130, laneH = 24, top = 8;
  const H = top + hosts.length * laneH + 24;
  const x = (t) => left + ((t - from) / DAY) * (W - left - 10);
  const ticks = [];
  for (let i = 0; i <= 8; i++) ticks.push(from + (i * DAY) / 8);
  return html`<figure class="timeline" id="master-timeline">
    <svg viewBox=${`0 0 ${W} ${H}`} role="img" aria-label="Who was master when, last 24 hours">
      ${windows.map((w) => html`<rect class="incident-window" x=${x(w.from)} y=${top - 4} width=${Math.max(2, x(w.to) - x(w.from))}
          height=${hosts.length * laneH + 4}><title>Incident (${w.health}) ${exact(new Date(w.from).toISOString())} – ${exact(new Date(w.to).toISOString())}</title></rect>`)}
      ${firstKnown > from && html`<rect class="unrecorded" x=${x(from)} y=${top} width=${x(firstKnown) - x(from)} height=${hosts.length * laneH}>
          <title>No recorded cluster event before this time</title></rect>`}
      ${hosts.map((h, i) => html`<g key=${h}>
        <text class="lane-label" x=${left - 8} y=${top + i * laneH + 16} text-anchor="end">${h.length > 16 ? `${h.slice(0, 15)}…` : h}</text>
        <line class="lane" x1=${left} x2=${W - 10} y1=${top + i * laneH + laneH / 2} y2=${top + i * laneH + laneH / 2} />
        ${segments.filter((s) => s.masters.includes(h)).map((s) => html`<rect class=${s.masters.length > 1 ? 'master split' : 'master'}
            x=${x(s.from)} y=${top + i * laneH + 4} width=${Math.max(2, x(s.to) - x(s.from))} height=${laneH - 8} rx="3">
            <title>${h} MASTER${s.masters.length > 1 ? ' (split brain)' : ''} from ${exact(new Date(s.from).toISOString())}</title></rect>`)}
      </g>`)}
      ${ticks.map((t) => html`<text class="tick" x=${x(t)} y=${H - 6} text-anchor="middle">${new Date(t).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' })}</text>`)}
    </svg>
    <figcaption class="muted">MASTER per host over the last 24 h from stored cluster events; shaded: incidents${firstKnown > from ? '; hatched: before the first recorded event' : ''}.</figcaption>
  </figure>`;
}

const COUNTERS = ['advertisements_sent', 'advertisements_received', 'became_master', 'released_master',
  'priority_zero_sent', 'priority_zero_received', 'packet_len_err', 'advert_interval_err', 'ip_ttl_err',
  'invalid_type_rcvd', 'addr_list_err', 'invalid_authtype', 'authtype_mismatch', 'auth_failure'];

// Which cells deserve a look: a host hearing no advertisements while another
// sends them, any priority-zero (a master gave up), more than one takeover.
function highlight(key, value, all) {
  const v = Number(value) || 0;
  const n = (s, k) => Number(s?.[k]) || 0;
  if (key === 'advertisements_received') return v === 0 && all.some((s) => n(s, 'advertisements_sent') > 0);
  if (key === 'advertisements_sent') return false;
  if (key.startsWith('priority_zero')) return v > 0;
  if (key === 'became_master' || key === 'released_master') return v > 1;
  return v > 0; // every other counter counts errors
}

function Counters({ cluster }) {
  const rows = byPriority(cluster.members).map((m) => {
    const reading = S.readings.value[m.clientId];
    const inst = reading?.instances?.find((i) => i.name === m.instance.name);
    return { m, stats: inst?.stats || null };
  });
  const keys = [...new Set([...COUNTERS.filter((k) => rows.some((r) => r.stats && k in r.stats)),
    ...rows.flatMap((r) => Object.keys(r.stats || {}))])];
  if (!keys.length) return html`<p class="empty">No counters reported.</p>`;
  return html`<div class="table-wrap"><table class="counters">
    <thead><tr><th scope="col">Counter</th>${rows.map((r) => html`<th scope="col">${hostOf(r.m)}</th>`)}</tr></thead>
    <tbody>${keys.map((k) => html`<tr>
      <th scope="row">${k.replaceAll('_', ' ')}</th>
      ${rows.map((r) => {
        const v = r.stats?.[k];
        const hl = r.stats && highlight(k, v, rows.map((x) => x.stats));
        return html`<td class=${hl ? 'hl' : ''}>${v ?? '–'}</td>`;
      })}
    </tr>`)}</tbody>
  </table></div>`;
}

export function ClusterDetail({ id }) {
  useEffect(() => { document.title = `Cluster ${id} · vrrp-monitor`; }, [id]);
  const cluster = S.clusters.value.find((c) => c.key === id);
  const events = useClusterEvents(id);
  if (!cluster) {
    return html`<section><h1>Cluster</h1>
      <p class="empty">${S.clustersLoaded.value ? 'This cluster does not exist (any more).' : 'Loading…'}</p>
      <p><a href="/clusters">All clusters</a></p></section>`;
  }
  const all = new Set(cluster.vips);
  const lacking = cluster.members.map((m) => ({ m, missing: [...all].filter((v) => !(m.instance.vips || []).includes(v)) }))
    .filter((x) => x.missing.length);
  return html`<section class="cluster-detail">
    <p><a href="/clusters">← Clusters</a></p>
    <h1><${Health} health=${cluster.health} /> VRID ${cluster.vrid}
      <span class="muted">${cluster.site ? `${cluster.site} · ` : ''}${cluster.networks.join(', ')}</span></h1>
    <p class="explain">${explain(cluster)}</p>
    <p class="muted">Addresses: ${cluster.vips.join(', ') || 'none'}</p>
    <h2>Members</h2>
    <ul class="members wide">${byPriority(cluster.members).map((m) => html`<${MemberRow} m=${m} key=${m.clientId + m.instance.name} />`)}</ul>
    ${lacking.length > 0 && html`<h2>Addresses a member lacks</h2><ul class="vip-mismatch">
      ${lacking.map(({ m, missing }) => html`<li><strong>${hostOf(m)}</strong> lacks ${missing.join(', ')}</li>`)}
    </ul>`}
    <h2>Master over the last 24 hours</h2>
    ${events ? html`<${Timeline} events=${events} cluster=${cluster} />` : html`<p class="muted">Loading…</p>`}
    <h2>Counters</h2>
    <${Counters} cluster=${cluster} />
    <h2>Activity of this cluster</h2>
    ${events && (events.length ? html`<ul class="events">${events.slice(0, 50).map((r) => html`<${EventRow} r=${r} key=${r.id} />`)}</ul>`
      : html`<p class="empty">No cluster events recorded.</p>`)}
  </section>`;
}
