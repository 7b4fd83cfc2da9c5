// Clusters: attention first (the API's order), searchable; each with its health,
// a one-line explanation and its members by effective priority.
import { useEffect } from 'preact/hooks';
import { html, Health, Dot, Paged } from '../ui.js';
import * as S from '../state.js';
import { route, setParams } from '../router.js';
import { okShare, percent, useAvailabilityList } from './availability.js';
import { loadSilences, silencesFor } from './silences.js';
import { FaultCause, DisagreeMark, disagreeingBackups } from '../tracking.js';

export function clusterHref(c) {
  return `/clusters/${encodeURIComponent(c.key)}`;
}

export function hostOf(m) {
  return S.clientName(m.clientId);
}

export function byPriority(members) {
  const p = (m) => m.instance.effectivePriority ?? m.instance.priority ?? -1;
  return [...members].sort((a, b) => p(b) - p(a) || hostOf(a).localeCompare(hostOf(b)));
}

// The open incident of a cluster, if any (its reasons explain the health best).
export function incidentOf(c) {
  for (const r of S.openIncidents.value) {
    const k = r.data?.cluster;
    if (k && (k.site || '') === (c.site || '') && k.vrid === c.vrid
      && (k.networks || []).some((n) => c.networks.includes(n))) return r;
  }
  return null;
}

const live = (m) => m.online && m.reporting;

// One line: which host, what is wrong. The incident's own reason texts (composed
// by the server) when one is open; otherwise read from the members.
export function explain(c) {
  const inc = incidentOf(c);
  const reasons = inc?.data?.incident?.reasons;
  if (reasons && reasons.length && inc.data.incident.health === c.health) {
    return reasons.map((r) => r.text).join(' ');
  }
  const names = (ms) => ms.map(hostOf).join(', ');
  const masters = c.members.filter((m) => live(m) && m.instance.state === 'MASTER');
  switch (c.health) {
    case 'ok': return `${names(masters)} is MASTER.`;
    case 'split-brain': return `${names(masters)} are all MASTER.`;
    case 'no-master': return 'No live member is MASTER.';
    case 'unknown': return 'No member is online and reporting.';
    case 'vip-mismatch': {
      const all = new Set(c.vips);
      const lacking = c.members.filter((m) => (m.instance.vips || []).length < all.size);
      return `${names(lacking) || 'Members'} ${lacking.length === 1 ? 'lacks' : 'lack'} addresses others carry.`;
    }
    case 'degraded': {
      const parts = [];
      const off = c.members.filter((m) => !m.online);
      const quiet = c.members.filter((m) => m.online && !m.reporting);
      const fault = c.members.filter((m) => live(m) && m.instance.state === 'FAULT');
      if (off.length) parts.push(`${names(off)} offline`);
      if (quiet.length) parts.push(`keepalived not reporting on ${names(quiet)}`);
      if (fault.length) parts.push(`${names(fault)} in FAULT`);
      if (c.members.length === 1) parts.push('only one member');
      return parts.length ? `${parts.join('; ')}.` : 'Degraded.';
    }
    default: return '';
  }
}

function matches(c, q) {
  if (!q) return true;
  const hay = [String(c.vrid), c.site || '', ...c.networks, ...c.vips,
    ...c.members.flatMap((m) => [hostOf(m), m.instance.name, ...(m.instance.vips || [])])]
    .join(' ').toLowerCase();
  return q.toLowerCase().split(/\s+/).filter(Boolean).every((w) => hay.includes(w));
}

// One member: host, instance, state, priorities; below, why it is in FAULT
// and, for a backup hearing another master (`heard`), a mark.
export function MemberRow({ m, heard, master }) {
  const i = m.instance;
  const note = (i.state === 'FAULT' && i.faultReason) || heard;
  const dim = !m.online || !m.reporting;
  const why = !m.online ? 'agent offline, last state' : !m.reporting ? 'keepalived not reporting, last state' : '';
  return html`<li class=${`member ${dim ? 'dim' : ''}`}>
    <${Dot} online=${m.online} />
    <a href=${`/clients/${encodeURIComponent(m.clientId)}`}>${hostOf(m)}</a>
    <span class="muted inst">${i.name}</span>
    <span class=${`state state-${i.state}`} title=${why || undefined}>${why && html`<span class="sr">${why} </span>`}${i.state}</span>
    <span class="prio" title="priority / effective priority">${i.priority ?? '–'}${i.effectivePriority != null && i.effectivePriority !== i.priority ? ` / ${i.effectivePriority}` : ''}</span>
    ${note && html`<span class="member-note"><${FaultCause} instance=${i} />${heard && html`<${DisagreeMark} heard=${heard} master=${master} />`}</span>`}
  </li>`;
}

// The members by priority, each with its mark when it hears another master.
export function Members({ cluster, wide }) {
  const heard = disagreeingBackups(cluster);
  const master = cluster.members.find((m) => m.online && m.reporting && m.instance.state === 'MASTER');
  return html`<ul class=${`members${wide ? ' wide' : ''}`}>${byPriority(cluster.members).map((m) => html`<${MemberRow}
    m=${m} heard=${heard.get(m)} master=${master && hostOf(master)} key=${m.clientId + m.instance.name} />`)}</ul>`;
}

function ClusterRow(c) {
  return html`<article class=${`cluster health-${c.health}`} key=${c.key}>
    <header class="row">
      <${Health} health=${c.health} />
      <a class="cluster-name" href=${clusterHref(c)}>VRID ${c.vrid}</a>
      <span class="muted">${c.site ? `${c.site} · ` : ''}${c.networks.join(', ')}</span>
      ${silencesFor({ clusterKey: c.key, clientIds: c.members.map((m) => m.clientId) }).length > 0
        && html`<span class="badge silenced">silenced</span>`}
      ${c.availability && html`<span class="muted availability" title="Share of the last 30 days in health ok">${percent(okShare(c.availability))} ok</span>`}
    </header>
    <p class="explain">${explain(c)}</p>
    <${Members} cluster=${c} />
  </article>`;
}

export function Clusters() {
  useEffect(() => { document.title = 'Clusters · vrrp-monitor'; }, []);
  const p = route.value.params;
  const q = p.get('q') || '';
  const health = p.get('health') || '';
  const state = p.get('state') || '';
  const attention = p.get('attention') === '1';
  const byAvailability = p.get('sort') === 'availability';
  useEffect(() => { loadSilences(); }, []);
  const figures = useAvailabilityList(byAvailability);
  let list = S.clusters.value.filter((c) => (!health || c.health === health)
    && (!attention || c.health !== 'ok')
    && (!state || c.members.some((m) => live(m) && m.instance.state === state))
    && matches(c, q));
  if (byAvailability && figures) {
    // Lowest availability (share of time ok over 30 days) first; no history last.
    const share = (c) => okShare(figures.get(c.key)) ?? 2;
    list = list.map((c) => ({ ...c, availability: figures.get(c.key) }))
      .sort((a, b) => share(a) - share(b) || a.key.localeCompare(b.key));
  }
  return html`<section>
    <h1>Clusters</h1>
    <div class="filters row">
      <input type="search" data-search placeholder="Search VRID, site, network, address, host, instance ( / )"
        aria-label="Search clusters" value=${q} onInput=${(e) => setParams({ q: e.currentTarget.value })} />
      <select aria-label="Health" value=${health} onChange=${(e) => setParams({ health: e.currentTarget.value })}>
        <option value="">Any health</option>
        ${['split-brain', 'no-master', 'vip-mismatch', 'degraded', 'unknown', 'ok'].map((h) => html`<option value=${h}>${h}</option>`)}
      </select>
      <select aria-label="Order" id="cluster-order" value=${byAvailability ? 'availability' : ''}
        onChange=${(e) => setParams({ sort: e.currentTarget.value })}>
        <option value="">Attention first</option>
        <option value="availability">Lowest availability first (30 d)</option>
      </select>
      ${(state || attention) && html`<button type="button" onClick=${() => setParams({ state: '', attention: '' })}>
        ${state ? `With a live ${state}` : 'Needing attention'} ×</button>`}
      <span class="muted" id="cluster-count">${list.length} of ${S.clusters.value.length}</span>
    </div>
    ${!S.clustersLoaded.value ? html`<p class="muted">Loading…</p>`
      : html`<div class="cluster-list"><${Paged} items=${list} size=${50} render=${ClusterRow}
          empty=${S.clusters.value.length ? 'No cluster matches.' : 'No clusters yet: no agent has reported a VRRP instance.'} /></div>`}
  </section>`;
}
