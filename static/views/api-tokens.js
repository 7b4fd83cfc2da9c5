// API tokens: credentials for programs (scripts, Prometheus, automation) sent as
// `Authorization: Bearer vmt_…`, each with a role of its own. The list (name,
// role, who made it, when, last use, expiry); create one, whose secret is shown
// once, here, and never again (the server keeps only its hash); revoke one.
// Administrators only: the server refuses every other role.
import { useState } from 'preact/hooks';
import { html, Confirm, Copy, Time, exact, useLoad, useTitle } from '../ui.js';
import * as S from '../state.js';
import { get, post, del } from '../api.js';
import { Field, Input, FieldError, useErrors, When, useDirtyGuard } from '../form.js';
import { ROLES, can, roleText, ReadOnly } from '../roles.js';

// The API's sentences that name no field, and the field they are about.
const KNOWN = { 'An API token with that name exists': 'name' };

// Today as a date input's value (local time): the earliest expiry offered.
function today() {
  const d = new Date();
  return `${d.getFullYear()}-${String(d.getMonth() + 1).padStart(2, '0')}-${String(d.getDate()).padStart(2, '0')}`;
}

// A date input's day ("2026-12-01") as the end of that day in local time: a
// token "expiring on" a day still works through that day.
export function endOfDay(day) {
  const [y, m, d] = day.split('-').map(Number);
  return new Date(y, m - 1, d, 23, 59, 59).toISOString();
}

function CreateToken({ onCreated }) {
  // A token made for a program starts as a viewer: more is given on purpose.
  const [values, setValues] = useState({ name: '', role: 'viewer', expires: '' });
  const { errors, fail, clear } = useErrors();
  useDirtyGuard(!!values.name.trim());
  async function create(e) {
    e.preventDefault();
    clear();
    const body = { name: values.name, role: values.role };
    if (values.expires) body.expiresAt = endOfDay(values.expires);
    try {
      onCreated(await post('/api/v1/api-tokens', body));
      setValues({ name: '', role: values.role, expires: '' });
    } catch (err) { fail(err, ['name', 'role', 'expiresAt'], KNOWN); }
  }
  return html`<form class="card form inline" id="api-token-form" onSubmit=${create}>
    <${Field} label="Name" name="name" error=${errors.name} hint="What uses it, e.g. grafana or backup-script.">
      <${Input} name="name" values=${values} setValues=${setValues} errors=${errors} maxlength="100" autocomplete="off" /><//>
    <${Field} label="Role" name="role" error=${errors.role} hint=${(ROLES.find(([v]) => v === values.role) || [])[2]}>
      <select id="f-role" value=${values.role} onChange=${(e) => setValues({ ...values, role: e.currentTarget.value })}>
        ${ROLES.map(([v, t]) => html`<option key=${v} value=${v}>${t}</option>`)}</select><//>
    <${Field} label="Expires" name="expiresAt" error=${errors.expiresAt} hint="Works through the end of that day; empty: never expires.">
      <input id="f-expiresAt" name="expiresAt" type="date" min=${today()} value=${values.expires}
        onInput=${(e) => setValues({ ...values, expires: e.currentTarget.value })} /><//>
    <button type="submit" class="primary" id="create-api-token">Create token</button>
    <${FieldError} error=${errors['']} />
  </form>`;
}

// The new token, once: after this box is closed or the page left, nobody can
// see it again (a lost token is revoked and replaced).
function Issued({ token, onClose }) {
  return html`<div class="callout ok" role="status" id="api-token-issued">
    <p>Token <strong>${token.name}</strong> (${roleText(token.role).toLowerCase()}) created${token.expiresAt ? `, valid until ${exact(token.expiresAt)}` : ''}.
      Copy it now: <strong>it will not be shown again.</strong></p>
    <p><${Copy} text=${token.token} id="new-api-token" buttonId="copy-api-token" /></p>
    <p class="muted">Send it as <code>Authorization: Bearer …</code>; never in a URL (the server refuses that).</p>
    <p><button type="button" class="small" id="api-token-done" onClick=${onClose}>I have copied it</button></p>
  </div>`;
}

export function ApiTokens() {
  useTitle('API tokens');
  const admin = can('change');
  const { data: list, error, reload: load } = useLoad(() => (admin ? get('/api/v1/api-tokens') : Promise.resolve([])), [admin]);
  const [issued, setIssued] = useState(null);
  const [revoking, setRevoking] = useState(null);
  const [status, setStatus] = useState('');
  async function revoke() {
    const t = revoking;
    await del(`/api/v1/api-tokens/${encodeURIComponent(t.id)}`);
    setRevoking(null);
    if (issued && issued.id === t.id) setIssued(null);
    setStatus(`Token ${t.name} revoked: requests with it are refused from now on.`);
    load();
  }
  if (!admin) {
    return html`<section class="admin"><h1>API tokens</h1><${ReadOnly} what="API tokens" /></section>`;
  }
  const nowMs = S.now.value;
  const rows = (list || []).slice().sort((a, b) => (b.createdAt || '').localeCompare(a.createdAt || ''));
  return html`<section class="admin">
    <p><a href="/users">← Users</a></p>
    <h1>API tokens</h1>
    <p class="muted">A token lets a program use the API with the role given here, without a user's password.
      Its use is recorded in the <a href="/audit">audit log</a> under the token's name.</p>
    <${CreateToken} onCreated=${(t) => { setStatus(''); setIssued(t); load(); }} />
    ${issued && html`<${Issued} token=${issued} onClose=${() => setIssued(null)} />`}
    ${(status || error) && html`<p role="status" id="api-tokens-status">${status || error}</p>`}
    ${list === null ? html`<p class="loading">Loading…</p>` : !rows.length ? html`<p class="empty" id="api-tokens-empty">No API tokens.</p>` : html`
    <div class="table-wrap"><table class="stack" id="api-token-list">
      <thead><tr><th scope="col">Name</th><th scope="col">Role</th><th scope="col">Created by</th><th scope="col">Created</th>
        <th scope="col">Last used</th><th scope="col">Expires</th><th scope="col"><span class="sr">Actions</span></th></tr></thead>
      <tbody>${rows.map((t) => {
        const expired = t.expiresAt && Date.parse(t.expiresAt) <= nowMs;
        return html`<tr key=${t.id} data-id=${t.id} data-name=${t.name} class=${expired ? 'dim' : ''}>
          <td data-label="Name">${t.name}</td>
          <td data-label="Role" class="role">${roleText(t.role)}</td>
          <td data-label="Created by">${t.createdBy || '–'}</td>
          <td data-label="Created"><${Time} at=${t.createdAt} /></td>
          <td data-label="Last used"><${Time} at=${t.lastUsedAt} /></td>
          <td data-label="Expires">${!t.expiresAt ? html`<span class="muted">never</span>`
            : expired ? html`<span class="badge warn">expired</span>` : html`<${When} at=${t.expiresAt} nowMs=${nowMs} />`}</td>
          <td data-label=""><button type="button" class="small danger revoke" aria-label=${`Revoke ${t.name}`}
            onClick=${() => setRevoking(t)}>Revoke…</button></td>
        </tr>`;
      })}</tbody>
    </table></div>`}
    <${Confirm} id="api-token-revoke" open=${!!revoking} title=${`Revoke ${revoking?.name}?`} action="Revoke token"
      text="Every program using this token is refused (401) from its next request. This cannot be undone: a new token has to be made and given to them."
      onConfirm=${revoke} onClose=${() => setRevoking(null)} />
  </section>`;
}
