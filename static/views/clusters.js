// Clusters: attention first (the API's order), searchable; each with its health,
// whether a failover would work now, a one-line explanation and its members by
// effective priority. Filters (health, readiness, search) live in the URL.
import { useEffect } from 'preact/hooks';
import { html, Health, Paged, useTitle } from '../ui.js';
import * as S from '../state.js';
import { route, setParams } from '../router.js';
import { okShare, percent, useAvailabilityList } from '../history.js';
import { loadSilences, silencesFor } from '../silence.js';
import { clusterHref, explain, hostOf, live, Members } from '../members.js';
import { arrow, nextSort, sortRows } from '../table.js';
import { ReadinessBadge, VERDICT_TEXT, VERDICTS, verdictOf } from '../readiness.js';

// The list's columns to sort by (the shared table's sorting: a click sorts
// ascending, again descending). Attention first is the API's own order; ties
// keep it. In the URL: `sort=vrid`, `sort=-vrid`.
const SORTS = [
  { key: 'attention', label: 'Attention', sort: (c) => c.order },
  { key: 'vrid', label: 'VRID', sort: (c) => c.vrid },
  { key: 'site', label: 'Site', sort: (c) => c.site || '' },
  { key: 'network', label: 'Network', sort: (c) => c.networks[0] || '' },
  // Lowest availability (share of time ok over 30 days) first; no history last.
  { key: 'availability', label: 'Availability (30 d)', sort: (c) => okShare(c.availability) ?? 2 },
];

function sortOf(param) {
  const key = (param || '').replace(/^-/, '');
  return SORTS.some((c) => c.key === key) ? { key, dir: param.startsWith('-') ? -1 : 1 } : { key: 'attention', dir: 1 };
}

function SortHead({ sort }) {
  return html`<div class="sort-head row" role="group" aria-label="Sort clusters by" id="cluster-sort">
    <span class="muted">Sort by</span>
    ${SORTS.map((c) => {
      const on = sort.key === c.key;
      return html`<button type="button" class=${`sort small${on ? ' active' : ''}`} data-col=${c.key} aria-pressed=${on}
        data-dir=${on ? (sort.dir > 0 ? 'ascending' : 'descending') : undefined}
        onClick=${() => { const n = nextSort(sort, c.key); setParams({ sort: n.key === 'attention' && n.dir > 0 ? '' : `${n.dir < 0 ? '-' : ''}${n.key}` }); }}>
        ${c.label}<span aria-hidden="true" class="arrow">${arrow(on ? sort : null, c.key)}</span></button>`;
    })}
  </div>`;
}

function matches(c, q) {
  if (!q) return true;
  const hay = [String(c.vrid), c.site || '', ...c.networks, ...c.vips,
    ...c.members.flatMap((m) => [hostOf(m), m.instance.name, ...(m.instance.vips || [])])]
    .join(' ').toLowerCase();
  return q.toLowerCase().split(/\s+/).filter(Boolean).every((w) => hay.includes(w));
}

function ClusterRow(c) {
  return html`<article class=${`cluster health-${c.health}`} key=${c.key}>
    <header class="row">
      <${Health} health=${c.health} />
      <${ReadinessBadge} readiness=${c.readiness} />
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
  useTitle('Clusters');
  const p = route.value.params;
  const q = p.get('q') || '';
  const health = p.get('health') || '';
  const state = p.get('state') || '';
  const readiness = p.get('readiness') || '';
  const attention = p.get('attention') === '1';
  const sort = sortOf(p.get('sort') || '');
  const byAvailability = sort.key === 'availability';
  useEffect(() => { loadSilences(); }, []);
  const figures = useAvailabilityList(byAvailability);
  let list = S.clusters.value.map((c, order) => ({ ...c, order })).filter((c) => (!health || c.health === health)
    && (!attention || c.health !== 'ok')
    && (!readiness || verdictOf(c) === readiness)
    && (!state || c.members.some((m) => live(m) && m.instance.state === state))
    && matches(c, q));
  if (byAvailability && figures) list = list.map((c) => ({ ...c, availability: figures.get(c.key) }));
  list = sortRows(list, SORTS, sort);
  return html`<section>
    <h1>Clusters</h1>
    <div class="filters row">
      <input type="search" data-search placeholder="Search VRID, site, network, address, host, instance ( / )"
        aria-label="Search clusters" value=${q} onInput=${(e) => setParams({ q: e.currentTarget.value })} />
      <select aria-label="Health" value=${health} onChange=${(e) => setParams({ health: e.currentTarget.value })}>
        <option value="">Any health</option>
        ${['split-brain', 'no-master', 'vip-mismatch', 'degraded', 'unknown', 'ok'].map((h) => html`<option value=${h}>${h}</option>`)}
      </select>
      <select aria-label="Failover readiness" id="readiness-filter" value=${readiness} onChange=${(e) => setParams({ readiness: e.currentTarget.value })}>
        <option value="">Any readiness</option>
        ${VERDICTS.map((v) => html`<option value=${v}>${VERDICT_TEXT[v]}</option>`)}
      </select>
      ${(state || attention) && html`<button type="button" onClick=${() => setParams({ state: '', attention: '' })}>
        ${state ? `With a live ${state}` : 'Needing attention'} ×</button>`}
      <span class="muted" id="cluster-count">${list.length} of ${S.clusters.value.length}</span>
    </div>
    <${SortHead} sort=${sort} />
    ${!S.clustersLoaded.value ? html`<p class="muted">Loading…</p>`
      : html`<div class="cluster-list"><${Paged} items=${list} size=${50} render=${ClusterRow}
          empty=${S.clusters.value.length ? 'No cluster matches.' : 'No clusters yet: no agent has reported a VRRP instance.'} /></div>`}
  </section>`;
}
