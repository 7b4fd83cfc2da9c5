// keepalived's counters of a cluster's members side by side, grouped as traffic
// and errors. Errors only by default (a switch shows the traffic too); a traffic
// row with a highlighted cell is always shown, so a fault is never hidden.
//
// The highlight rule: a value is highlighted only when it indicates a fault
// given the member's own role. A MASTER hears nobody (received 0 is health); a
// BACKUP that hears no advertisement while a live master sends them does not
// hear its master; a MASTER that has sent none is not advertising; every error
// counter above 0 is a fault. Takeovers and priority-0 adverts are history
// (a restart makes them), not faults.
import { useState } from 'preact/hooks';
import { html } from './ui.js';

export const TRAFFIC = ['advertisements_sent', 'advertisements_received', 'became_master', 'released_master',
  'priority_zero_sent', 'priority_zero_received'];
export const ERRORS = ['packet_len_err', 'advert_interval_err', 'ip_ttl_err', 'invalid_type_rcvd', 'addr_list_err',
  'invalid_authtype', 'authtype_mismatch', 'auth_failure'];

const n = (v) => Number(v) || 0;

// Pure. `member`: {state, live, stats}; `all`: every member of the cluster in
// the same shape. True when `key`'s value on `member` indicates a fault.
export function highlight(key, member, all) {
  if (!member.stats || !(key in member.stats)) return false;
  const v = n(member.stats[key]);
  if (!member.live) return false; // a last-known reading says nothing about now
  if (key === 'advertisements_received') {
    return member.state === 'BACKUP' && v === 0
      && all.some((o) => o !== member && o.live && o.state === 'MASTER' && n(o.stats?.advertisements_sent) > 0);
  }
  if (key === 'advertisements_sent') return member.state === 'MASTER' && v === 0;
  if (TRAFFIC.includes(key)) return false;
  return v > 0; // every other counter counts errors
}

// `members`: [{name, state, live, stats}] in column order.
export function Counters({ members }) {
  const [traffic, setTraffic] = useState(false);
  const present = (k) => members.some((m) => m.stats && k in m.stats);
  const errors = [...ERRORS.filter(present),
    ...[...new Set(members.flatMap((m) => Object.keys(m.stats || {})))].filter((k) => !TRAFFIC.includes(k) && !ERRORS.includes(k))];
  const flagged = (k) => members.some((m) => highlight(k, m, members));
  const moves = TRAFFIC.filter(present).filter((k) => traffic || flagged(k));
  if (!errors.length && !TRAFFIC.some(present)) return html`<p class="empty">No counters reported.</p>`;
  const faults = errors.filter(flagged).length;
  const group = (title, keys) => keys.length > 0 && html`<tbody data-group=${title.toLowerCase()}>
    <tr class="group"><th scope="rowgroup" colspan=${members.length + 1}>${title}</th></tr>
    ${keys.map((k) => html`<tr data-counter=${k}>
      <th scope="row">${k.replaceAll('_', ' ')}</th>
      ${members.map((m) => {
        const hl = highlight(k, m, members);
        return html`<td class=${hl ? 'hl' : ''} title=${hl ? 'indicates a fault' : undefined}>${m.stats?.[k] ?? '–'}</td>`;
      })}
    </tr>`)}
  </tbody>`;
  return html`<div class="counters-box">
    <div class="row">
      <label class="switch"><input type="checkbox" id="show-traffic" checked=${traffic}
        onChange=${(e) => setTraffic(e.currentTarget.checked)} /> Show traffic counters</label>
      <span class="muted" id="counter-summary">${faults ? `${faults} error ${faults === 1 ? 'counter' : 'counters'} above 0` : 'No error counted.'}</span>
    </div>
    <div class="table-wrap"><table class="counters" id="counters">
      <thead><tr><th scope="col">Counter</th>${members.map((m) => html`<th scope="col">${m.name}</th>`)}</tr></thead>
      ${group('Traffic', moves)}
      ${group('Errors', errors)}
    </table></div>
  </div>`;
}
