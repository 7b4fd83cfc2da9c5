// Silences shown where they apply: the "Silence for…" action on a
// cluster or a client (1 h, 4 h, until tomorrow) and the banner of a silence that
// covers what is shown. The list lives in state.js (`silences`).
import { useEffect, useState } from 'preact/hooks';
import { html, Time } from './ui.js';
import * as S from './state.js';
import { get, post } from './api.js';
import { useDirtyGuard, useEscape } from './form.js';
import { can } from './roles.js';

export function loadSilences() {
  return get('/api/v1/silences').then((list) => { S.silences.value = list; }).catch(() => {});
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
  return (S.silences.value || []).filter((s) => s.status === 'active' && Date.parse(s.endsAt) > now
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

// The "Silence for…" action; `matcher` is what it silences. Operators and
// administrators only: a viewer sees the banner, not the action.
export function SilenceAction({ matcher, what }) {
  const [open, setOpen] = useState(false);
  const [comment, setComment] = useState('');
  const [status, setStatus] = useState('');
  // A typed reason not yet used asks before leaving, as every editor; Esc cancels.
  useDirtyGuard(open && !!comment.trim());
  useEscape(() => { if (open) setOpen(false); });
  const create = (preset) => {
    if (!comment.trim()) { setStatus('A comment is required: say why.'); return; }
    post('/api/v1/silences', { matcher, endsAt: presetEnd(preset).toISOString(), comment: comment.trim() })
      .then(() => { setStatus(''); setOpen(false); setComment(''); loadSilences(); })
      .catch((e) => setStatus(e.message));
  };
  if (!can('silence')) return null;
  if (!open) return html`<button type="button" id="silence-open" onClick=${() => setOpen(true)}>Silence for…</button>`;
  return html`<div class="silence-form" id="silence-form" role="group" aria-label=${`Silence ${what}`}>
    <input type="text" id="silence-comment" placeholder="Why (e.g. kernel update)" aria-label="Comment" maxlength="500"
      value=${comment} onInput=${(e) => setComment(e.currentTarget.value)} />
    ${PRESETS.map(([p, label]) => html`<button type="button" data-preset=${p} onClick=${() => create(p)}>${label}</button>`)}
    <button type="button" class="ghost" onClick=${() => setOpen(false)}>Cancel</button>
    ${status && html`<span class="error" id="silence-status">${status}</span>`}
  </div>`;
}
