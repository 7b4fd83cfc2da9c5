// Users: list, create (local password or single sign-on, with a role), change a
// password, the login methods or the role, delete, with the API's guards
// explained (not yourself, not the last user, not the last administrator).
// Changing your own password keeps you logged in: the answer carries a fresh
// cookie and the dashboard socket reconnects after its 4002. A viewer or an
// operator sees only its own account here: the server lets it change its
// password and nothing else (and does not list users to it).
import { useState } from 'preact/hooks';
import { html, Confirm, Time, useLoad, useTitle } from '../ui.js';
import * as S from '../state.js';
import { get, post, put, del } from '../api.js';
import { Field, Input, FieldError, useErrors, useDirtyGuard, useEscape } from '../form.js';
import { ROLES, can, role as sessionRole, roleText } from '../roles.js';

const METHODS = [['local', 'Password'], ['oidc', 'Single sign-on'], ['local,oidc', 'Both']];
// The API's sentences that name no field, and the field they are about.
const KNOWN = {
  'A password is required for local authentication': 'password',
  'Password can only be set for users with local authentication': 'password',
  'Username already exists': 'username',
  'Cannot demote the last administrator': 'role',
};

function RoleSelect({ value, onChange, lastAdmin }) {
  // The last administrator keeps the role: the API refuses a demotion (and says so).
  return html`<select id="f-role" value=${value} onChange=${(e) => onChange(e.currentTarget.value)}>
    ${ROLES.map(([v, t]) => html`<option key=${v} value=${v} disabled=${lastAdmin && v !== 'admin'}>${t}</option>`)}</select>`;
}

function roleHint(r, lastAdmin) {
  if (lastAdmin) return 'The last administrator cannot be demoted.';
  return (ROLES.find(([v]) => v === r) || [])[2];
}

function methodsText(m) {
  return (METHODS.find(([v]) => v === m) || [m, m])[1];
}

function CreateUser({ onDone }) {
  // A new user starts as a viewer: more is given on purpose.
  const [values, setValues] = useState({ username: '', password: '', auth_methods: 'local', role: 'viewer' });
  const { errors, fail, clear } = useErrors();
  const [note, setNote] = useState('');
  const local = values.auth_methods.includes('local');
  useDirtyGuard(!!(values.username || values.password));
  async function create(e) {
    e.preventDefault();
    clear();
    setNote('');
    const body = { username: values.username, auth_methods: values.auth_methods, role: values.role };
    if (local) body.password = values.password;
    try {
      await post('/api/v1/users', body);
      setNote(`User ${values.username} created (${roleText(values.role).toLowerCase()}).`);
      setValues({ username: '', password: '', auth_methods: values.auth_methods, role: values.role });
      onDone();
    } catch (err) { fail(err, ['username', 'password', 'auth_methods', 'role'], KNOWN); }
  }
  return html`<form class="card form inline" id="create-user" onSubmit=${create}>
    <${Field} label="Username" name="username" error=${errors.username}>
      <${Input} name="username" values=${values} setValues=${setValues} errors=${errors} autocomplete="off" /><//>
    <${Field} label="Logs in with" name="auth_methods" error=${errors.auth_methods}>
      <select id="f-auth_methods" value=${values.auth_methods} onChange=${(e) => setValues({ ...values, auth_methods: e.currentTarget.value })}>
        ${METHODS.map(([v, t]) => html`<option key=${v} value=${v}>${t}</option>`)}</select><//>
    ${local && html`<${Field} label="Password" name="password" error=${errors.password}>
      <${Input} name="password" type="password" values=${values} setValues=${setValues} errors=${errors} autocomplete="new-password" /><//>`}
    <${Field} label="Role" name="role" error=${errors.role} hint=${roleHint(values.role)}>
      <${RoleSelect} value=${values.role} onChange=${(v) => setValues({ ...values, role: v })} /><//>
    <button type="submit" class="primary">Create user</button>
    <${FieldError} error=${errors['']} />
    ${note && html`<p role="status" id="create-user-status">${note}</p>`}
  </form>`;
}

// `own`: a viewer's or operator's own account, where only the password may change.
function EditUser({ user, self, own, lastAdmin, onDone, onClose }) {
  const initial = { password: '', auth_methods: user.auth_methods, role: user.role || 'admin' };
  const [values, setValues] = useState(initial);
  const { errors, fail, clear } = useErrors();
  const [note, setNote] = useState('');
  useDirtyGuard(!!values.password || values.auth_methods !== initial.auth_methods || values.role !== initial.role);
  useEscape(() => { if (onClose) onClose(); });
  async function save(e) {
    e.preventDefault();
    clear();
    setNote('');
    const body = {};
    if (values.password) body.password = values.password;
    if (values.auth_methods !== initial.auth_methods) body.auth_methods = values.auth_methods;
    if (values.role !== initial.role) body.role = values.role;
    if (!Object.keys(body).length) { setNote(own ? 'Type a new password first.' : 'Nothing changed.'); return; }
    try {
      await put(`/api/v1/users/${user.id}`, body);
      setValues({ ...values, password: '' });
      // Own credentials (or role): the answer set a fresh cookie; the shell
      // renews its session timer and reads the role again.
      if (self) window.dispatchEvent(new Event('vrrp:session-renewed'));
      setNote(self ? 'Saved. You stay logged in; your other sessions ended.' : `Saved. ${user.username}'s sessions ended.`);
      onDone();
    } catch (err) { fail(err, ['password', 'auth_methods', 'role'], KNOWN); }
  }
  return html`<form class="form edit-user" id=${own ? 'own-password' : `edit-user-${user.id}`} onSubmit=${save}>
    <${Field} label="New password" name="password" error=${errors.password} hint=${own ? undefined : 'Empty keeps the password.'}>
      <${Input} name="password" type="password" values=${values} setValues=${setValues} errors=${errors} autocomplete="new-password" /><//>
    ${!own && html`<${Field} label="Logs in with" name="auth_methods" error=${errors.auth_methods}>
      <select id="f-auth_methods" value=${values.auth_methods} onChange=${(e) => setValues({ ...values, auth_methods: e.currentTarget.value })}>
        ${METHODS.map(([v, t]) => html`<option key=${v} value=${v}>${t}</option>`)}</select><//>
    <${Field} label="Role" name="role" error=${errors.role} hint=${roleHint(values.role, lastAdmin)}>
      <${RoleSelect} value=${values.role} lastAdmin=${lastAdmin} onChange=${(v) => setValues({ ...values, role: v })} /><//>`}
    <${FieldError} error=${errors['']} />
    <div class="row">
      <button type="submit" class="primary">${own ? 'Change password' : 'Save'}</button>
      ${onClose && html`<button type="button" onClick=${onClose}>Close</button>`}
      ${note && html`<span role="status" class="note">${note}</span>`}
    </div>
  </form>`;
}

// A viewer's or operator's page: who it is, and its own password.
function OwnAccount() {
  useTitle('Account');
  const me = S.session.value;
  // The user list is the administrators' (403 below): the form works from the
  // session alone. A single-sign-on user's password is refused by the API,
  // whose sentence then shows beside the field.
  const user = { id: me.id, username: me.username, auth_methods: 'local', role: me.role };
  return html`<section class="admin">
    <h1>Account</h1>
    <dl class="facts" id="own-account">
      <dt>Username</dt><dd>${me.username}</dd>
      <dt>Role</dt><dd><span class="badge role">${roleText(sessionRole())}</span>
        <span class="muted"> ${roleHint(sessionRole())} Administrators manage users.</span></dd>
    </dl>
    ${me.via === 'oidc' ? html`<p class="muted">You logged in with single sign-on: your password is kept there.</p>`
      : html`<div class="card"><h2>Change your password</h2>
        <${EditUser} user=${user} self=${true} own=${true} onDone=${() => {}} /></div>`}
  </section>`;
}

export function Users() {
  if (!can('change')) return html`<${OwnAccount} />`;
  return html`<${AllUsers} />`;
}

function AllUsers() {
  useTitle('Users');
  const { data: list, error, reload: load } = useLoad(() => get('/api/v1/users'));
  const [editing, setEditing] = useState(null);
  const [removing, setRemoving] = useState(null);
  const [status, setStatus] = useState('');
  const me = S.session.value?.id;
  const only = list && list.length === 1;
  const admins = (list || []).filter((u) => (u.role || 'admin') === 'admin').length;
  async function remove() {
    const u = removing;
    setStatus('');
    await del(`/api/v1/users/${u.id}`);
    setRemoving(null);
    setStatus(`User ${u.username} deleted; their open sessions ended.`);
    load();
  }
  return html`<section class="admin">
    <h1>Users <a class="button" href="/api-tokens" id="api-tokens-link">API tokens</a></h1>
    <${CreateUser} onDone=${load} />
    ${(status || error) && html`<p role="status" id="users-status">${status || error}</p>`}
    ${list === null ? html`<p class="loading">Loading…</p>` : html`<div class="table-wrap"><table class="stack" id="user-list">
      <thead><tr><th scope="col">Username</th><th scope="col">Role</th><th scope="col">Logs in with</th><th scope="col">Created</th>
        <th scope="col">Changed</th><th scope="col"><span class="sr">Actions</span></th></tr></thead>
      <tbody>${list.map((u) => {
        const self = u.id === me;
        const role = u.role || 'admin';
        const lastAdmin = role === 'admin' && admins === 1;
        const guard = self ? 'You cannot delete yourself.' : only ? 'The last user cannot be deleted.'
          : lastAdmin ? 'The last administrator cannot be deleted.' : '';
        return html`<tr key=${u.id} data-user=${u.username} data-role=${role}>
          <td data-label="Username">${u.username}${self && html` <span class="badge">you</span>`}</td>
          <td data-label="Role" class="role">${roleText(role)}</td>
          <td data-label="Logs in with">${methodsText(u.auth_methods)}</td>
          <td data-label="Created"><${Time} at=${u.created_at} /></td>
          <td data-label="Changed">${u.updated_at ? html`<${Time} at=${u.updated_at} />` : '–'}</td>
          <td data-label=""><div class="row">
            <button type="button" class="small edit" onClick=${() => setEditing(editing === u.id ? null : u.id)}>Change password, methods or role</button>
            <button type="button" class="small danger delete" disabled=${!!guard} title=${guard || undefined}
              onClick=${() => setRemoving(u)}>Delete</button>
            ${guard && html`<span class="muted guard">${guard}</span>`}
          </div></td>
        </tr>${editing === u.id && html`<tr key=${`e${u.id}`}><td colspan="6">
          <${EditUser} user=${u} self=${self} lastAdmin=${lastAdmin} onDone=${load} onClose=${() => setEditing(null)} /></td></tr>`}`;
      })}</tbody>
    </table></div>`}
    <${Confirm} open=${!!removing} title=${`Delete ${removing?.username}?`} action="Delete user"
      text="The user can no longer log in; their open dashboards return to the login page." onConfirm=${remove} onClose=${() => setRemoving(null)} />
  </section>`;
}
