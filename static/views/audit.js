// The audit log: who did what, when, from where and how (session, single
// sign-on, API token, the command line), newest first, as the server records
// it. Filters (actor and action as exact names, text in the target, a time
// range) live in the URL, so a view can be shared; "Load older" pages back with
// the server's `nextBefore`.
// Administrators only: the server refuses every other role. Every text is the
// server's and rendered as text (htm escapes it), never as markup.
import { useEffect, useState } from 'preact/hooks';
import { html, exact, ago, useTitle } from '../ui.js';
import * as S from '../state.js';
import { get, query } from '../api.js';
import { route, setParams } from '../router.js';
import { Table } from '../table.js';
import { can, ReadOnly } from '../roles.js';

const PAGE = 100;
// The actions the server records (offered as suggestions; any text may be typed).
const ACTIONS = ['login.succeeded', 'login.failed', 'user.created', 'user.updated', 'user.deleted',
  'registration_token.created', 'registration_token.deleted', 'api_token.created', 'api_token.deleted',
  'webhook.created', 'webhook.updated', 'webhook.deleted', 'webhook.tested', 'settings.updated', 'settings.cleaned',
  'heartbeat.updated', 'client.created', 'client.updated', 'client.deleted', 'client.reconnected', 'client.refreshed',
  'silence.created', 'silence.deleted', 'activity.deleted', 'import.done'];
const VIA = { session: 'password', oidc: 'single sign-on', token: 'API token', cli: 'command line' };

// A datetime-local value ("2026-11-21T09:00", local time) as ISO 8601; '' when empty or unreadable.
export function isoOf(local) {
  if (!local) return '';
  const t = new Date(local);
  return Number.isNaN(t.getTime()) ? '' : t.toISOString();
}

// The exact time first (an audit is read for when), the relative one beside it.
function At({ at }) {
  return html`<time datetime=${at} title=${ago(at, S.now.value)}>${exact(at)}</time>`;
}

const COLUMNS = [
  { key: 'at', label: 'At', render: (e) => html`<${At} at=${e.at} />` },
  { key: 'actor', label: 'Actor', render: (e) => e.actor || html`<span class="muted">–</span>` },
  { key: 'via', label: 'Via', render: (e) => VIA[e.via] || e.via },
  { key: 'sourceIp', label: 'Source IP', render: (e) => e.sourceIp || html`<span class="muted">–</span>` },
  { key: 'action', label: 'Action', render: (e) => html`<code class=${/failed|deleted/.test(e.action) ? 'audit-action warn' : 'audit-action'}>${e.action}</code>` },
  { key: 'target', label: 'Target', className: 'wrap', render: (e) => e.target || html`<span class="muted">–</span>` },
  { key: 'summary', label: 'Summary', className: 'wrap', render: (e) => e.summary },
];

const FILTERS = ['actor', 'action', 'target', 'from', 'to'];

export function Audit() {
  useTitle('Audit');
  const admin = can('change');
  const p = route.value.params;
  const f = Object.fromEntries(FILTERS.map((k) => [k, p.get(k) || '']));
  const [entries, setEntries] = useState(null);
  const [next, setNext] = useState(null);
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);
  const filter = () => ({ actor: f.actor.trim(), action: f.action.trim(), target: f.target.trim(), from: isoOf(f.from), to: isoOf(f.to) });

  // The first page, again whenever a filter changes (typing settles first).
  useEffect(() => {
    if (!admin) return undefined;
    let gone = false;
    const t = setTimeout(() => {
      get(`/api/v1/audit${query({ ...filter(), limit: PAGE })}`).then((r) => {
        if (gone) return;
        setEntries(r.entries || []);
        setNext(r.nextBefore ?? null);
        setError('');
      }).catch((e) => { if (!gone) setError(e.message); });
    }, entries ? 250 : 0);
    return () => { gone = true; clearTimeout(t); };
  }, [admin, f.actor, f.action, f.target, f.from, f.to]);

  async function older() {
    setBusy(true);
    try {
      const r = await get(`/api/v1/audit${query({ ...filter(), limit: PAGE, before: next })}`);
      setEntries([...entries, ...(r.entries || [])]);
      setNext(r.nextBefore ?? null);
      setError('');
    } catch (e) { setError(e.message); } finally { setBusy(false); }
  }

  if (!admin) return html`<section><h1>Audit</h1><${ReadOnly} what="the audit log" /></section>`;
  const text = (name, label, rest = {}) => html`<input type="text" id=${`audit-${name}`} aria-label=${label} placeholder=${label}
    value=${f[name]} onInput=${(e) => setParams({ [name]: e.currentTarget.value })} ...${rest} />`;
  const any = FILTERS.some((k) => f[k]);
  return html`<section class="audit">
    <h1>Audit</h1>
    <p class="muted">Every change and every login, with who made it and from where. Reading is not recorded.</p>
    <div class="filters row" id="audit-filters">
      ${text('actor', 'Actor (exact name)')}
      ${text('action', 'Action (exact)', { list: 'audit-actions' })}
      <datalist id="audit-actions">${ACTIONS.map((a) => html`<option key=${a} value=${a} />`)}</datalist>
      ${text('target', 'Target contains')}
      <label>From <input type="datetime-local" id="audit-from" value=${f.from} onInput=${(e) => setParams({ from: e.currentTarget.value })} /></label>
      <label>To <input type="datetime-local" id="audit-to" value=${f.to} onInput=${(e) => setParams({ to: e.currentTarget.value })} /></label>
      ${any && html`<button type="button" id="audit-clear" onClick=${() => setParams(Object.fromEntries(FILTERS.map((k) => [k, ''])))}>Clear filters ×</button>`}
    </div>
    ${error && html`<p class="form-error" role="alert">${error}</p>`}
    ${entries === null ? html`<p class="loading">Loading…</p>`
      : !entries.length ? html`<p class="empty" id="audit-empty">${any ? 'No entry matches these filters.' : 'Nothing recorded yet.'}</p>`
      : html`<${Table} id="audit-list" className="audit" columns=${COLUMNS} rows=${entries} rowKey=${(e) => e.id}
          rowAttrs=${(e) => ({ 'data-id': e.id, 'data-action': e.action })} caption="Audit entries, newest first" />`}
    ${entries && next != null && html`<div class="more"><button type="button" id="audit-older" disabled=${busy} onClick=${older}>Load older</button></div>`}
  </section>`;
}
