// What the signed-in user's role lets it do, so views hide what would only be
// refused. Hiding is a courtesy: the server checks every request and answers
// 403 whatever the page shows.
//   viewer:   reads everything; changes its own password; marks activity seen.
//   operator: a viewer that also creates and ends silences (and drains).
//   admin:    everything.
import * as S from './state.js';
import { html } from './ui.js';

export const ROLES = [
  ['viewer', 'Viewer', 'Reads everything; changes only its own password.'],
  ['operator', 'Operator', 'A viewer that also silences (maintenance windows).'],
  ['admin', 'Administrator', 'Everything: hosts, webhooks, settings, users, tokens.'],
];
const RANK = { viewer: 0, operator: 1, admin: 2 };
// The least role each action needs.
const NEEDS = { change: 'admin', silence: 'operator', drain: 'operator' };

// The session's role. A server from before roles sends none: every user was an
// administrator then.
export function role() {
  return S.session.value?.role || 'admin';
}

export function roleText(r) {
  return (ROLES.find(([v]) => v === r) || [r, r])[1];
}

// Whether the session may do `action` ('change', 'silence', 'drain'). Read
// inside a render, so the view follows a change of session. An unknown action
// is not allowed.
export function can(action) {
  const needs = NEEDS[action];
  return needs !== undefined && (RANK[role()] ?? -1) >= RANK[needs];
}

// Said where a page's changes are hidden: what the role may not do here.
export function ReadOnly({ what }) {
  return html`<p class="callout read-only" id="read-only" role="note">You are ${
    role() === 'operator' ? 'an operator' : 'a viewer'}: you can read ${what} but not change ${
    /s$/.test(what) ? 'them' : 'it'}. An administrator can.</p>`;
}

// What a provisioning file on the server defines (configuration as files) is
// read-only for every role: the API answers 409; the file is changed instead.
export function ProvisionedBadge({ file }) {
  return html`<span class="badge provisioned" title="Defined by a file on the server: change the file and send SIGHUP (systemctl reload vrrp-monitor)">provisioned from ${file}</span>`;
}

export function ProvisionedNote({ what, file }) {
  return html`<p class="callout provisioned-note" id="provisioned-note" role="note">${what} is provisioned from <code>${file}</code>${
    ' '}on the server: it is read-only here. Change the file and send the server SIGHUP (<code>systemctl reload vrrp-monitor</code>).</p>`;
}
