// Silences (maintenance windows, issue 20): the "Silence for…" action on a
// cluster or a client (1 h, 4 h, until tomorrow), the banner of a silence that
// covers what is shown, and the Silences view (list, end early, create by kind).
// Silenced events are still listed; they carry `data.silenced` and raise no toast.
import { useEffect, useState } from 'preact/hooks';
import { html, Time } from '../ui.js';
import { get, post, del } from '../api.js';
import { silences } from '../state.js';

export function loadSilences() {
  return get('/api/v1/silences').then((list) => { silences.value = list; }).catch(() => {});
}

// "Until tomorrow": tomorrow at 08:00 local time, when people are back.
export function presetEnd(preset, now = new Date()) {
  if (preset === '1h') return new Date(now.getTime() + 3600 * 1000);
  if (preset === '4h') return new Date(now.getTime() + 4 * 3600 * 1000);
  const t = new Date(now);
  t.setDate(t.getDate() + 1);
  t.setHours(8, 0, 0, 0);
  return t;
}

const PRESETS = [['1h', '1 hour'], ['4h', '4 hours'], ['tomorrow', 'until tomorrow 08:00']];

// Active silences whose matcher covers a cluster (by key or a member host) or a client.
export function silencesFor({ clusterKey, clientIds = [] }) {
  const now = Date.now();
  return (silences.value || []).filter((s) => s.status === 'active' && Date.parse(s.endsAt) > now
    && (!s.matcher.kind || s.matcher.kind === '*' || s.matcher.kind.startsWith('vrrp'))
    && ((s.matcher.clusterKey && s.matcher.clusterKey === clusterKey && !s.matcher.clientId)
      || (s.matcher.clientId && clientIds.includes(s.matcher.clientId) && (!s.matcher.clusterKey || s.matcher.clusterKey === clusterKey))));
}

export function SilencedBanner({ clusterKey, clientIds }) {
  useEffect(() => { loadSilences(); }, []);
  const list = silencesFor({ clusterKey, clientIds });
  if (!list.length) return null;
  return html`<p class="silenced-banner" id="silenced-banner" role="status">
    Silenced until <${Time} at=${list[0].endsAt} />: “${list[0].comment}” (${list[0].createdBy}).
    Events are recorded but not sent to webhooks.</p>`;
}

// The "Silence for…" action; `matcher` is what it silences.
export function SilenceAction({ matcher, what }) {
  const [open, setOpen] = useState(false);
  const [comment, setComment] = useState('');
  const [status, setStatus] = useState('');
  const create = (preset) => {
    if (!comment.trim()) { setStatus('A comment is required: say why.'); return; }
    post('/api/v1/silences', { matcher, endsAt: presetEnd(preset).toISOString(), comment: comment.trim() })
      .then(() => { setStatus(''); setOpen(false); setComment(''); loadSilences(); })
      .catch((e) => setStatus(e.message));
  };
  if (!open) return html`<button type="button" id="silence-open" onClick=${() => setOpen(true)}>Silence for…</button>`;
  return html`<div class="silence-form" id="silence-form" role="group" aria-label=${`Silence ${what}`}>
    <input type="text" id="silence-comment" placeholder="Why (e.g. kernel update)" aria-label="Comment" maxlength="500"
      value=${comment} onInput=${(e) => setComment(e.currentTarget.value)} />
    ${PRESETS.map(([p, label]) => html`<button type="button" data-preset=${p} onClick=${() => create(p)}>${label}</button>`)}
    <button type="button" class="ghost" onClick=${() => setOpen(false)}>Cancel</button>
    ${status && html`<span class="error" id="silence-status">${status}</span>`}
  </div>`;
}

function describe(m) {
  return [m.clusterKey && `cluster ${m.clusterKey}`, m.clientId && `host ${m.clientId}`, m.kind && `events ${m.kind}`]
    .filter(Boolean).join(', ');
}

// The Silences view: every silence, newest first; end an active one early; a
// silence by kind pattern.
export function Silences() {
  useEffect(() => { document.title = 'Silences · vrrp-monitor'; loadSilences(); }, []);
  const [kind, setKind] = useState('');
  const list = silences.value;
  return html`<section class="silences">
    <h1>Silences</h1>
    <p class="muted">While a silence is active, matching events are recorded and shown (marked silenced) but not sent to webhooks and raise no notification.
      An incident still open when its silence ends is sent then.</p>
    <div class="row"><input type="text" aria-label="Kind pattern" placeholder="Kind pattern, e.g. keepalived.*" value=${kind}
      onInput=${(e) => setKind(e.currentTarget.value)} />
      ${kind.trim() && html`<${SilenceAction} matcher=${{ kind: kind.trim() }} what=${kind} />`}</div>
    ${!list ? html`<p class="muted">Loading…</p>` : !list.length ? html`<p class="empty">No silences.</p>`
      : html`<ul class="silence-list">${list.map((s) => html`<li key=${s.id} class=${`silence ${s.status}`}>
        <strong>${describe(s.matcher)}</strong> · ${s.status} · <${Time} at=${s.startsAt} /> – <${Time} at=${s.endsAt} />
        · “${s.comment}” (${s.createdBy})
        ${s.status !== 'expired' && html` <button type="button" class="ghost" onClick=${() => del(`/api/v1/silences/${encodeURIComponent(s.id)}`).then(loadSilences)}>End now</button>`}
      </li>`)}</ul>`}
  </section>`;
}
