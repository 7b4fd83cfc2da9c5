// Would a failover work now? A cluster's readiness as the server judges it
// (src/clusters/readiness.rs): the verdict as a badge (clusters list, cluster
// page) and every check with its outcome and the server's sentence (cluster
// page). Only the verdicts' words and the checks' questions are the dashboard's.
import { html, Time } from './ui.js';

export const VERDICT_TEXT = { ready: 'Ready', at_risk: 'At risk', not_ready: 'Not ready', unknown: 'Unknown' };
// Worst first, for the clusters list's filter.
export const VERDICTS = ['not_ready', 'at_risk', 'unknown', 'ready'];

export const verdictOf = (c) => c.readiness?.verdict || 'unknown';

// What each check asks (the server's Check::question()); a check this page does
// not know yet shows its name.
const QUESTION = {
  no_ready_backup: 'A backup is ready to take over',
  backup_hears_other_master: 'Every backup hears the master',
  advert_interval_mismatch: 'Every member advertises at the same interval',
  version_mismatch: 'Every member speaks the same VRRP version',
  auth_mismatch: 'Every member authenticates the same way',
  vip_mismatch: 'Every member has the same virtual addresses',
  unicast_mismatch: 'Unicast members name each other',
  priority_tie: 'No two members share a priority',
  config_faults: 'keepalived counts no configuration faults',
};

// An outcome in a word with its icon: never colour alone.
const STATUS = {
  fail: { icon: '✗', word: 'Failed' },
  unknown: { icon: '?', word: 'Unknown' },
  pass: { icon: '✓', word: 'Passed' },
};

// Failed first (blocking before warning), then unknown, then passed; the
// server's order within each.
const rank = (c) => (c.status === 'fail' ? (c.severity === 'blocking' ? 0 : 1) : c.status === 'unknown' ? 2 : 3);

// The verdict; its tooltip the first finding's sentence, else the first check's.
export function ReadinessBadge({ readiness }) {
  const v = readiness?.verdict || 'unknown';
  const why = readiness?.findings?.[0]?.message || readiness?.checks?.[0]?.message;
  return html`<span class=${`badge readiness readiness-${v}`} data-verdict=${v} title=${why || undefined}>
    <span class="sr">Failover readiness: </span>${VERDICT_TEXT[v] || v}</span>`;
}

// The verdict, when it was judged, and every check with its outcome.
export function ReadinessChecks({ readiness }) {
  if (!readiness) return html`<p class="empty">This server does not judge readiness.</p>`;
  const checks = (readiness.checks || []).map((c, i) => ({ c, i }))
    .sort((a, b) => rank(a.c) - rank(b.c) || a.i - b.i).map((x) => x.c);
  const count = (s) => checks.filter((c) => c.status === s).length;
  return html`<div class="readiness-panel" id="readiness">
    <p class="row readiness-verdict">
      <${ReadinessBadge} readiness=${readiness} />
      <span class="readiness-counts">${count('fail')} failed · ${count('unknown')} unknown · ${count('pass')} passed</span>
      ${readiness.checkedAt && html`<span class="muted checked-at">checked <${Time} at=${readiness.checkedAt} /></span>`}
    </p>
    <ul class="checks" aria-label="Readiness checks">
      ${checks.map((c) => {
        const st = STATUS[c.status] || { icon: '·', word: c.status };
        return html`<li key=${c.check} class=${`check check-${c.status} severity-${c.severity}`} data-check=${c.check} data-status=${c.status}>
          <span class="check-status"><span class="check-icon" aria-hidden="true">${st.icon}</span> ${st.word}</span>
          <div class="check-body">
            <div class="check-question">${QUESTION[c.check] || c.check}
              ${c.status === 'fail' && html` <span class=${`badge ${c.severity === 'blocking' ? 'bad' : 'warn'}`}>${c.severity}</span>`}</div>
            <p class="check-message">${c.message}</p>
          </div>
        </li>`;
      })}
    </ul>
  </div>`;
}
