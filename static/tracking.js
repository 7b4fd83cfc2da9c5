// What keepalived tracks and why an instance is in FAULT, shared by
// the cluster and client views: the cause beside a FAULT member (the server's
// own words, `faultReason`), an instance's tracked items with their state, and
// which backups hear another master than the one the server sees.
import { html } from './ui.js';

// The cause of a FAULT, as the server words it; nothing for other states.
export function FaultCause({ instance }) {
  if (instance?.state !== 'FAULT' || !instance.faultReason) return null;
  return html`<span class="fault-cause"><span class="sr">Why in FAULT: </span>${instance.faultReason}</span>`;
}

const KIND_TEXT = { script: 'track script', interface: 'tracked interface', file: 'track file', process: 'track process' };

// An instance's tracked items, failing ones first, each with keepalived's own
// word for its state, its value and its weight.
export function TrackedItems({ instance }) {
  const items = Array.isArray(instance?.tracked) ? instance.tracked : [];
  if (!items.length) return html`<p class="empty">keepalived tracks nothing for ${instance?.name}.</p>`;
  const sorted = [...items].sort((a, b) => Number(!!a.ok) - Number(!!b.ok) || String(a.name).localeCompare(String(b.name)));
  return html`<div class="table-wrap"><table class="tracked stack" data-instance=${instance.name}>
    <thead><tr><th scope="col">Tracked</th><th scope="col">Name</th><th scope="col">State</th>
      <th scope="col">keepalived says</th><th scope="col">Value</th><th scope="col">Weight</th></tr></thead>
    <tbody>${sorted.map((t) => html`<tr key=${`${t.kind}:${t.name}`} class=${t.ok ? '' : 'failing'}>
      <td data-label="Tracked">${KIND_TEXT[t.kind] || t.kind || '–'}</td>
      <td data-label="Name">${t.name}</td>
      <td data-label="State"><span class=${`badge ${t.ok ? 'ok' : 'bad'}`}>${t.ok ? 'ok' : 'failing'}</span></td>
      <td data-label="keepalived says">${t.status ?? '–'}</td>
      <td data-label="Value">${t.value ?? '–'}</td>
      <td data-label="Weight" title=${t.weight ? 'moves the priority instead of causing FAULT' : 'no weight: puts the instance in FAULT when failing'}>${t.weight ?? '–'}</td>
    </tr>`)}</tbody>
  </table></div>`;
}

const live = (m) => m.online && m.reporting;
// keepalived may add words after an address ("192.0.2.12 min_ttl 1").
const addressOf = (s) => String(s).trim().split(/\s+/)[0];
const peersOf = (m) => (Array.isArray(m.instance.unicastPeers) ? m.instance.unicastPeers.map(addressOf) : []);

// The addresses a member sends from, as far as the others' unicast peer lists
// tell: every other member lists it, it never lists itself. Empty for
// multicast clusters (nobody lists peers).
export function addressesOf(member, members) {
  const others = members.filter((m) => m !== member && peersOf(m).length);
  if (!others.length) return new Set();
  const own = new Set(peersOf(member));
  const common = others.map((m) => new Set(peersOf(m))).reduce((a, b) => new Set([...a].filter((x) => b.has(x))));
  return new Set([...common].filter((x) => !own.has(x)));
}

// Live backups whose keepalived names a master router other than the member the
// server sees as the one MASTER: Map(member → the address it hears). Without
// the master's address (multicast), backups naming different routers all
// disagree with each other, so each is marked.
export function disagreeingBackups(cluster) {
  const out = new Map();
  const masters = cluster.members.filter((m) => live(m) && m.instance.state === 'MASTER');
  if (masters.length !== 1) return out;
  const backups = cluster.members.filter((m) => live(m) && m.instance.state === 'BACKUP' && m.instance.masterRouter);
  const known = addressesOf(masters[0], cluster.members);
  if (known.size) {
    for (const b of backups) if (!known.has(addressOf(b.instance.masterRouter))) out.set(b, addressOf(b.instance.masterRouter));
  } else if (new Set(backups.map((b) => addressOf(b.instance.masterRouter))).size > 1) {
    for (const b of backups) out.set(b, addressOf(b.instance.masterRouter));
  }
  return out;
}

// The marker on such a backup's row.
export function DisagreeMark({ heard, master }) {
  return html`<span class="badge warn master-disagrees"
    title=${`keepalived on this backup hears ${heard} as master${master ? `, not ${master}` : ''}: the backups disagree about the master`}>
    hears ${heard} as master</span>`;
}
