// Clients: the agents, searchable; a client's detail shows its keepalived (with
// the reading dimmed and dated while the agent is offline) and asks for a fresh
// reading on demand.
import { useState } from 'preact/hooks';
import { html, Time, Dot, useTitle } from '../ui.js';
import * as S from '../state.js';
import { post } from '../api.js';
import { route, setParams } from '../router.js';
import { SilenceAction, SilencedBanner } from '../silence.js';
import { FaultCause, TrackedItems } from '../tracking.js';

const nameOf = (c) => c.displayName || c.hostname || c.id.slice(0, 8);

function matches(c, q) {
  if (!q) return true;
  const hay = [c.displayName, c.hostname, c.site, c.version, c.connectionMode, c.status, c.id,
    c.inboundLastIp, c.outboundTargetAddress].filter(Boolean).join(' ').toLowerCase();
  return q.toLowerCase().split(/\s+/).filter(Boolean).every((w) => hay.includes(w));
}

function ClientRow(c) {
  return html`<tr key=${c.id} class=${c.status === 'online' ? '' : 'dim'}>
    <td><${Dot} online=${c.status === 'online'} /> <a href=${`/clients/${encodeURIComponent(c.id)}`}>${nameOf(c)}</a>
      ${c.displayName && c.hostname && c.displayName !== c.hostname ? html` <span class="muted">${c.hostname}</span>` : ''}</td>
    <td>${c.status}</td>
    <td>${c.connectionMode}</td>
    <td>${c.version || '–'}</td>
    <td><${Time} at=${c.lastSeen} /></td>
    <td>${c.capabilities ? c.capabilities.join(', ') || 'none' : '–'}</td>
    <td>${c.site || '–'}</td>
  </tr>`;
}

export function Clients() {
  useTitle('Clients');
  const [limit, setLimit] = useState(100);
  const p = route.value.params;
  const q = p.get('q') || '';
  const status = p.get('status') || '';
  const list = S.clients.value.filter((c) => (!status || c.status === status) && matches(c, q))
    .sort((a, b) => (a.status === b.status ? 0 : a.status === 'offline' ? -1 : 1) || nameOf(a).localeCompare(nameOf(b)));
  return html`<section>
    <h1>Clients <a class="button primary" href="/clients/add" id="add-host">Add a host</a> <a class="button" href="/tokens">Registration tokens</a></h1>
    <div class="filters row">
      <input type="search" data-search placeholder="Search name, site, version, address ( / )" aria-label="Search clients"
        value=${q} onInput=${(e) => setParams({ q: e.currentTarget.value })} />
      <select aria-label="Status" value=${status} onChange=${(e) => setParams({ status: e.currentTarget.value })}>
        <option value="">Any status</option><option value="online">online</option><option value="offline">offline</option>
      </select>
      <span class="muted">${list.length} of ${S.clients.value.length}</span>
    </div>
    <div class="table-wrap"><table class="clients">
      <thead><tr><th scope="col">Name</th><th scope="col">Status</th><th scope="col">Mode</th><th scope="col">Version</th>
        <th scope="col">Last seen</th><th scope="col">Capabilities</th><th scope="col">Site</th></tr></thead>
      <tbody>${list.slice(0, limit).map(ClientRow)}</tbody>
    </table></div>
    ${!list.length && html`<p class="empty">${S.clients.value.length ? 'No client matches.' : 'No clients registered.'}</p>`}
    ${list.length > limit && html`<div class="more"><button type="button" onClick=${() => setLimit(limit + 100)}>
      Show 100 more (${list.length - limit} not shown)</button></div>`}
  </section>`;
}

function Instances({ instances, dim }) {
  if (!instances || !instances.length) return html`<p class="empty">No VRRP instances.</p>`;
  return html`<div class="table-wrap"><table class=${dim ? 'dim' : ''}>
    <thead><tr><th scope="col">Instance</th><th scope="col">State</th><th scope="col">VRID</th><th scope="col">Interface</th>
      <th scope="col">Priority</th><th scope="col">Addresses</th><th scope="col">Sync group</th><th scope="col">Since</th></tr></thead>
    <tbody>${instances.map((i) => html`<tr key=${i.name}>
      <td>${i.name}</td><td class="state-cell"><span class=${`state state-${i.state}`}>${i.state}</span> <${FaultCause} instance=${i} /></td><td>${i.vrid ?? '–'}</td>
      <td>${i.interface || '–'}</td>
      <td>${i.priority ?? '–'}${i.effectivePriority != null && i.effectivePriority !== i.priority ? ` / ${i.effectivePriority}` : ''}</td>
      <td>${(i.vips || []).join(', ') || '–'}</td><td>${i.syncGroup || '–'}</td>
      <td>${i.lastTransition ? html`<${Time} at=${i.lastTransition} />` : '–'}</td>
    </tr>`)}</tbody>
  </table></div>`;
}

export function ClientDetail({ id }) {
  const client = S.clientById.value.get(id);
  const reading = S.readingOf(id);
  const [refresh, setRefresh] = useState('');
  useTitle(client ? nameOf(client) : 'Client');
  if (!client) {
    return html`<section><h1>Client</h1><p class="empty">${S.connection.value === 'live' ? 'No such client.' : 'Loading…'}</p>
      <p><a href="/clients">All clients</a></p></section>`;
  }
  const offline = client.status !== 'online';
  async function ask() {
    setRefresh('Asking for a reading…');
    try {
      await post(`/api/v1/clients/${encodeURIComponent(id)}/keepalived/refresh`);
      setRefresh('Reading requested; it appears here when it arrives.');
    } catch (e) {
      setRefresh(e.status === 409 ? 'Agent offline: it cannot be asked for a reading.' : e.message);
    }
  }
  let keepalived;
  if (!reading) keepalived = html`<p class="empty">No reading received yet.</p>`;
  else if (!reading.running) keepalived = html`<p><span class="badge warn">stopped</span> keepalived is not running.</p>`;
  else if (reading.error) keepalived = html`<p><span class="badge bad">unreadable</span> ${reading.error}</p>`;
  else keepalived = html`<p><span class="badge ok">running</span> version ${reading.version || '?'}, PID ${reading.pid ?? '?'}</p>`;
  const instances = reading && (reading.instances?.length ? reading.instances : reading.lastKnownInstances);
  const lastKnown = reading && !reading.instances?.length && reading.lastKnownInstances?.length;
  return html`<section class="client-detail">
    <p><a href="/clients">← Clients</a></p>
    <h1><${Dot} online=${!offline} /> ${nameOf(client)}</h1>
    <${SilencedBanner} clientIds=${[client.id]} />
    <${SilenceAction} matcher=${{ clientId: client.id }} what=${nameOf(client)} />
    <dl class="facts">
      <dt>Status</dt><dd>${client.status}</dd>
      <dt>Host name</dt><dd>${client.hostname || '–'}</dd>
      <dt>Site</dt><dd>${client.site || '–'}</dd>
      <dt>Mode</dt><dd>${client.connectionMode}${client.connectionMode === 'outbound' && client.outboundTargetAddress ? ` to ${client.outboundTargetAddress}` : ''}${client.inboundLastIp ? ` from ${client.inboundLastIp}` : ''}</dd>
      <dt>Agent version</dt><dd>${client.version || '–'}</dd>
      <dt>Capabilities</dt><dd>${client.capabilities ? client.capabilities.join(', ') || 'none' : '–'}</dd>
      <dt>Last seen</dt><dd><${Time} at=${client.lastSeen} /></dd>
    </dl>
    <h2>keepalived</h2>
    <div class=${offline ? 'dim' : ''}>
      ${offline && reading && html`<p class="muted">Last reading, <${Time} at=${reading.receivedAt} />; the agent is offline.</p>`}
      ${keepalived}
    </div>
    <div class="row">
      <button type="button" id="refresh-reading" onClick=${ask}>Refresh reading</button>
      <a class="button" id="edit-client" href=${`/clients/${encodeURIComponent(id)}/edit`}>Edit, reconnect or delete</a>
      ${refresh && html`<span role="status" id="refresh-status">${refresh}</span>`}
      ${reading && html`<span class="muted">Received <${Time} at=${reading.receivedAt} /></span>`}
    </div>
    <h2>Instances${lastKnown ? ' (last known)' : ''}</h2>
    <${Instances} instances=${instances} dim=${offline || lastKnown} />
    ${instances?.some((i) => Array.isArray(i.tracked) && i.tracked.length) && html`<h2>What keepalived tracks</h2>
      <div class=${offline || lastKnown ? 'dim' : ''}>${instances.map((i) => html`<section class="tracked-of" key=${i.name}>
        <h3>${i.name}${i.trackerFaults != null ? html` <span class="muted">${i.trackerFaults} tracker ${i.trackerFaults === 1 ? 'fault' : 'faults'}</span>` : ''}</h3>
        <${TrackedItems} instance=${i} />
      </section>`)}</div>`}
    ${reading?.syncGroups?.length > 0 && html`<h2>Sync groups</h2><ul>
      ${reading.syncGroups.map((g) => html`<li key=${g.name}><strong>${g.name}</strong> ${g.state}: ${g.instances.join(', ')}</li>`)}
    </ul>`}
  </section>`;
}
