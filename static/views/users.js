// Users: list, create (local password or single sign-on), change a password or
// the login methods, delete, with the API's guards explained (not yourself, not
// the last user). Changing your own password keeps you logged in: the answer
// carries a fresh cookie and the dashboard socket reconnects after its 4002.
import { useState } from 'preact/hooks';
import { html, Confirm, Time, useLoad, useTitle } from '../ui.js';
import * as S from '../state.js';
import { get, post, put, del } from '../api.js';
import { Field, Input, FieldError, useErrors, useDirtyGuard, useEscape } from '../form.js';

const METHODS = [['local', 'Password'], ['oidc', 'Single sign-on'], ['local,oidc', 'Both']];
// The API's sentences that name no field, and the field they are about.
const KNOWN = {
  'A password is required for local authentication': 'password',
  'Password can only be set for users with local authentication': 'password',
  'Username already exists': 'username',
};

function methodsText(m) {
  return (METHODS.find(([v]) => v === m) || [m, m])[1];
}

function CreateUser({ onDone }) {
  const [values, setValues] = useState({ username: '', password: '', auth_methods: 'local' });
  const { errors, fail, clear } = useErrors();
  const [note, setNote] = useState('');
  const local = values.auth_methods.includes('local');
  useDirtyGuard(!!(values.username || values.password));
  async function create(e) {
    e.preventDefault();
    clear();
    setNote('');
    const body = { username: values.username, auth_methods: values.auth_methods };
    if (local) body.password = values.password;
    try {
      await post('/api/v1/users', body);
      setNote(`User ${values.username} created.`);
      setValues({ username: '', password: '', auth_methods: values.auth_methods });
      onDone();
    } catch (err) { fail(err, ['username', 'password', 'auth_methods'], KNOWN); }
  }
  return html`<form class="card form inline" id="create-user" onSubmit=${create}>
    <${Field} label="Username" name="username" error=${errors.username}>
      <${Input} name="username" values=${values} setValues=${setValues} errors=${errors} autocomplete="off" /><//>
    <${Field} label="Logs in with" name="auth_methods" error=${errors.auth_methods}>
      <select id="f-auth_methods" value=${values.auth_methods} onChange=${(e) => setValues({ ...values, auth_methods: e.currentTarget.value })}>
        ${METHODS.map(([v, t]) => html`<option key=${v} value=${v}>${t}</option>`)}</select><//>
    ${local && html`<${Field} label="Password" name="password" error=${errors.password}>
      <${Input} name="password" type="password" values=${values} setValues=${setValues} errors=${errors} autocomplete="new-password" /><//>`}
    <button type="submit" class="primary">Create user</button>
    <${FieldError} error=${errors['']} />
    ${note && html`<p role="status" id="create-user-status">${note}</p>`}
  </form>`;
}

function EditUser({ user, self, onDone, onClose }) {
  const [values, setValues] = useState({ password: '', auth_methods: user.auth_methods });
  const { errors, fail, clear } = useErrors();
  const [note, setNote] = useState('');
  useDirtyGuard(!!values.password || values.auth_methods !== user.auth_methods);
  useEscape(onClose);
  async function save(e) {
    e.preventDefault();
    clear();
    setNote('');
    const body = {};
    if (values.password) body.password = values.password;
    if (values.auth_methods !== user.auth_methods) body.auth_methods = values.auth_methods;
    if (!Object.keys(body).length) { setNote('Nothing changed.'); return; }
    try {
      await put(`/api/v1/users/${user.id}`, body);
      setValues({ ...values, password: '' });
      // Own credentials: the answer set a fresh cookie; the shell renews its session timer.
      if (self) window.dispatchEvent(new Event('vrrp:session-renewed'));
      setNote(self ? 'Saved. You stay logged in; your other sessions ended.' : `Saved. ${user.username}'s sessions ended.`);
      onDone();
    } catch (err) { fail(err, ['password', 'auth_methods'], KNOWN); }
  }
  return html`<form class="form edit-user" id=${`edit-user-${user.id}`} onSubmit=${save}>
    <${Field} label="New password" name="password" error=${errors.password} hint="Empty keeps the password.">
      <${Input} name="password" type="password" values=${values} setValues=${setValues} errors=${errors} autocomplete="new-password" /><//>
    <${Field} label="Logs in with" name="auth_methods" error=${errors.auth_methods}>
      <select id="f-auth_methods" value=${values.auth_methods} onChange=${(e) => setValues({ ...values, auth_methods: e.currentTarget.value })}>
        ${METHODS.map(([v, t]) => html`<option key=${v} value=${v}>${t}</option>`)}</select><//>
    <${FieldError} error=${errors['']} />
    <div class="row">
      <button type="submit" class="primary">Save</button>
      <button type="button" onClick=${onClose}>Close</button>
      ${note && html`<span role="status" class="note">${note}</span>`}
    </div>
  </form>`;
}

export function Users() {
  useTitle('Users');
  const { data: list, error, reload: load } = useLoad(() => get('/api/v1/users'));
  const [editing, setEditing] = useState(null);
  const [removing, setRemoving] = useState(null);
  const [status, setStatus] = useState('');
  const me = S.session.value?.id;
  const only = list && list.length === 1;
  async function remove() {
    const u = removing;
    setStatus('');
    await del(`/api/v1/users/${u.id}`);
    setRemoving(null);
    setStatus(`User ${u.username} deleted; their open sessions ended.`);
    load();
  }
  return html`<section class="admin">
    <h1>Users</h1>
    <${CreateUser} onDone=${load} />
    ${(status || error) && html`<p role="status" id="users-status">${status || error}</p>`}
    ${list === null ? html`<p class="loading">Loading…</p>` : html`<div class="table-wrap"><table class="stack" id="user-list">
      <thead><tr><th scope="col">Username</th><th scope="col">Logs in with</th><th scope="col">Created</th>
        <th scope="col">Changed</th><th scope="col"><span class="sr">Actions</span></th></tr></thead>
      <tbody>${list.map((u) => {
        const self = u.id === me;
        const guard = self ? 'You cannot delete yourself.' : only ? 'The last user cannot be deleted.' : '';
        return html`<tr key=${u.id} data-user=${u.username}>
          <td data-label="Username">${u.username}${self && html` <span class="badge">you</span>`}</td>
          <td data-label="Logs in with">${methodsText(u.auth_methods)}</td>
          <td data-label="Created"><${Time} at=${u.created_at} /></td>
          <td data-label="Changed">${u.updated_at ? html`<${Time} at=${u.updated_at} />` : '–'}</td>
          <td data-label=""><div class="row">
            <button type="button" class="small edit" onClick=${() => setEditing(editing === u.id ? null : u.id)}>Change password or methods</button>
            <button type="button" class="small danger delete" disabled=${!!guard} title=${guard || undefined}
              onClick=${() => setRemoving(u)}>Delete</button>
            ${guard && html`<span class="muted guard">${guard}</span>`}
          </div></td>
        </tr>${editing === u.id && html`<tr key=${`e${u.id}`}><td colspan="5">
          <${EditUser} user=${u} self=${self} onDone=${load} onClose=${() => setEditing(null)} /></td></tr>`}`;
      })}</tbody>
    </table></div>`}
    <${Confirm} open=${!!removing} title=${`Delete ${removing?.username}?`} action="Delete user"
      text="The user can no longer log in; their open dashboards return to the login page." onConfirm=${remove} onClose=${() => setRemoving(null)} />
  </section>`;
}
