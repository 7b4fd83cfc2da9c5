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
import { Table } from '../table.js';
import { can } from '../roles.js';
import { DrainPanel, DrainedBadge } from '../drains.js';

const nameOf = (c) => c.displayName || c.hostname || c.id.slice(0, 8);

function matches(c, q) {
  if (!q) return true;
  const hay = [c.displayName, c.hostname, c.site, c.version, c.connectionMode, c.status, c.id,
    c.inboundLastIp, c.outboundTargetAddress].filter(Boolean).join(' ').toLowerCase();
  return q.toLowerCase().split(/\s+/).filter(Boolean).every((w) => hay.includes(w));
}

// What a host's keepalived is doing, in words: {tone, text}; "running ·
// 2 instances · 1 MASTER", "stopped", "unreadable", or no reading yet.
export function keepalivedSummary(reading) {
  if (!reading) return { tone: 'muted', word: 'no reading', text: 'no reading yet' };
  if (!reading.running) return { tone: 'warn', word: 'stopped', text: 'stopped' };
  if (reading.error) return { tone: 'bad', word: 'unreadable', text: 'unreadable' };
  const list = reading.instances || [];
  const masters = list.filter((i) => i.state === 'MASTER').length;
  const faults = list.filter((i) => i.state === 'FAULT').length;
  const parts = [`${list.length} ${list.length === 1 ? 'instance' : 'instances'}`];
  if (masters) parts.push(`${masters} MASTER`);
  if (faults) parts.push(`${faults} FAULT`);
  return { tone: faults ? 'bad' : 'ok', word: 'running', text: parts.join(' · ') };
}

function Keepalived({ id }) {
  const r = S.readingOf(id);
  const k = keepalivedSummary(r);
  return html`<span class="keepalived"><span class=${`badge ${k.tone}`}>${k.word}</span>${k.word === 'running' ? ` ${k.text}` : ''}${
    r?.drain?.drained ? html` <${DrainedBadge} drain=${r.drain} />` : ''}</span>`;
}

// Refresh (ask for a reading) or reconnect (outbound) from the list.
function RowActions({ c }) {
  const [note, setNote] = useState('');
  const act = (what, path) => post(`/api/v1/clients/${encodeURIComponent(c.id)}/${path}`)
    .then(() => setNote(what === 'refresh' ? 'Reading requested.' : 'Reconnecting…'))
    .catch((e) => setNote(e.status === 409 ? 'Agent offline.' : e.message));
  return html`<div class="row nowrap">
    <button type="button" class="small" data-action="refresh" disabled=${c.status !== 'online'}
      onClick=${() => act('refresh', 'keepalived/refresh')}>Refresh</button>
    ${c.connectionMode === 'outbound' && html`<button type="button" class="small" data-action="reconnect"
      onClick=${() => act('reconnect', 'reconnect')}>Reconnect</button>`}
    ${note && html`<span class="muted" role="status">${note}</span>`}
  </div>`;
}

const CLIENT_COLUMNS = [
  { key: 'name', label: 'Name', sort: (c) => nameOf(c).toLowerCase(), render: (c) => html`<${Dot} online=${c.status === 'online'} /> <a href=${`/clients/${encodeURIComponent(c.id)}`}>${nameOf(c)}</a>
      ${c.displayName && c.hostname && c.displayName !== c.hostname ? html` <span class="muted">${c.hostname}</span>` : ''}` },
  { key: 'status', label: 'Agent', sort: (c) => c.status, render: (c) => c.status },
  { key: 'keepalived', label: 'keepalived', sort: (c) => keepalivedSummary(S.readingOf(c.id)).word, render: (c) => html`<${Keepalived} id=${c.id} />` },
  { key: 'mode', label: 'Mode', sort: (c) => c.connectionMode, render: (c) => c.connectionMode },
  { key: 'version', label: 'Version', sort: (c) => c.version, render: (c) => c.version || '–' },
  { key: 'seen', label: 'Last seen', sort: (c) => c.lastSeen && -Date.parse(c.lastSeen), render: (c) => html`<${Time} at=${c.lastSeen} />` },
  { key: 'site', label: 'Site', sort: (c) => c.site, render: (c) => c.site || '–' },
  { key: 'actions', label: 'Actions', render: (c) => html`<${RowActions} c=${c} />` },
];

export function Clients() {
  useTitle('Clients');
  const [limit, setLimit] = useState(100);
  const p = route.value.params;
  const q = p.get('q') || '';
  const status = p.get('status') || '';
  const unusable = p.get('keepalived') === 'unusable';
  const list = S.clients.value.filter((c) => (!status || c.status === status) && matches(c, q)
      && (!unusable || (c.status === 'online' && keepalivedSummary(S.readingOf(c.id)).word !== 'running')))
    .sort((a, b) => (a.status === b.status ? 0 : a.status === 'offline' ? -1 : 1) || nameOf(a).localeCompare(nameOf(b)));
  return html`<section>
    <h1>Clients ${can('change') && html`<a class="button primary" href="/clients/add" id="add-host">Add a host</a>
      <a class="button" href="/tokens" id="registration-tokens">Registration tokens</a>`}</h1>
    <div class="filters row">
      <input type="search" data-search placeholder="Search name, site, version, address ( / )" aria-label="Search clients"
        value=${q} onInput=${(e) => setParams({ q: e.currentTarget.value })} />
      <select aria-label="Status" value=${status} onChange=${(e) => setParams({ status: e.currentTarget.value })}>
        <option value="">Any status</option><option value="online">online</option><option value="offline">offline</option>
      </select>
      ${unusable && html`<button type="button" onClick=${() => setParams({ keepalived: '' })}>Without a usable reading ×</button>`}
      <span class="muted">${list.length} of ${S.clients.value.length}</span>
    </div>
    <${Table} id="client-list" className="clients" columns=${can('change') ? CLIENT_COLUMNS : CLIENT_COLUMNS.filter((c) => c.key !== 'actions')} rows=${list.slice(0, limit)} rowKey=${(c) => c.id}
      rowClass=${(c) => (c.status === 'online' ? '' : 'dim')} />
    ${!list.length && html`<p class="empty">${S.clients.value.length ? 'No client matches.' : 'No clients registered.'}</p>`}
    ${list.length > limit && html`<div class="more"><button type="button" onClick=${() => setLimit(limit + 100)}>
      Show 100 more (${list.length - limit} not shown)</button></div>`}
  </section>`;
}

// The cluster an instance of this client belongs to, if any.
function clusterOf(clientId, name) {
  return S.clusters.value.find((c) => c.members.some((m) => m.clientId === clientId && m.instance.name === name));
}

function Instances({ clientId, instances, dim }) {
  if (!instances || !instances.length) return html`<p class="empty">No VRRP instances.</p>`;
  const columns = [
    { key: 'name', label: 'Instance', sort: (i) => i.name, render: (i) => {
      const c = clusterOf(clientId, i.name);
      return c ? html`<a href=${`/clusters/${encodeURIComponent(c.key)}`} title="Open its cluster">${i.name}</a>` : i.name;
    } },
    { key: 'state', label: 'State', className: 'state-cell', sort: (i) => i.state, render: (i) => html`<span class=${`state state-${i.state}`}>${i.state}</span> <${FaultCause} instance=${i} />` },
    { key: 'vrid', label: 'VRID', sort: (i) => i.vrid, render: (i) => i.vrid ?? '–' },
    { key: 'interface', label: 'Interface', sort: (i) => i.interface, render: (i) => i.interface || '–' },
    { key: 'priority', label: 'Priority', sort: (i) => -(i.effectivePriority ?? i.priority ?? -1),
      render: (i) => `${i.priority ?? '–'}${i.effectivePriority != null && i.effectivePriority !== i.priority ? ` / ${i.effectivePriority}` : ''}` },
    { key: 'vips', label: 'Addresses', render: (i) => (i.vips || []).join(', ') || '–' },
    { key: 'sync', label: 'Sync group', sort: (i) => i.syncGroup, render: (i) => i.syncGroup || '–' },
    { key: 'since', label: 'Since', sort: (i) => i.lastTransition && -Date.parse(i.lastTransition),
      render: (i) => (i.lastTransition ? html`<${Time} at=${i.lastTransition} />` : '–') },
  ];
  return html`<${Table} id="instance-list" className=${`instances${dim ? ' dim' : ''}`} columns=${columns} rows=${instances} rowKey=${(i) => i.name} />`;
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
    <${DrainPanel} client=${client} reading=${reading} />
    <h2>keepalived</h2>
    <div class=${offline ? 'dim' : ''}>
      ${offline && reading && html`<p class="muted">Last reading, <${Time} at=${reading.receivedAt} />; the agent is offline.</p>`}
      ${keepalived}
    </div>
    <div class="row">
      ${can('change') && html`<button type="button" id="refresh-reading" onClick=${ask}>Refresh reading</button>
        <a class="button" id="edit-client" href=${`/clients/${encodeURIComponent(id)}/edit`}>Edit, reconnect or delete</a>`}
      ${refresh && html`<span role="status" id="refresh-status">${refresh}</span>`}
      ${reading && html`<span class="muted">Received <${Time} at=${reading.receivedAt} /></span>`}
    </div>
    <h2>Instances${lastKnown ? ' (last known)' : ''}</h2>
    <${Instances} clientId=${client.id} instances=${instances} dim=${offline || lastKnown} />
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
