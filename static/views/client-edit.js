// The client editor: display name, site, the allowed address (inbound) or the
// address the server dials (outbound); reconnect (outbound); delete, saying what
// goes with the client.
import { useEffect, useState } from 'preact/hooks';
import { html, Confirm, Time, useTitle } from '../ui.js';
import * as S from '../state.js';
import { post, put, del } from '../api.js';
import { navigate } from '../router.js';
import { Field, Input, FieldError, useErrors, useDirtyGuard, useEscape, differs } from '../form.js';
import { can, ReadOnly } from '../roles.js';

function ipv4(text) {
  const parts = text.split('.');
  if (parts.length !== 4 || !parts.every((p) => /^\d{1,3}$/.test(p) && Number(p) <= 255)) return null;
  return parts.reduce((n, p) => n * 256 + Number(p), 0);
}

// Whether `ip` lies in `allowed` (an IPv4 address or CIDR network); null when
// either cannot be read (the API then says what is wrong with `allowed`).
export function admits(allowed, ip) {
  const [net, bitsText] = allowed.trim().split('/');
  const a = ipv4(net);
  const b = ipv4(ip || '');
  const bits = bitsText === undefined ? 32 : Number(bitsText);
  if (a === null || b === null || !Number.isInteger(bits) || bits < 0 || bits > 32) return null;
  const size = 2 ** (32 - bits);
  return Math.floor(a / size) === Math.floor(b / size);
}

export function ClientEditor({ id }) {
  const client = S.clientById.value.get(id);
  const [values, setValues] = useState(null);
  const { errors, fail, clear } = useErrors();
  const [status, setStatus] = useState('');
  const [confirm, setConfirm] = useState(false);
  const [base, setBase] = useState(null);
  useTitle('Edit client');
  useDirtyGuard(!!values && !!base && differs(values, base));
  useEscape(() => navigate(`/clients/${encodeURIComponent(id)}`));
  useEffect(() => {
    // Filled once from the client; later live updates do not overwrite typing.
    if (client && !values) {
      const v = {
        displayName: client.displayName || '', site: client.site || '',
        inboundAllowedIp: client.inboundAllowedIp || '', outboundTargetAddress: client.outboundTargetAddress || '',
      };
      setValues(v);
      setBase(v);
    }
  }, [client, values]);
  if (!client || !values) {
    return html`<section><h1>Edit client</h1><p class="empty">${S.connection.value === 'live' ? 'No such client.' : 'Loading…'}</p>
      <p><a href="/clients">All clients</a></p></section>`;
  }
  const outbound = client.connectionMode === 'outbound';
  const name = client.displayName || client.hostname || id.slice(0, 8);
  if (!can('change')) {
    return html`<section class="admin"><p><a href=${`/clients/${encodeURIComponent(id)}`}>← ${name}</a></p>
      <h1>Edit ${name}</h1><${ReadOnly} what="clients" /></section>`;
  }
  const fields = outbound ? ['displayName', 'site', 'outboundTargetAddress'] : ['displayName', 'site', 'inboundAllowedIp'];
  const refuses = !outbound && values.inboundAllowedIp.trim() && client.inboundLastIp
    && admits(values.inboundAllowedIp, client.inboundLastIp) === false;

  async function save(e) {
    e.preventDefault();
    clear();
    setStatus('');
    const body = { displayName: values.displayName, site: values.site.trim() ? values.site : null };
    if (outbound) body.outboundTargetAddress = values.outboundTargetAddress;
    else body.inboundAllowedIp = values.inboundAllowedIp.trim() ? values.inboundAllowedIp : null;
    try {
      await put(`/api/v1/clients/${encodeURIComponent(id)}`, body);
      setBase(values);
      setStatus('Saved.');
    } catch (err) { fail(err, fields); }
  }
  async function reconnect() {
    setStatus('');
    try {
      await post(`/api/v1/clients/${encodeURIComponent(id)}/reconnect`);
      setStatus(`Dialling ${client.outboundTargetAddress} now.`);
    } catch (err) { setStatus(err.message); }
  }
  async function remove() {
    await del(`/api/v1/clients/${encodeURIComponent(id)}`);
    setConfirm(false);
    navigate('/clients', false, true);
  }

  return html`<section class="admin">
    <p><a href=${`/clients/${encodeURIComponent(id)}`}>← ${name}</a></p>
    <h1>Edit ${name}</h1>
    <form class="card form" id="client-form" onSubmit=${save}>
      <${Field} label="Display name" name="displayName" error=${errors.displayName} hint=${`Empty shows the host name (${client.hostname || 'none'}).`}>
        <${Input} name="displayName" values=${values} setValues=${setValues} errors=${errors} /><//>
      <${Field} label="Site" name="site" error=${errors.site} hint="Part of the cluster key; at most 100 characters; empty for none.">
        <${Input} name="site" values=${values} setValues=${setValues} errors=${errors} /><//>
      ${outbound
        ? html`<${Field} label="Agent address" name="outboundTargetAddress" error=${errors.outboundTargetAddress}
            hint="host, host:port or wss://host:port; a changed address is dialled at once.">
            <${Input} name="outboundTargetAddress" values=${values} setValues=${setValues} errors=${errors} /><//>`
        : html`<${Field} label="Allowed address" name="inboundAllowedIp" error=${errors.inboundAllowedIp}
            hint="IPv4 address or CIDR network the agent must connect from; empty switches the check off.">
            <${Input} name="inboundAllowedIp" values=${values} setValues=${setValues} errors=${errors} /><//>`}
      ${refuses && html`<p class="callout warn" role="alert" id="allowed-warning">The agent last connected from
        <strong>${client.inboundLastIp}</strong>, which this address refuses: its next connection would be closed
        with “IP address mismatch”.</p>`}
      <${FieldError} error=${errors['']} />
      <div class="row">
        <button type="submit" class="primary" id="save-client">Save</button>
        ${outbound && html`<button type="button" id="reconnect" onClick=${reconnect}>Reconnect now</button>`}
        <button type="button" class="danger" id="delete-client" onClick=${() => setConfirm(true)}>Delete…</button>
        ${status && html`<span role="status" id="client-status">${status}</span>`}
      </div>
    </form>
    <dl class="facts">
      <dt>Mode</dt><dd>${client.connectionMode}</dd>
      <dt>Status</dt><dd>${client.status}, last seen <${Time} at=${client.lastSeen} /></dd>
      ${!outbound && html`<dt>Last address</dt><dd>${client.inboundLastIp || 'not connected yet'}</dd>`}
    </dl>
    <${Confirm} open=${confirm} title=${`Delete ${name}?`} action="Delete client"
      text=${`The agent is disconnected and its stored reading deleted. It leaves its clusters: a cluster left with no member resolves its open incident as “removed”; the others are judged again without it. Its activity stays in the list. To watch this host again it must register anew.`}
      onConfirm=${remove} onClose=${() => setConfirm(false)} />
  </section>`;
}
