// Cluster detail: members, addresses a member lacks, whether a failover would
// work now (readiness, every check; a failover drill to prove it, drills.js),
// the one timeline of who was master when (24 h / 7 d / 30 d, from the cluster
// history, with the cluster's stored events before it began) with the
// availability figures and the cluster's past drills, keepalived counters side
// by side, and the cluster's own activity.
import { useEffect, useState } from 'preact/hooks';
import { html, Health, useTitle } from '../ui.js';
import * as S from '../state.js';
import { get, query } from '../api.js';
import { byPriority, explain, hostOf, Members } from '../members.js';
import { disagreeingBackups } from '../tracking.js';
import { EventRow } from '../events.js';
import { HistoryPanel } from '../history.js';
import { SilenceAction, SilencedBanner } from '../silence.js';
import { Counters } from '../counters.js';
import { ReadinessChecks } from '../readiness.js';
import { DrillAction, PastDrills } from '../drills.js';

// The cluster's stored events ({list, error}); a failed fetch is said, not
// shown as "no events" (the last list stays, marked as not refreshed).
function useClusterEvents(key) {
  const [state, setState] = useState({ list: null, error: null });
  const version = S.activityVersion.value;
  useEffect(() => {
    let gone = false;
    const t = setTimeout(() => {
      get(`/api/v1/activity${query({ cluster: key, limit: 500 })}`)
        .then((list) => { if (!gone) setState({ list, error: null }); })
        .catch((e) => { if (!gone) setState((s) => ({ list: s.list, error: e.message || String(e) })); });
    }, state.list ? 300 : 0);
    return () => { gone = true; clearTimeout(t); };
  }, [key, version]);
  return state;
}

// When readiness was last judged: the server judges every reading as it comes,
// but tells the dashboards of a cluster only when what they show changed (not
// of a reading that changed nothing), so a newer reading of a live member is
// when the verdict shown was checked.
function checkedAt(cluster) {
  return (cluster.members || []).filter((m) => m.online && m.reporting)
    .map((m) => S.readingOf(m.clientId)?.receivedAt || '')
    .reduce((a, b) => (b > a ? b : a), cluster.readiness?.checkedAt || '');
}

export function ClusterDetail({ id }) {
  useTitle(`Cluster ${id}`);
  const cluster = S.clusters.value.find((c) => c.key === id);
  const { list: events, error } = useClusterEvents(id);
  if (!cluster) {
    return html`<section><h1>Cluster</h1>
      <p class="empty">${S.clustersLoaded.value ? 'This cluster does not exist (any more).' : 'Loading…'}</p>
      <p><a href="/clusters">All clusters</a></p></section>`;
  }
  const disagree = disagreeingBackups(cluster);
  const all = new Set(cluster.vips);
  const lacking = cluster.members.map((m) => ({ m, missing: [...all].filter((v) => !(m.instance.vips || []).includes(v)) }))
    .filter((x) => x.missing.length);
  return html`<section class="cluster-detail">
    <p><a href="/clusters">← Clusters</a></p>
    <h1><${Health} health=${cluster.health} /> VRID ${cluster.vrid}
      <span class="muted">${cluster.site ? `${cluster.site} · ` : ''}${cluster.networks.join(', ')}</span></h1>
    <p class="explain">${explain(cluster)}</p>
    <${SilencedBanner} clusterKey=${cluster.key} clientIds=${cluster.members.map((m) => m.clientId)} />
    <${SilenceAction} matcher=${{ clusterKey: cluster.key }} what=${`VRID ${cluster.vrid}`} />
    <p class="muted">Addresses: ${cluster.vips.join(', ') || 'none'}</p>
    <h2>Members</h2>
    ${disagree.size > 0 && html`<p class="callout warn" id="master-disagreement">${
      `The backups disagree about the master: ${[...disagree].map(([m, heard]) => `${hostOf(m)} hears ${heard}`).join('; ')}.`}</p>`}
    <${Members} cluster=${cluster} wide=${true} />
    ${lacking.length > 0 && html`<h2>Addresses a member lacks</h2><ul class="vip-mismatch">
      ${lacking.map(({ m, missing }) => html`<li><strong>${hostOf(m)}</strong> lacks ${missing.join(', ')}</li>`)}
    </ul>`}
    <h2 id="readiness-title">Would a failover work now?</h2>
    <${ReadinessChecks} readiness=${cluster.readiness && { ...cluster.readiness, checkedAt: checkedAt(cluster) || null }} />
    <${DrillAction} cluster=${cluster} />
    <h2>Master and availability</h2>
    ${error && html`<p class="form-error" role="alert">The cluster's events could not be ${events ? 'refreshed' : 'loaded'}: ${error}</p>`}
    <${HistoryPanel} clusterKey=${cluster.key} hosts=${byPriority(cluster.members).map(hostOf)} events=${events} />
    <h3 id="drills-title">Failover drills</h3>
    <${PastDrills} clusterKey=${cluster.key} />
    <h2>Counters</h2>
    <${Counters} members=${byPriority(cluster.members).map((m) => ({
      name: hostOf(m), state: m.instance.state, live: m.online && m.reporting,
      stats: S.readingOf(m.clientId)?.instances?.find((i) => i.name === m.instance.name)?.stats || null,
    }))} />
    <h2>Activity of this cluster</h2>
    ${events && (events.length ? html`<ul class="events">${events.slice(0, 50).map((r) => html`<${EventRow} r=${r} key=${r.id} />`)}</ul>`
      : html`<p class="empty">No cluster events recorded.</p>`)}
  </section>`;
}
