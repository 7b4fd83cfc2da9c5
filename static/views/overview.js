// Overview: the fleet in numbers (each number opens the list it counts, among
// them the clusters a failover would not work in now), the clusters needing
// attention, and the open incidents with how long they last.
import { computed } from '@preact/signals';
import { html, Health, Time, duration, HEALTH_TEXT, useTitle } from '../ui.js';
import * as S from '../state.js';
import { clusterHref, explain, hostOf } from '../members.js';
import { verdictOf } from '../readiness.js';
import { isDrained } from '../drains.js';

const stats = computed(() => {
  const cs = S.clusters.value;
  const byHealth = {};
  let masters = 0, faults = 0, drainedFaults = 0, notReady = 0, atRisk = 0;
  for (const c of cs) {
    byHealth[c.health] = (byHealth[c.health] || 0) + 1;
    if (verdictOf(c) === 'not_ready') notReady++;
    if (verdictOf(c) === 'at_risk') atRisk++;
    for (const m of c.members) {
      if (!m.online || !m.reporting) continue;
      if (m.instance.state === 'MASTER') masters++;
      // A drained host in FAULT (a drained sync group) is planned, not a fault.
      if (m.instance.state === 'FAULT') { if (isDrained(m.drain)) drainedFaults++; else faults++; }
    }
  }
  const clients = S.clients.value;
  // Online hosts whose keepalived gives no usable reading (none yet, stopped, unreadable).
  const unusable = clients.filter((c) => {
    if (c.status !== 'online') return false;
    const r = S.readingOf(c.id);
    return !r || !r.running || !!r.error;
  }).length;
  return {
    unusable,
    online: clients.filter((c) => c.status === 'online').length,
    total: clients.length,
    byHealth, masters, faults, drainedFaults, notReady, atRisk, clusters: cs.length,
  };
});

function Card({ href, label, value, tone, note, id }) {
  return html`<a class=${`stat ${tone || ''}`} href=${href} id=${id}>
    <span class="stat-value">${value}</span><span class="stat-label">${label}</span>${note && html`<span class="stat-note">${note}</span>`}</a>`;
}

export function Overview() {
  useTitle('Overview');
  const s = stats.value;
  const attention = S.clusters.value.filter((c) => c.health !== 'ok');
  const open = S.openIncidents.value;
  const order = ['split-brain', 'no-master', 'vip-mismatch', 'degraded', 'unknown'];
  return html`<section class="overview">
    <h1>Overview</h1>
    <div class="stats">
      <${Card} href="/clients?status=online" label="hosts online" value=${`${s.online} / ${s.total}`}
        tone=${s.online < s.total ? 'warn' : ''} />
      <${Card} href="/clusters?health=ok" label="clusters OK" value=${`${s.byHealth.ok || 0} / ${s.clusters}`}
        tone=${(s.byHealth.ok || 0) < s.clusters ? 'warn' : ''} />
      ${s.unusable > 0 && html`<${Card} href="/clients?keepalived=unusable" label="hosts without a usable keepalived reading"
        value=${s.unusable} tone="warn" id="unusable-hosts" />`}
      <${Card} href="/clusters?readiness=not_ready" label="clusters not ready for failover" value=${s.notReady}
        tone=${s.notReady ? 'bad' : s.atRisk ? 'warn' : ''} id="not-ready-clusters"
        note=${s.atRisk ? `${s.atRisk} more at risk` : 'none at risk'} />
      ${order.filter((h) => s.byHealth[h]).map((h) => html`<${Card} href=${`/clusters?health=${h}`}
        label=${HEALTH_TEXT[h].toLowerCase()} value=${s.byHealth[h]}
        tone=${h === 'split-brain' || h === 'no-master' ? 'bad' : 'warn'} />`)}
      <${Card} href="/clusters?state=MASTER" label="live MASTER instances" value=${s.masters}
        note=${s.masters > s.clusters ? 'more than one per cluster: a split brain' : 'a healthy cluster has exactly one'} />
      <${Card} href="/clusters?state=FAULT" label="instances in FAULT" value=${s.faults} tone=${s.faults ? 'bad' : ''}
        note=${s.drainedFaults ? `and ${s.drainedFaults} of drained hosts, not counted` : undefined} />
      <${Card} href="/activity?unseen=1&level=warning,error" label="unseen warnings and errors"
        value=${S.unseenAlerts.value} tone=${S.unseenAlerts.value ? 'warn' : ''} />
    </div>
    ${!S.clustersLoaded.value && html`<p class="muted">Loading clusters…</p>`}
    ${attention.length > 0 && html`<h2>Needs attention</h2>
      <div class="attention">
        ${attention.slice(0, 24).map((c) => html`<a class=${`card cluster-card health-${c.health}`} href=${clusterHref(c)} key=${c.key}>
          <div class="row"><${Health} health=${c.health} /><strong>VRID ${c.vrid}</strong>
            <span class="muted">${c.site || ''} ${c.networks.join(', ')}</span></div>
          <p>${explain(c)}</p>
          <p class="muted hosts">${c.members.map((m) => (isDrained(m.drain) ? `${hostOf(m)} (drained)` : hostOf(m))).join(', ')}</p>
        </a>`)}
      </div>
      ${attention.length > 24 && html`<p><a href="/clusters?attention=1">All ${attention.length} clusters needing attention</a></p>`}`}
    ${S.clustersLoaded.value && attention.length === 0 && s.clusters > 0
      && html`<p class="all-ok">All ${s.clusters} clusters are healthy.</p>`}
    <h2>Open incidents</h2>
    ${open.length === 0 ? html`<p class="empty">No open incidents.</p>` : html`<ul class="incidents">
      ${open.map((r) => {
        const inc = r.data?.incident || {};
        const since = Date.parse(inc.openedAt || r.occurredAt);
        return html`<li key=${r.correlationId}>
          <${Health} health=${inc.health || r.data?.cluster?.health} />
          <span class="incident-text">${r.message}</span>
          <span class="muted">open for ${duration((S.now.value - since) / 1000)}, since <${Time} at=${inc.openedAt || r.occurredAt} /></span>
          <a href=${`/activity?level=trace&incident=${encodeURIComponent(r.correlationId)}`}>events</a>
        </li>`;
      })}
    </ul>`}
  </section>`;
}
