// Add a host: the wizard for both ways an agent connects. Inbound: a registration
// token shown once, the steps on the host, then waiting live for the new client
// to register and connect. Outbound: the server dials the agent with its setup
// PIN; every refusal of the spec's table is explained as the next step.
import { useEffect, useState } from 'preact/hooks';
import { html, exact, useTitle, Copy } from '../ui.js';
import * as S from '../state.js';
import { post, put } from '../api.js';
import { navigate, route } from '../router.js';
import { Field, Input, FieldError, useErrors, useDirtyGuard, useEscape, differs, left } from '../form.js';
import { can, ReadOnly } from '../roles.js';

// One clock tick a second while a countdown is on screen.
function useSecondTick() {
  const [t, setT] = useState(Date.now());
  useEffect(() => {
    const i = setInterval(() => setT(Date.now()), 1000);
    return () => clearInterval(i);
  }, []);
  return t;
}

// After a client was added: give it a name and a site (both optional).
export function NameAndSite({ client, onDone }) {
  const [base, setBase] = useState(() => ({ displayName: client.displayName || client.hostname || '', site: client.site || '' }));
  const [values, setValues] = useState(base);
  const { errors, fail, clear } = useErrors();
  const [saved, setSaved] = useState(false);
  useDirtyGuard(differs(values, base));
  async function save(e) {
    e.preventDefault();
    clear();
    try {
      await put(`/api/v1/clients/${encodeURIComponent(client.id)}`, { displayName: values.displayName, site: values.site || null });
      setBase(values);
      setSaved(true);
      if (onDone) onDone();
    } catch (err) { fail(err, ['displayName', 'site']); }
  }
  return html`<form class="card form" id="name-site" onSubmit=${save}>
    <h2>Name it and set its site</h2>
    <p class="muted">The site is part of the cluster key: hosts of one VRRP cluster share it.</p>
    <${Field} label="Display name" name="displayName" error=${errors.displayName}>
      <${Input} name="displayName" values=${values} setValues=${setValues} errors=${errors} /><//>
    <${Field} label="Site" name="site" error=${errors.site} hint="At most 100 characters; empty for none.">
      <${Input} name="site" values=${values} setValues=${setValues} errors=${errors} placeholder="dc-1" /><//>
    <${FieldError} error=${errors['']} />
    <div class="row">
      <button type="submit" class="primary">Save</button>
      ${saved && html`<span role="status" id="name-site-saved">Saved. <a href=${`/clients/${encodeURIComponent(client.id)}`}>Open the client</a></span>`}
    </div>
  </form>`;
}

function Inbound() {
  const [values, setValues] = useState({ displayName: '', inboundAllowedIp: '' });
  const { errors, fail, clear } = useErrors();
  const [issued, setIssued] = useState(null); // {token, expiresAt, ..., known: Set of client ids before}
  const tick = useSecondTick();
  // Typed but no token made yet. (A token made is stored: the tokens list keeps it.)
  useDirtyGuard(!issued && !!(values.displayName.trim() || values.inboundAllowedIp.trim()));

  async function create(e) {
    e.preventDefault();
    clear();
    const body = {};
    if (values.displayName.trim()) body.displayName = values.displayName;
    if (values.inboundAllowedIp.trim()) body.inboundAllowedIp = values.inboundAllowedIp;
    try {
      const t = await post('/api/v1/tokens', body);
      setIssued({ ...t, known: new Set(S.clients.value.map((c) => c.id)), at: new Date().toISOString() });
    } catch (err) { fail(err, ['displayName', 'inboundAllowedIp']); }
  }

  if (!issued) {
    return html`<form class="card form" id="token-form" onSubmit=${create}>
      <h2>1. Create a registration token</h2>
      <p class="muted">The token lets one agent register within 30 minutes. Both fields are optional.</p>
      <${Field} label="Display name" name="displayName" error=${errors.displayName} hint="The name the new client gets (at most 100 characters); else its host name.">
        <${Input} name="displayName" values=${values} setValues=${setValues} errors=${errors} /><//>
      <${Field} label="Allowed address" name="inboundAllowedIp" error=${errors.inboundAllowedIp}
        hint="IPv4 address or CIDR network the agent must connect from; empty takes the address it registers from.">
        <${Input} name="inboundAllowedIp" values=${values} setValues=${setValues} errors=${errors} placeholder="192.0.2.10 or 192.0.2.0/24" /><//>
      <${FieldError} error=${errors['']} />
      <div class="row"><button type="submit" class="primary" id="create-token">Create token</button></div>
    </form>`;
  }

  const server = location.origin;
  const remaining = left(issued.expiresAt, tick);
  // The new client: one that was not there when the token was made (the one
  // carrying the token's display name first, should two register at once).
  const fresh = S.clients.value.filter((c) => !issued.known.has(c.id));
  const mine = fresh.find((c) => issued.displayName && c.displayName === issued.displayName) || fresh[0];
  const curl = `curl -X POST http://<host>:3011/api/register -H 'Content-Type: application/json' \\\n  -d '{"url": "${server}", "token": "${issued.token}", "pin": "<setup PIN>"}'`;
  return html`<div class="card" id="token-issued">
      <h2>2. Register the agent on the host</h2>
      <p>Registration token (shown only now):</p>
      <p><${Copy} text=${issued.token} id="new-token" buttonId="copy-token" /></p>
      <p id="token-expiry">${remaining
        ? html`Valid for <strong>${remaining}</strong> more (until ${exact(issued.expiresAt)}).`
        : html`<span class="form-error">Expired. <button type="button" class="small" onClick=${() => setIssued(null)}>Create a new token</button></span>`}</p>
      <ol class="steps">
        <li>On the host, find the setup PIN in the agent's log: the line <code>Setup PIN: XXXX-XXXX</code>${' '}
          (<code>journalctl -u vrrp-agent | grep "Setup PIN"</code>).</li>
        <li>Open the agent's page at <code>${'http://<host>:3011/'}</code> (it opens its registration form).</li>
        <li>Enter the server URL <code id="server-url">${server}</code>, the token above and the setup PIN, then Register.</li>
      </ol>
      <p class="muted">Or, on the host itself:</p>
      <pre class="code">${curl}</pre>
    </div>
    <div class="card" id="wait-client" aria-live="polite">
      <h2>3. The new client</h2>
      ${!mine && html`<p><span class="spinner" aria-hidden="true"></span> Waiting for the agent to register…</p>`}
      ${mine && mine.status !== 'online' && html`<p id="client-registered">Registered as <strong>${mine.displayName || mine.hostname}</strong>; waiting for it to connect…</p>`}
      ${mine && mine.status === 'online' && html`<p id="client-connected"><span class="badge ok">connected</span> <strong>${mine.displayName || mine.hostname}</strong> is online${mine.inboundLastIp ? ` from ${mine.inboundLastIp}` : ''}.</p>`}
    </div>
    ${mine && html`<${NameAndSite} client=${mine} key=${mine.id} />`}`;
}

// What to do for each refusal of the outbound handshake (the spec's 503 table);
// the server's own sentence is shown above it.
const OUTBOUND_HELP = [
  ['Already registered', 'The agent already has an identity. On the host, delete identity.json in the agent\'s data directory (for example /var/lib/vrrp-agent/identity.json) and restart the agent: it prints a new setup PIN. Then try again.'],
  ['Invalid secret', 'Check the setup PIN in the agent\'s log (the line "Setup PIN: …"; case and the hyphen do not matter). After 5 wrong attempts the agent replaces its PIN and logs the new one: take the newest.'],
  ['No registration secret configured', 'This agent is older than the setup PIN: upgrade it, or start it with SVC_REGISTRATION_SECRET set and enter that secret here.'],
  ['Registration timed out', 'The agent stopped waiting for the request. Try again; if it repeats, check that nothing between the server and the agent holds the connection.'],
  ['Access denied', 'The agent refused this server\'s address: add the server\'s address to allowedNetworks in the agent\'s config and restart it.'],
  ['AUTH failed', 'The agent stored its new identity but the first connection failed: reset it (delete identity.json, restart) before trying again.'],
  ['does not speak TLS', 'TLS mismatch: the agent serves plain HTTP. Dial it as host:port without wss://, or give the agent a tls block.'],
  ['dial it as wss://', 'TLS mismatch: the agent serves HTTPS (it has a tls block). Dial it as wss://host:port.'],
  ['no answer within', 'Nothing answered in 10 s: check the address and port (3011 unless changed), that the agent runs without serverUrl (outbound mode) and that a firewall lets the server reach it.'],
  ['refused', 'Nothing listens there: check the address and port (3011 unless changed) and that the agent runs.'],
];

export function outboundHelp(message) {
  const hit = OUTBOUND_HELP.find(([marker]) => message.includes(marker));
  return hit ? hit[1] : 'Check the address, that the agent runs in outbound mode (no serverUrl) and its log.';
}

function Outbound() {
  const [values, setValues] = useState({ outboundTargetAddress: '', registrationSecret: '', hostname: '' });
  const { errors, fail, clear, set } = useErrors();
  const [busy, setBusy] = useState(false);
  const [added, setAdded] = useState(null);
  const fields = ['outboundTargetAddress', 'registrationSecret', 'hostname'];
  useDirtyGuard(!added && Object.values(values).some((v) => v.trim()));

  async function create(e) {
    e.preventDefault();
    clear();
    setBusy(true);
    const body = { outboundTargetAddress: values.outboundTargetAddress, registrationSecret: values.registrationSecret };
    if (values.hostname.trim()) body.hostname = values.hostname;
    try {
      const r = await post('/api/v1/clients/outbound', body);
      setAdded(r);
    } catch (err) {
      if (err.status === 503) set('handshake', err.message);
      else fail(err, fields);
    }
    setBusy(false);
  }

  const client = added && (S.clientById.value.get(added.id) || { id: added.id, hostname: added.hostname });
  return html`<form class="card form" id="outbound-form" onSubmit=${create}>
      <h2>The server dials the agent</h2>
      <p class="muted">The agent runs without serverUrl and waits; its log shows a setup PIN.</p>
      <${Field} label="Agent address" name="outboundTargetAddress" error=${errors.outboundTargetAddress}
        hint="host, host:port or wss://host:port (TLS); port 3011 when none is given.">
        <${Input} name="outboundTargetAddress" values=${values} setValues=${setValues} errors=${errors} placeholder="lb-1.example:3011" /><//>
      <${Field} label="Setup PIN or registration secret" name="registrationSecret" error=${errors.registrationSecret}
        hint="The PIN from the agent's log (Setup PIN: XXXX-XXXX), or its SVC_REGISTRATION_SECRET.">
        <${Input} name="registrationSecret" values=${values} setValues=${setValues} errors=${errors} autocomplete="off" /><//>
      <${Field} label="Host name (optional)" name="hostname" error=${errors.hostname} hint="Defaults to the address.">
        <${Input} name="hostname" values=${values} setValues=${setValues} errors=${errors} /><//>
      ${errors.handshake && html`<div class="callout bad" role="alert" id="outbound-error">
        <p><strong>${errors.handshake}</strong></p><p id="outbound-help">${outboundHelp(errors.handshake)}</p></div>`}
      <${FieldError} error=${errors['']} />
      <div class="row">
        <button type="submit" class="primary" id="add-outbound" disabled=${busy}>Add host</button>
        ${busy && html`<span role="status">Connecting to the agent (up to 10 s)…</span>`}
        ${client && html`<span role="status" id="outbound-added"><span class="badge ok">added</span> ${client.displayName || client.hostname}${client.status === 'online' ? ' is online' : ''}.</span>`}
      </div>
    </form>
    ${client && html`<${NameAndSite} client=${client} key=${client.id} />`}`;
}

export function AddHost() {
  useTitle('Add a host');
  // Esc leaves the wizard (asking first when something typed is not saved).
  useEscape(() => navigate('/clients'));
  const mode = route.value.params.get('mode') || '';
  // The other way throws the form of this one away: asked like leaving. While
  // the question is open (or after Stay) the radio shows the way still shown.
  const choose = (m) => {
    navigate(`/clients/add?mode=${m}`, true);
    const shown = document.getElementById(`mode-${route.value.params.get('mode')}`);
    if (shown) shown.checked = true;
  };
  if (!can('change')) {
    return html`<section class="admin"><p><a href="/clients">← Clients</a></p><h1>Add a host</h1>
      <${ReadOnly} what="clients" /></section>`;
  }
  return html`<section class="admin">
    <p><a href="/clients">← Clients</a></p>
    <h1>Add a host</h1>
    <fieldset class="choice" role="radiogroup" aria-label="How the agent connects">
      <legend>How does the agent connect?</legend>
      <label class=${mode === 'inbound' ? 'chosen' : ''}><input type="radio" name="mode" value="inbound" id="mode-inbound"
        checked=${mode === 'inbound'} onChange=${() => choose('inbound')} />
        <strong>The agent dials the server</strong> (inbound): it needs the server's URL and a registration token.</label>
      <label class=${mode === 'outbound' ? 'chosen' : ''}><input type="radio" name="mode" value="outbound" id="mode-outbound"
        checked=${mode === 'outbound'} onChange=${() => choose('outbound')} />
        <strong>The server dials the agent</strong> (outbound): for hosts the server can reach but that cannot reach it.</label>
    </fieldset>
    ${mode === 'inbound' && html`<${Inbound} />`}
    ${mode === 'outbound' && html`<${Outbound} />`}
    <p class="muted"><a href="/tokens">Registration tokens</a> lists the tokens made so far.</p>
  </section>`;
}
