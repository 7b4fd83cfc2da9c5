// Registration tokens: every token made (unused, used, expired) with the name and
// address it gives its client; create one (shown once) and delete. They are
// credentials: administrators only (the server lists them to no other role).
import { useEffect, useState } from 'preact/hooks';
import { html, Time, exact, useLoad, useTitle, Confirm } from '../ui.js';
import * as S from '../state.js';
import { get, post, del } from '../api.js';
import { Field, Input, FieldError, useErrors, When, useDirtyGuard } from '../form.js';
import { can } from '../roles.js';

function stateOf(t, nowMs) {
  if (t.usedAt) return 'used';
  return Date.parse(t.expiresAt) <= nowMs ? 'expired' : 'unused';
}

export function Tokens() {
  if (!can('change')) {
    return html`<section class="admin"><p><a href="/clients">← Clients</a></p><h1>Registration tokens</h1>
      <p class="callout read-only" id="read-only" role="note">Registration tokens are credentials: only an administrator sees and makes them.</p></section>`;
  }
  return html`<${AllTokens} />`;
}

function AllTokens() {
  const [values, setValues] = useState({ displayName: '', inboundAllowedIp: '' });
  const { errors, fail, clear } = useErrors();
  const [issued, setIssued] = useState(null);
  const [status, setStatus] = useState('');
  useTitle('Registration tokens');
  const { data: list, error, reload: load } = useLoad(() => get('/api/v1/tokens'));
  // A registration uses a token: CLIENTS_UPDATE follows it, so reload then.
  useEffect(() => { if (list) load(); }, [S.clients.value.length]);

  async function create(e) {
    e.preventDefault();
    clear();
    const body = {};
    if (values.displayName.trim()) body.displayName = values.displayName;
    if (values.inboundAllowedIp.trim()) body.inboundAllowedIp = values.inboundAllowedIp;
    try {
      setIssued(await post('/api/v1/tokens', body));
      setValues({ displayName: '', inboundAllowedIp: '' });
      load();
    } catch (err) { fail(err, ['displayName', 'inboundAllowedIp']); }
  }
  const [removing, setRemoving] = useState(null);
  useDirtyGuard(!!(values.displayName.trim() || values.inboundAllowedIp.trim()));
  async function remove() {
    await del(`/api/v1/tokens/${encodeURIComponent(removing.tokenHash)}`);
    setRemoving(null);
    setStatus('Token deleted.');
    load();
  }
  const nowMs = S.now.value;
  const rows = (list || []).slice().sort((a, b) => (b.createdAt || '').localeCompare(a.createdAt || ''));
  return html`<section class="admin">
    <p><a href="/clients">← Clients</a></p>
    <h1>Registration tokens</h1>
    <p class="muted">A token lets one agent register (inbound) within 30 minutes. The <a href="/clients/add?mode=inbound">add-a-host wizard</a> walks through the steps on the host.</p>
    <form class="card form inline" id="token-form" onSubmit=${create}>
      <${Field} label="Display name" name="displayName" error=${errors.displayName}>
        <${Input} name="displayName" values=${values} setValues=${setValues} errors=${errors} /><//>
      <${Field} label="Allowed address" name="inboundAllowedIp" error=${errors.inboundAllowedIp}>
        <${Input} name="inboundAllowedIp" values=${values} setValues=${setValues} errors=${errors} placeholder="IPv4 or CIDR" /><//>
      <button type="submit" class="primary" id="create-token">Create token</button>
      <${FieldError} error=${errors['']} />
    </form>
    ${issued && html`<p class="callout ok" role="status" id="token-issued">New token (shown only now): <code id="new-token">${issued.token}</code>, valid until ${exact(issued.expiresAt)}.</p>`}
    ${(status || error) && html`<p role="status">${status || error}</p>`}
    ${list === null ? html`<p class="loading">Loading…</p>` : !rows.length ? html`<p class="empty">No registration tokens.</p>` : html`
    <div class="table-wrap"><table class="stack" id="token-list">
      <thead><tr><th scope="col">State</th><th scope="col">Names the client</th><th scope="col">Allowed address</th>
        <th scope="col">Created</th><th scope="col">Expires</th><th scope="col">Used</th><th scope="col"><span class="sr">Actions</span></th></tr></thead>
      <tbody>${rows.map((t) => {
        const st = stateOf(t, nowMs);
        return html`<tr key=${t.tokenHash} data-hash=${t.tokenHash} class=${st === 'unused' ? '' : 'dim'}>
          <td data-label="State"><span class=${`badge ${st === 'unused' ? 'ok' : st === 'used' ? '' : 'warn'}`}>${st}</span></td>
          <td data-label="Names the client">${t.displayName || html`<span class="muted">its host name</span>`}</td>
          <td data-label="Allowed address">${t.inboundAllowedIp || html`<span class="muted">where it registers from</span>`}</td>
          <td data-label="Created">${exact(t.createdAt)}</td>
          <td data-label="Expires">${st === 'used' ? html`<span class="muted">– (used)</span>` : html`<${When} at=${t.expiresAt} nowMs=${nowMs} />`}</td>
          <td data-label="Used">${t.usedAt ? html`<${Time} at=${t.usedAt} />` : '–'}</td>
          <td data-label=""><button type="button" class="small danger" aria-label="Delete token" onClick=${() => setRemoving(t)}>Delete…</button></td>
        </tr>`;
      })}</tbody>
    </table></div>`}
    <${Confirm} id="token-delete" open=${!!removing} title="Delete this registration token?" action="Delete token"
      text=${removing && removing.usedAt ? 'It was used already; only its record goes.'
        : 'An agent given this token can no longer register with it.'}
      onConfirm=${remove} onClose=${() => setRemoving(null)} />
  </section>`;
}
