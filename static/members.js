// How a cluster and its members are shown wherever they appear (overview,
// clusters list, cluster page): links, the one-line explanation, member rows.
import { html, Dot, Time } from './ui.js';
import { Table } from './table.js';
import * as S from './state.js';
import { FaultCause, DisagreeMark, disagreeingBackups } from './tracking.js';
import { DrainedBadge, DrainedLine, isDrained } from './drains.js';

export function clusterHref(c) {
  return `/clusters/${encodeURIComponent(c.key)}`;
}

export function hostOf(m) {
  return S.clientName(m.clientId);
}

export function byPriority(members) {
  const p = (m) => m.instance.effectivePriority ?? m.instance.priority ?? -1;
  return [...members].sort((a, b) => p(b) - p(a) || hostOf(a).localeCompare(hostOf(b)));
}

// The open incident of a cluster, if any (its reasons explain the health best).
export function incidentOf(c) {
  for (const r of S.openIncidents.value) {
    const k = r.data?.cluster;
    if (k && (k.site || '') === (c.site || '') && k.vrid === c.vrid
      && (k.networks || []).some((n) => c.networks.includes(n))) return r;
  }
  return null;
}

export const live = (m) => m.online && m.reporting;

// "a", "a and b", "a, b and c".
const names = (ms) => { const n = ms.map(hostOf); return n.length > 1 ? `${n.slice(0, -1).join(', ')} and ${n[n.length - 1]}` : n.join(''); };

// One line: which host, what is wrong. The incident's own reason texts (composed
// by the server) when one is open; otherwise read from the members. A drained
// member is a planned absence: said after that, so a backup as MASTER (or a
// drained host in FAULT) is explained.
export function explain(c) {
  const drained = c.members.filter((m) => isDrained(m.drain));
  const base = explainHealth(c, drained);
  if (!drained.length) return base;
  return `${base}${base ? ' ' : ''}${names(drained)} ${drained.length === 1 ? 'is' : 'are'} drained (planned).`;
}

function explainHealth(c, drained) {
  const inc = incidentOf(c);
  const reasons = inc?.data?.incident?.reasons;
  if (reasons && reasons.length && inc.data.incident.health === c.health) {
    return reasons.map((r) => r.text).join(' ');
  }
  const masters = c.members.filter((m) => live(m) && m.instance.state === 'MASTER');
  switch (c.health) {
    case 'ok': return `${names(masters)} is MASTER.`;
    case 'split-brain': return `${names(masters)} are ${masters.length === 2 ? 'both' : 'all'} MASTER.`;
    case 'no-master': return 'No live member is MASTER.';
    case 'unknown': return 'No member is online and reporting.';
    case 'vip-mismatch': {
      const all = new Set(c.vips);
      const lacking = c.members.filter((m) => (m.instance.vips || []).length < all.size);
      return `${names(lacking) || 'Members'} ${lacking.length === 1 ? 'lacks' : 'lack'} addresses others carry.`;
    }
    case 'degraded': {
      const parts = [];
      const off = c.members.filter((m) => !m.online);
      const quiet = c.members.filter((m) => m.online && !m.reporting);
      // A drained member in FAULT (a drained sync group) is said once, as drained.
      const fault = c.members.filter((m) => live(m) && m.instance.state === 'FAULT' && !drained.includes(m));
      if (off.length) parts.push(`${names(off)} offline`);
      if (quiet.length) parts.push(`keepalived not reporting on ${names(quiet)}`);
      if (fault.length) parts.push(`${names(fault)} in FAULT`);
      if (c.members.length === 1) parts.push('only one member');
      return parts.length ? `${parts.join('; ')}.` : drained.length ? '' : 'Degraded.';
    }
    default: return '';
  }
}

const prioText = (i) => `${i.priority ?? '–'}${i.effectivePriority != null && i.effectivePriority !== i.priority ? ` / ${i.effectivePriority}` : ''}`;
const prioOf = (m) => m.instance.effectivePriority ?? m.instance.priority;

// The members as a table (headers name state and priority), by priority; below
// a FAULT member's state why it is in FAULT and, for a backup hearing another
// master, a mark. `wide` (the cluster page) adds interface, advert interval,
// sync group and the last transition.
export function Members({ cluster, wide }) {
  const heard = disagreeingBackups(cluster);
  const masterM = cluster.members.find((m) => m.online && m.reporting && m.instance.state === 'MASTER');
  const master = masterM && hostOf(masterM);
  const columns = [
    { key: 'host', label: 'Host', sort: hostOf, render: (m) => html`<${Dot} online=${m.online} />${' '}<a href=${`/clients/${encodeURIComponent(m.clientId)}`}>${hostOf(m)}</a>` },
    { key: 'instance', label: 'Instance', sort: (m) => m.instance.name, className: 'muted', render: (m) => m.instance.name },
    { key: 'state', label: 'State', sort: (m) => m.instance.state, render: (m) => {
      const i = m.instance;
      const why = !m.online ? 'agent offline, last state' : !m.reporting ? 'keepalived not reporting, last state' : '';
      const h = heard.get(m);
      const note = (i.state === 'FAULT' && i.faultReason) || h;
      // Drained: the badge (why, who, since in its title) beside the state, and
      // on the cluster page the same in a line.
      return html`<span class=${`state state-${i.state}`} title=${why || undefined}>${why && html`<span class="sr">${why} </span>`}${i.state}</span>
        ${isDrained(m.drain) && html` <${DrainedBadge} drain=${m.drain} />`}
        ${wide && isDrained(m.drain) && html`<span class="member-note"><${DrainedLine} drain=${m.drain} /></span>`}
        ${note && html`<span class="member-note"><${FaultCause} instance=${i} />${h && html`<${DisagreeMark} heard=${h} master=${master} />`}</span>`}`;
    } },
    { key: 'priority', label: 'Priority', sort: (m) => -(prioOf(m) ?? -1), className: 'num', render: (m) => html`<span title="configured / effective priority">${prioText(m.instance)}</span>` },
  ];
  if (wide) {
    columns.push(
      { key: 'interface', label: 'Interface', sort: (m) => m.instance.interface, render: (m) => m.instance.interface || '–' },
      { key: 'advert', label: 'Advert interval', sort: (m) => m.instance.advertInterval, render: (m) => (m.instance.advertInterval != null ? `${m.instance.advertInterval} s` : '–') },
      { key: 'sync', label: 'Sync group', sort: (m) => m.instance.syncGroup, render: (m) => m.instance.syncGroup || '–' },
      { key: 'transition', label: 'Last transition', sort: (m) => m.instance.lastTransition && -Date.parse(m.instance.lastTransition),
        render: (m) => (m.instance.lastTransition ? html`<${Time} at=${m.instance.lastTransition} />` : '–') },
    );
  }
  return html`<${Table} className=${`members${wide ? ' wide' : ''}`} columns=${columns} rows=${byPriority(cluster.members)}
    rowKey=${(m) => m.clientId + m.instance.name} rowClass=${(m) => `${!m.online || !m.reporting ? 'member dim' : 'member'}${isDrained(m.drain) ? ' drained' : ''}`} />`;
}
