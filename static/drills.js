// Failover drills on the cluster page: "Run failover drill" (operators and
// administrators) asks with the readiness verdict and findings first, the
// server drains the master, watches a backup take over, undrains it and
// reports; its steps arrive over the socket (DRILL_UPDATE, S.drills) and show
// as they happen. Below the history, the cluster's past drills.
import { useState } from 'preact/hooks';
import { signal } from '@preact/signals';
import { html, Time, Confirm, exact, useLoad } from './ui.js';
import * as S from './state.js';
import { get, post, query } from './api.js';
import { can } from './roles.js';
import { ReadinessBadge, verdictOf } from './readiness.js';
import { Table } from './table.js';
import { hostOf } from './members.js';

export const DRILL_STATUS = {
  running: ['Running', ''],
  passed: ['Passed', 'ok'],
  failed: ['Failed', 'bad'],
  rolled_back: ['Rolled back', 'warn'],
  refused: ['Refused', 'warn'],
};

function StatusBadge({ status }) {
  const [word, tone] = DRILL_STATUS[status] || [status, ''];
  return html`<span class=${`badge drill-status ${tone}`} data-status=${status}>${word}</span>`;
}

// Milliseconds as measured from keepalived's own transition times; '–' when
// not measured (yet).
const ms = (v) => (v == null ? '–' : `${v} ms`);

// A step's time: the clock time to the millisecond is what a drill is read by.
function StepTime({ at }) {
  const d = new Date(at);
  if (Number.isNaN(d.getTime())) return html`<span class="muted">${at}</span>`;
  const t = `${d.toLocaleTimeString()}.${String(d.getMilliseconds()).padStart(3, '0')}`;
  return html`<time datetime=${at} title=${exact(at)}>${t}</time>`;
}

// One drill: status, who and why, old → new master, the two times, every step
// and what it found.
export function DrillReport({ drill: d, id = 'drill-report' }) {
  const running = d.status === 'running';
  return html`<div class=${`drill-report drill-${d.status}`} id=${id} data-drill=${d.id} data-status=${d.status}
      aria-live=${running ? 'polite' : undefined}>
    <p class="row drill-head"><${StatusBadge} status=${d.status} />
      <span>Failover drill by ${d.by}, started <${Time} at=${d.startedAt} />${d.forced ? ', forced past readiness' : ''}${
        d.reason ? `: “${d.reason}”` : ''}</span></p>
    <dl class="facts drill-figures">
      <dt>Master</dt><dd data-figure="masters">${d.oldMaster || '?'} → ${d.newMaster || (running ? '…' : '–')}</dd>
      <dt>Takeover</dt><dd data-figure="takeover" title="From the old master leaving MASTER to the new one entering it, by keepalived's own transition times">${ms(d.takeoverMs)}</dd>
      <dt>Return</dt><dd data-figure="return" title="From the undrain to the old master entering MASTER again (preempt, its delay included); none when it stayed a backup">${ms(d.returnMs)}</dd>
    </dl>
    <ol class="drill-steps" aria-label="Steps">
      ${(d.steps || []).map((s, i) => html`<li key=${i}><${StepTime} at=${s.at} /> ${s.what}</li>`)}
      ${running && html`<li class="muted">…</li>`}
    </ol>
    ${d.findings?.length > 0 && html`<ul class="findings drill-findings" aria-label="Findings">
      ${d.findings.map((f, i) => html`<li key=${i}>${f}</li>`)}</ul>`}
  </div>`;
}

// The drills of this cluster the tab saw move, newest first.
function liveOf(key) {
  return [...S.drills.value.values()].filter((d) => d.cluster === key)
    .sort((a, b) => (b.startedAt || '').localeCompare(a.startedAt || ''));
}

// The drill's dialog: what it does, the readiness verdict and findings, the
// reason, and (only when the verdict is not ready) forcing past it.
function DrillDialog({ cluster, open, onClose, onStarted, onRefused }) {
  const [reason, setReason] = useState('');
  const [force, setForce] = useState(false);
  const [refusal, setRefusal] = useState(null);
  const verdict = verdictOf(cluster);
  const findings = cluster.readiness?.findings || [];
  const masters = cluster.members.filter((m) => m.online && m.reporting && m.instance.state === 'MASTER');
  async function run() {
    setRefusal(null);
    try {
      const r = await post(`/api/v1/clusters/${encodeURIComponent(cluster.key)}/drills`,
        { reason: reason.trim(), force: verdict !== 'ready' && force });
      onStarted(r.id);
    } catch (e) {
      // A refusal is stored with what the preflight found: shown here, and in
      // the past drills.
      if (e.status === 409 && e.data?.id) {
        setRefusal(Array.isArray(e.data.findings) ? e.data.findings : []);
        onRefused();
      }
      throw e;
    }
  }
  return html`<${Confirm} id="drill-dialog" open=${open} title=${`Run a failover drill on VRID ${cluster.vrid}?`}
    action="Run drill" onConfirm=${run} onClose=${onClose}
    text=${masters.length === 1
      ? `The server drains ${hostOf(masters[0])}, the master, and waits up to 15 s for a backup to take over (else undrains it at once); it measures the takeover from keepalived's own transition times, undrains the host and waits for the cluster to settle.`
      : 'The server drains the master, waits for a backup to take over, undrains it and reports. There is no single live MASTER now: it will refuse.'}>
    <div class="drill-preflight" id="drill-preflight">
      <p class="row"><${ReadinessBadge} readiness=${cluster.readiness} /><span>Would a failover work now?</span></p>
      ${findings.length ? html`<ul class="findings">${findings.map((f, i) => html`<li key=${i}>${f.message}</li>`)}</ul>`
        : html`<p class="muted">No findings.</p>`}
    </div>
    <div class="field">
      <label for="drill-reason">Reason</label>
      <input id="drill-reason" type="text" maxlength="150" placeholder="Why (e.g. quarterly drill)" value=${reason}
        onInput=${(e) => setReason(e.currentTarget.value)} />
    </div>
    ${verdict !== 'ready' && html`<label class="check-line"><input type="checkbox" id="drill-force" checked=${force}
      onChange=${(e) => setForce(e.currentTarget.checked)} /> Force past readiness: drill although a failover may not work</label>`}
    ${refusal && html`<div id="drill-refusal">${refusal.length
      ? html`<p>What the preflight found:</p><ul class="findings">${refusal.map((f, i) => html`<li key=${i}>${f}</li>`)}</ul>`
      : html`<p class="muted">The preflight found nothing else.</p>`}</div>`}
  <//>`;
}

// The cluster page's drill: the button (operators and administrators) and the
// newest drill of this cluster seen in this tab, live while it runs.
export function DrillAction({ cluster }) {
  const [open, setOpen] = useState(false);
  // A new dialog (empty reason, force off, no refusal) each time it opens.
  const [seq, setSeq] = useState(0);
  const shown = liveOf(cluster.key)[0];
  const running = shown?.status === 'running';
  async function started(id) {
    setOpen(false);
    // The socket brings every step; the report as it is now shows at once.
    try { S.noteDrill(await get(`/api/v1/drills/${encodeURIComponent(id)}`)); } catch { /* the socket brings it */ }
  }
  return html`<div class="drill" id="drill">
    ${can('drain') && html`<p class="row"><button type="button" id="drill-open" disabled=${running}
      onClick=${() => { setSeq(seq + 1); setOpen(true); }}>Run failover drill</button>
      ${running && html`<span class="muted">A drill is running.</span>`}</p>
      <${DrillDialog} key=${seq} cluster=${cluster} open=${open} onClose=${() => setOpen(false)} onStarted=${started}
        onRefused=${() => { refused.value++; }} />`}
    ${shown && html`<${DrillReport} drill=${shown} />`}
  </div>`;
}

// Bumped by a refusal (stored, but not sent over the socket): the past drills
// ask again.
const refused = signal(0);

const COLUMNS = [
  { key: 'status', label: 'Status', sort: (d) => d.status, render: (d) => html`<${StatusBadge} status=${d.status} />` },
  { key: 'when', label: 'When', sort: (d) => d.startedAt && -Date.parse(d.startedAt), render: (d) => html`<${Time} at=${d.startedAt} />` },
  { key: 'by', label: 'By', sort: (d) => d.by, render: (d) => d.by },
  { key: 'masters', label: 'Master', render: (d) => (d.oldMaster ? `${d.oldMaster} → ${d.newMaster || '–'}` : '–') },
  { key: 'takeover', label: 'Takeover', className: 'num', sort: (d) => d.takeoverMs, render: (d) => ms(d.takeoverMs) },
  { key: 'return', label: 'Return', className: 'num', sort: (d) => d.returnMs, render: (d) => ms(d.returnMs) },
  { key: 'reason', label: 'Reason', render: (d) => d.reason || '–' },
];

// The cluster's drills (GET /api/v1/drills?cluster=), newest first, the ones
// this tab saw move in their newest state; a row opens its report.
export function PastDrills({ clusterKey }) {
  const live = liveOf(clusterKey);
  // Asked again when a drill of this cluster changed status, or one was refused.
  const version = `${live.map((d) => `${d.id}:${d.status}`).join()}|${refused.value}`;
  const { data, error } = useLoad(() => get(`/api/v1/drills${query({ cluster: clusterKey, limit: 50 })}`), [clusterKey, version]);
  const [open, setOpen] = useState('');
  const byId = new Map((data || []).map((d) => [d.id, d]));
  for (const d of live) byId.set(d.id, d);
  const list = [...byId.values()].sort((a, b) => (b.startedAt || '').localeCompare(a.startedAt || ''));
  const selected = list.find((d) => d.id === open);
  const columns = [...COLUMNS, { key: 'open', label: '', render: (d) => html`<button type="button" class="small ghost"
    aria-expanded=${d.id === open} onClick=${() => setOpen(d.id === open ? '' : d.id)}>${d.id === open ? 'Hide' : 'Report'}</button>` }];
  return html`<div class="past-drills" id="past-drills">
    ${error && html`<p class="form-error" role="alert">The drills could not be ${data ? 'refreshed' : 'loaded'}: ${error}</p>`}
    ${!data && !error ? html`<p class="muted">Loading…</p>`
      : list.length ? html`<${Table} id="drill-list" className="drills" columns=${columns} rows=${list} rowKey=${(d) => d.id}
          rowAttrs=${(d) => ({ 'data-drill': d.id, 'data-status': d.status })} />`
        : html`<p class="empty">No failover drill has been run on this cluster.</p>`}
    ${selected && html`<${DrillReport} drill=${selected} id="past-drill-report" />`}
  </div>`;
}
