// Clusters: attention first (the API's order), searchable; each with its health,
// a one-line explanation and its members by effective priority.
import { useEffect } from 'preact/hooks';
import { html, Health, Paged, useTitle } from '../ui.js';
import * as S from '../state.js';
import { route, setParams } from '../router.js';
import { okShare, percent, useAvailabilityList } from '../history.js';
import { loadSilences, silencesFor } from '../silence.js';
import { clusterHref, explain, hostOf, live, Members } from '../members.js';

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
