// Drains (a host stepping down on purpose, through keepalived's own
// `track_file`; doc/keepalived-host.md): the "drained" badge of a member
// wherever members are listed, so a drained host reads as planned rather than
// as an unexplained FAULT or failover; and on a client's page the drain's
// notice, the Drain / Undrain actions (operators and administrators), or the
// line saying drains are off on that host.
import { useState } from 'preact/hooks';
import { html, Time, Confirm, exact } from './ui.js';
import * as S from './state.js';
import { post, del } from './api.js';
import { can } from './roles.js';
import { ReadinessBadge } from './readiness.js';

export const isDrained = (drain) => !!drain?.drained;

// "Drained: kernel update, by alice, since 21/11/2026, 09:00:00" for a title:
// plain text, every part the agent left out left out here too.
export function drainTitle(drain) {
  const parts = [`Drained: ${drain.reason || 'no reason given'}`];
  if (drain.by) parts.push(`by ${drain.by}`);
  if (drain.since) parts.push(`since ${exact(drain.since)}`);
  return parts.join(', ');
}

// The member's badge; its title says why, who and since when.
export function DrainedBadge({ drain }) {
  if (!isDrained(drain)) return null;
  return html`<span class="badge drained" title=${drainTitle(drain)}>drained</span>`;
}

// The same in a line (the cluster page's wide member rows, the client page):
// "Drained: <reason>, by <by>, since <time>".
export function DrainedLine({ drain, className = 'drained-line' }) {
  if (!isDrained(drain)) return null;
  return html`<span class=${className}>Drained: ${drain.reason || 'no reason given'}${
    drain.by ? `, by ${drain.by}` : ''}${drain.since ? html`, since <${Time} at=${drain.since} />` : ''}</span>`;
}

// The clusters this host is the live MASTER of: what a drain moves.
function mastered(clientId) {
  return S.clusters.value.filter((c) => c.members.some((m) => m.clientId === clientId
    && m.online && m.reporting && m.instance.state === 'MASTER'));
}

// What the drain dialog shows of each cluster it moves: the readiness verdict
// and the server's findings, so nobody drains into a backup that cannot take over.
function Preflight({ clientId }) {
  const list = mastered(clientId);
  if (!list.length) {
    return html`<p class="muted" id="drain-preflight">This host is MASTER of no cluster now: no address moves.</p>`;
  }
  return html`<div id="drain-preflight">
    <p>It is MASTER of ${list.length === 1 ? 'this cluster' : 'these clusters'}; would a failover work now?</p>
    <ul class="preflight">${list.map((c) => {
      const findings = c.readiness?.findings || [];
      return html`<li key=${c.key} data-cluster=${c.key}>
        <${ReadinessBadge} readiness=${c.readiness} />
        <a href=${`/clusters/${encodeURIComponent(c.key)}`}> VRID ${c.vrid}</a>
        <span class="muted">${c.site ? ` ${c.site} ·` : ''} ${c.networks.join(', ')}</span>
        ${findings.length ? html`<ul class="findings">${findings.map((f, i) => html`<li key=${i}>${f.message}</li>`)}</ul>`
          : html`<span class="muted"> No findings.</span>`}
      </li>`;
    })}</ul>
  </div>`;
}

// The client page's drain: the notice while drained, the actions for operators
// and administrators, and for a host whose agent takes no actions the line
// saying how to turn them on. Nothing before the first reading (unknown yet).
export function DrainPanel({ client, reading }) {
  const [asking, setAsking] = useState('');
  const [reason, setReason] = useState('');
  const [status, setStatus] = useState('');
  if (!reading) return null;
  const drain = reading.drain;
  const operator = can('drain');
  if (!drain) {
    return operator ? html`<p class="muted" id="drains-off">Drains are off on this host (set actions.drainFile in its agent's config; see the host guide).</p>` : null;
  }
  const id = client.id;
  const offline = client.status !== 'online';
  const path = `/api/v1/clients/${encodeURIComponent(id)}/drain`;
  const open = (what) => { setReason(''); setStatus(''); setAsking(what); };
  // The API's own text on failure (the agent's refusal, offline, no answer)
  // shows inside the dialog, which stays open.
  async function drainIt() {
    const why = reason.trim();
    if (!why) throw new Error('A reason is required: say why the host is drained.');
    const r = await post(path, { reason: why });
    setAsking('');
    setStatus(r?.warning ? `Drained, but: ${r.warning}` : 'Drained; a backup takes over.');
  }
  async function undrainIt() {
    const r = await del(path);
    setAsking('');
    setStatus(r?.warning ? `Undrained, but: ${r.warning}` : 'Undrained.');
  }
  return html`<div class="drain-panel" id="drain-panel">
    ${drain.drained && html`<p class="callout warn drain-notice" id="drain-notice" role="status">
      <strong>Drained</strong>: ${drain.reason || 'no reason given'}${drain.by ? `, by ${drain.by}` : ''}${
      drain.since ? html`, since <${Time} at=${drain.since} />` : ''}. keepalived runs this host's instances at a lowered priority; a backup holds the addresses.</p>`}
    ${operator && html`<div class="row">
      ${drain.drained
        ? html`<button type="button" id="undrain-open" disabled=${offline} onClick=${() => open('undrain')}>Undrain</button>`
        : html`<button type="button" id="drain-open" disabled=${offline} onClick=${() => open('drain')}>Drain</button>`}
      ${offline && html`<span class="muted">The agent is offline: it cannot be asked.</span>`}
      ${status && html`<span role="status" id="drain-status">${status}</span>`}
    </div>`}
    ${operator && html`<${Confirm} id="drain-dialog" open=${asking === 'drain'} title=${`Drain ${client.displayName || client.hostname || id.slice(0, 8)}?`}
      action="Drain" onConfirm=${drainIt} onClose=${() => setAsking('')}
      text="The agent writes 1 into its drain file; keepalived lowers this host's priority by the file's weight, and a backup takes over its addresses. The host stays drained (across restarts too) until undrained.">
      <${Preflight} clientId=${id} />
      <div class="field">
        <label for="drain-reason">Reason (required)</label>
        <input id="drain-reason" type="text" maxlength="200" placeholder="Why (e.g. kernel update)" value=${reason}
          onInput=${(e) => setReason(e.currentTarget.value)} />
      </div>
    <//>`}
    ${operator && html`<${Confirm} id="undrain-dialog" open=${asking === 'undrain'} title="Undrain this host?"
      action="Undrain" onConfirm=${undrainIt} onClose=${() => setAsking('')}
      text="The agent writes 0 into its drain file; keepalived restores this host's priority. With preempt (keepalived's default) it takes MASTER back at once." />`}
  </div>`;
}
