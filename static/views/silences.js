// The Silences view (maintenance windows): list, end early, create by
// kind; the action and banner shown elsewhere are in silence.js.
// Silenced events are still listed; they carry `data.silenced` and raise no toast.
// A silence a provisioning file defines says so and cannot be ended here.
import { useEffect, useState } from 'preact/hooks';
import { html, Time, useTitle } from '../ui.js';
import { del } from '../api.js';
import * as S from '../state.js';
import { loadSilences, SilenceAction } from '../silence.js';
import { can, ProvisionedBadge } from '../roles.js';

function describe(m) {
  return [m.clusterKey && `cluster ${m.clusterKey}`, m.clientId && `host ${m.clientId}`, m.kind && `events ${m.kind}`]
    .filter(Boolean).join(', ');
}

// The Silences view: every silence, newest first; end an active one early; a
// silence by kind pattern.
export function Silences() {
  useTitle('Silences');
  useEffect(() => { loadSilences(); }, []);
  const [kind, setKind] = useState('');
  const list = S.silences.value;
  return html`<section class="silences">
    <h1>Silences</h1>
    <p class="muted">While a silence is active, matching events are recorded and shown (marked silenced) but not sent to webhooks and raise no notification.
      An incident still open when its silence ends is sent then.</p>
    ${can('silence') && html`<div class="row" id="silence-by-kind"><input type="text" aria-label="Kind pattern" placeholder="Kind pattern, e.g. keepalived.*" value=${kind}
      onInput=${(e) => setKind(e.currentTarget.value)} />
      ${kind.trim() && html`<${SilenceAction} matcher=${{ kind: kind.trim() }} what=${kind} />`}</div>`}
    ${!list ? html`<p class="muted">Loading…</p>` : !list.length ? html`<p class="empty">No silences.</p>`
      : html`<ul class="silence-list">${list.map((s) => html`<li key=${s.id} class=${`silence ${s.status}`}>
        <strong>${s.name ? `${s.name}: ` : ''}${describe(s.matcher)}</strong> · ${s.status} · <${Time} at=${s.startsAt} /> – <${Time} at=${s.endsAt} />
        · “${s.comment}” (${s.createdBy})${s.provisionedFrom && html` <${ProvisionedBadge} file=${s.provisionedFrom} />`}
        ${s.status !== 'expired' && !s.provisionedFrom && can('silence') && html` <button type="button" class="ghost end-silence" onClick=${() => del(`/api/v1/silences/${encodeURIComponent(s.id)}`).then(loadSilences)}>End now</button>`}
      </li>`)}</ul>`}
  </section>`;
}
