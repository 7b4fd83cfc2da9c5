// Settings: retention and interval per cleanup scheduler with its status, live
// from SCHEDULER_STATUS_UPDATE, and run-now buttons; the heartbeat with its last
// outcome; the per-kind level overrides as a table; the provisioning files'
// last reading. Every role reads them; only an administrator's forms are
// enabled and have buttons, and a key a provisioning file sets is read-only
// for everyone (the API answers 409).
import { useEffect, useState } from 'preact/hooks';
import { html, Time, useLoad, useTitle } from '../ui.js';
import * as S from '../state.js';
import { get, post, put } from '../api.js';
import { Field, Input, FieldError, useErrors, When, useDirtyGuard, differs } from '../form.js';
import { can, ReadOnly, ProvisionedBadge, ProvisionedNote } from '../roles.js';

const SCHEDULERS = [
  {
    name: 'notification-cleanup', title: 'Activity cleanup', run: '/api/v1/settings/cleanup/notifications', id: 'activity',
    keys: [
      ['notification_retention_days', 'Keep events for (days)', 'Measured against when they happened; 0 means the default 90.'],
      ['notification_retention_count', 'Always keep the newest (events)', 'However old they are.'],
      ['notification_cleanup_interval_hours', 'Run every (hours)', '0 switches the scheduler off.'],
    ],
  },
  {
    name: 'token-cleanup', title: 'Registration token cleanup', run: '/api/v1/settings/cleanup/invalid-tokens', id: 'tokens',
    keys: [
      ['token_retention_days', 'Keep used and expired tokens for (days)', '0 removes them on the next run.'],
      ['token_cleanup_interval_hours', 'Run every (hours)', '0 switches the scheduler off.'],
    ],
  },
];
const OVERRIDES = 'activity_level_overrides';
// Kinds the server and agents record (any other kind may be typed).
const KINDS = ['vrrp.state_changed', 'vrrp.track_changed', 'vrrp.instance_added', 'vrrp.instance_removed', 'keepalived.started', 'keepalived.stopped',
  'keepalived.unreadable', 'client.connected', 'client.disconnected', 'client.registered', 'scheduler.failed',
  'vrrp.master_changed', 'vrrp.split_brain', 'vrrp.master_lost', 'vrrp.incident_opened', 'vrrp.incident_updated', 'vrrp.incident_resolved',
  'cluster.readiness_changed'];
// The API refuses `none` for these: an incident must always be recorded.
const NEVER_NONE = ['vrrp.incident_opened', 'vrrp.incident_resolved'];
const OVERRIDE_LEVELS = ['trace', 'info', 'warning', 'error', 'none'];

function parseOverrides(text) {
  return (text || '').split(/[,\n]/).map((e) => e.trim()).filter(Boolean).map((e) => {
    const at = e.indexOf('=');
    return at < 0 ? { kind: e, level: '' } : { kind: e.slice(0, at).trim(), level: e.slice(at + 1).trim() };
  });
}

function Status({ status }) {
  if (!status) return html`<p class="muted">Status unknown.</p>`;
  const last = status.lastRun;
  return html`<dl class="facts scheduler-status">
    <dt>Now</dt><dd>${status.isRunning ? html`<span class="badge warn">running</span>` : 'idle'}</dd>
    <dt>Last run</dt><dd>${!last ? html`<span class="muted">never</span>` : html`
      <span class=${`badge ${last.status === 'success' ? 'ok' : 'bad'}`}>${last.status}</span>
      ${' '}${last.trigger === 'manual' ? 'run by hand' : 'on schedule'}, <${Time} at=${last.startedAt} />
      ${last.result && typeof last.result.removed === 'number' ? html`; removed <strong class="removed">${last.result.removed}</strong>` : ''}
      ${last.error ? html`; <span class="form-error">${last.error}</span>` : ''}`}</dd>
    <dt>Next run</dt><dd>${status.nextRun ? html`<${When} at=${status.nextRun} nowMs=${S.now.value} />` : html`<span class="muted">none (switched off)</span>`}</dd>
  </dl>`;
}

function Scheduler({ def, settings, fromFiles, onSaved }) {
  const initial = Object.fromEntries(def.keys.map(([k]) => [k, String(settings[k] ?? '')]));
  const [values, setValues] = useState(initial);
  const { errors, fail, clear } = useErrors();
  const [note, setNote] = useState('');
  useDirtyGuard(differs(values, initial));
  const status = S.schedulers.value[def.name];
  async function save(e) {
    e.preventDefault();
    clear();
    setNote('');
    const changed = Object.fromEntries(def.keys.map(([k]) => [k, values[k]]).filter(([k, v]) => v !== String(settings[k] ?? '')));
    if (!Object.keys(changed).length) { setNote('Nothing changed.'); return; }
    try {
      await put('/api/v1/settings/cleanup', changed);
      setNote('Saved; the scheduler restarted with it.');
      onSaved();
    } catch (err) { fail(err, def.keys.map(([k]) => k)); }
  }
  async function runNow() {
    setNote('');
    try {
      const r = await post(def.run);
      setNote(`Ran: removed ${r && typeof r.removed === 'number' ? r.removed : '?'}.`);
    } catch (err) { setNote(err.message); }
  }
  return html`<form class="card form" id=${`scheduler-${def.id}`} data-scheduler=${def.name} onSubmit=${save}>
    <h2>${def.title}</h2>
    <${Status} status=${status} />
    <fieldset class="plain" disabled=${!can('change')}>
    ${def.keys.map(([k, label, hint]) => html`<${Field} key=${k} label=${label} name=${k} error=${errors[k]}
      hint=${fromFiles[k] ? html`${hint} <${ProvisionedBadge} file=${fromFiles[k]} />` : hint}>
      <${Input} name=${k} values=${values} setValues=${setValues} errors=${errors} inputmode="numeric" disabled=${!!fromFiles[k]} /><//>`)}
    </fieldset>
    <${FieldError} error=${errors['']} />
    ${can('change') && html`<div class="row">
      <button type="submit" class="primary">Save</button>
      <button type="button" class="run-now" disabled=${status?.isRunning} onClick=${runNow}>Run now</button>
      ${note && html`<span role="status" class="note">${note}</span>`}
    </div>`}
  </form>`;
}

// The heartbeat: where the dead man's switch calls, how often and
// how, with the last outcome as the server reports it.
const HEARTBEAT = '/api/v1/settings/heartbeat';
const HEARTBEAT_KEYS = ['url', 'interval_seconds', 'method'];

function Heartbeat() {
  const [hb, setHb] = useState(null);
  const [values, setValues] = useState(null);
  const [base, setBase] = useState(null); // the values last loaded or saved
  const { errors, fail, clear } = useErrors();
  const [note, setNote] = useState('');
  useDirtyGuard(!!values && !!base && differs(values, base));
  async function load() {
    try {
      const h = await get(HEARTBEAT);
      setHb(h);
      const loaded = { url: h.url || '', interval_seconds: String(h.interval_seconds ?? 60), method: h.method || 'POST' };
      setValues((v) => v || loaded);
      setBase((b) => b || loaded);
    } catch (err) { setNote(err.message); }
  }
  useEffect(() => { load(); const t = setInterval(load, 5000); return () => clearInterval(t); }, []);
  if (!hb || !values) return html`<section class="card" id="heartbeat"><h2>Heartbeat</h2><p class="loading">Loading…</p></section>`;
  async function save(e) {
    e.preventDefault();
    clear();
    setNote('');
    try {
      setHb(await put(HEARTBEAT, values));
      setBase(values);
      setNote(values.url ? 'Saved; a beat goes out now.' : 'Saved; the heartbeat is off.');
    } catch (err) { fail(err, HEARTBEAT_KEYS); }
  }
  const st = hb.status || {};
  return html`<form class="card form" id="heartbeat" onSubmit=${save}>
    <h2>Heartbeat</h2>
    <p class="muted">A dead man's switch: the server calls this URL every interval while its database writer, cluster
      thread and HTTP listener all answer. Point it at a healthchecks.io check or an Uptime Kuma push monitor, which
      alert when the calls stop. Empty switches it off.</p>
    <dl class="facts heartbeat-status">
      <dt>Last success</dt><dd class="last-success">${st.lastSuccess ? html`<${Time} at=${st.lastSuccess} />` : html`<span class="muted">never</span>`}</dd>
      <dt>Last beat</dt><dd>${st.lastError
        ? html`<span class="badge bad">failed</span> <span class="form-error heartbeat-error">${st.lastError}</span>${st.consecutiveFailures > 1 ? ` (${st.consecutiveFailures} in a row)` : ''}`
        : st.lastAttempt ? html`<span class="badge ok">ok</span>` : html`<span class="muted">none yet</span>`}</dd>
      <dt>Next beat</dt><dd>${st.nextBeat ? html`<${When} at=${st.nextBeat} nowMs=${S.now.value} />` : html`<span class="muted">none (switched off)</span>`}</dd>
    </dl>
    <fieldset class="plain" disabled=${!can('change')}>
    <${Field} label="URL" name="url" error=${errors.url} hint="May hold a secret token; the server's log shows only its host.">
      <${Input} name="url" values=${values} setValues=${setValues} errors=${errors} type="url" autocomplete="off" /><//>
    <${Field} label="Every (seconds)" name="interval_seconds" error=${errors.interval_seconds} hint="10 to 3600.">
      <${Input} name="interval_seconds" values=${values} setValues=${setValues} errors=${errors} inputmode="numeric" /><//>
    <${Field} label="Method" name="method" error=${errors.method} hint="POST carries a JSON summary; GET only counts.">
      <select name="method" value=${values.method} onChange=${(e) => setValues({ ...values, method: e.currentTarget.value })}>
        <option value="POST">POST</option><option value="GET">GET</option>
      </select><//>
    </fieldset>
    <${FieldError} error=${errors['']} />
    ${can('change') && html`<div class="row">
      <button type="submit" class="primary">Save</button>
      ${note && html`<span role="status" class="note">${note}</span>`}
    </div>`}
  </form>`;
}

// Every kind the server and agents record with its own level; an override
// beside each (empty: its own level). Kinds overridden but not listed (typed
// before, e.g. a pattern) keep their rows.
const DEFAULT_LEVEL = {
  'vrrp.state_changed': 'error into FAULT, warning out of MASTER, else info',
  'vrrp.track_changed': 'as the agent sends it',
  'vrrp.instance_added': 'info', 'vrrp.instance_removed': 'info',
  'keepalived.started': 'info', 'keepalived.stopped': 'warning', 'keepalived.unreadable': 'error',
  'client.connected': 'trace', 'client.disconnected': 'trace', 'client.registered': 'info',
  'scheduler.failed': 'error', 'vrrp.master_changed': 'info', 'vrrp.split_brain': 'info', 'vrrp.master_lost': 'info',
  'vrrp.incident_opened': 'warning', 'vrrp.incident_updated': 'warning', 'vrrp.incident_resolved': 'info',
  // Chosen per event (src/clusters/confirm/events.rs); an override replaces both.
  'cluster.readiness_changed': 'warning when it worsens, else info',
};

function overrideMap(settings) {
  return Object.fromEntries(parseOverrides(settings[OVERRIDES]).map((r) => [r.kind, r.level]));
}

function Overrides({ settings, fromFiles, onSaved }) {
  const fromFile = fromFiles[OVERRIDES];
  const initial = overrideMap(settings);
  const [levels, setLevels] = useState(initial);
  const { errors, fail, clear } = useErrors();
  const [note, setNote] = useState('');
  useDirtyGuard(differs(levels, initial));
  const kinds = [...KINDS, ...Object.keys(levels).filter((k) => !KINDS.includes(k))];
  async function save(e) {
    e.preventDefault();
    clear();
    setNote('');
    const text = kinds.filter((k) => levels[k]).map((k) => `${k}=${levels[k]}`).join(',');
    try {
      await put('/api/v1/settings/cleanup', { [OVERRIDES]: text });
      setNote('Saved; applies to the next event written.');
      onSaved();
    } catch (err) { fail(err, [OVERRIDES]); }
  }
  return html`<form class="card form" id="overrides" onSubmit=${save}>
    <h2>Level per kind</h2>
    <p class="muted">Record a kind at another level, or not at all (none). Events already stored keep their level.</p>
    ${fromFile && html`<${ProvisionedNote} what="This table" file=${fromFile} />`}
    <div class="table-wrap"><table id="override-table" class="stack">
      <thead><tr><th scope="col">Kind</th><th scope="col">Own level</th><th scope="col">Recorded at</th></tr></thead>
      <tbody>${kinds.map((k) => html`<tr key=${k} data-kind=${k} class=${levels[k] ? 'overridden' : ''}>
        <td data-label="Kind"><code>${k}</code></td>
        <td data-label="Own level" class="muted">${DEFAULT_LEVEL[k] || '–'}</td>
        <td data-label="Recorded at"><select aria-label=${`Level of ${k}`} value=${levels[k] || ''} class="level" disabled=${!can('change') || !!fromFile}
          onChange=${(e) => setLevels({ ...levels, [k]: e.currentTarget.value })}>
          <option value="">its own level</option>
          ${OVERRIDE_LEVELS.map((l) => html`<option key=${l} value=${l} disabled=${l === 'none' && NEVER_NONE.includes(k)}
            title=${l === 'none' && NEVER_NONE.includes(k) ? 'Incidents are always recorded' : undefined}>${l}</option>`)}
        </select></td>
      </tr>`)}</tbody>
    </table></div>
    <${FieldError} name=${OVERRIDES} error=${errors[OVERRIDES] || errors['']} />
    ${can('change') && !fromFile && html`<div class="row">
      <button type="submit" class="primary">Save</button>
      ${note && html`<span role="status" class="note">${note}</span>`}
    </div>`}
  </form>`;
}

// The provisioning files (configuration as files): where they are, whether
// the last reading (start or SIGHUP) was applied, and what they define.
function Provisioning({ status }) {
  if (!status) return null;
  const defined = [
    ...(status.webhooks || []).map((w) => html`<li key=${`w-${w.id}`}>webhook <a href=${`/webhooks/${encodeURIComponent(w.id)}`}>${w.name}</a> <span class="muted">(${w.file})</span></li>`),
    ...Object.entries(status.settings || {}).map(([k, f]) => html`<li key=${`s-${k}`}>setting <code>${k}</code> <span class="muted">(${f})</span></li>`),
    ...(status.silences || []).map((s) => html`<li key=${`m-${s.id}`}>silence ${s.name} <span class="muted">(${s.file}, ${s.status})</span></li>`),
  ];
  return html`<section class="card" id="provisioning">
    <h2>Configuration files</h2>
    <p class="muted">Webhooks, settings and silences may be defined in <code>${status.directory}/*.yaml</code>${' '}on the server,
      read at start and on SIGHUP (<code>systemctl reload vrrp-monitor</code>). What they define is read-only here.</p>
    <dl class="facts">
      <dt>Last reading</dt><dd id="provisioning-outcome">${!status.lastAttemptAt ? html`<span class="muted">none</span>` : html`
        <span class=${`badge ${status.ok ? 'ok' : 'bad'}`}>${status.ok ? 'applied' : 'not applied'}</span>
        ${' '}${status.lastTrigger === 'SIGHUP' ? 'on SIGHUP' : 'at start'}, <${Time} at=${status.lastAttemptAt} />`}</dd>
      ${status.error && html`<dt>Error</dt><dd><span class="form-error" id="provisioning-error">${status.error}</span>
        <br /><span class="muted">The configuration applied <${Time} at=${status.appliedAt} /> stays in force.</span></dd>`}
      <dt>Files</dt><dd>${status.files && status.files.length ? status.files.join(', ') : html`<span class="muted">none</span>`}</dd>
    </dl>
    ${defined.length > 0 && html`<ul class="provisioned-list">${defined}</ul>`}
  </section>`;
}

export function Settings() {
  useTitle('Settings');
  const [provisioning, setProvisioning] = useState(null);
  const { data: settings, error, reload: load } = useLoad(async () => {
    const [s, st, prov] = await Promise.all([get('/api/v1/settings/cleanup'), get('/api/v1/settings/scheduler-status'),
      get('/api/v1/settings/provisioning').catch(() => null)]);
    // Pushed updates that arrived meanwhile are newer than this answer.
    S.schedulers.value = { ...(st?.schedulers || {}), ...S.schedulers.value };
    setProvisioning(prov);
    return s || {};
  });
  const fromFiles = provisioning?.settings || {};
  if (!settings) return html`<section><h1>Settings</h1>${error ? html`<p class="form-error">${error}</p>` : html`<p class="loading">Loading…</p>`}</section>`;
  return html`<section class="admin">
    <h1>Settings</h1>
    ${!can('change') && html`<${ReadOnly} what="the settings" />`}
    ${provisioning && !provisioning.ok && provisioning.error && html`<p class="callout bad" id="provisioning-banner" role="alert">
      The provisioning files were not applied: <code>${provisioning.error}</code>. The configuration in force stays;${' '}
      <a href="#provisioning">configuration files</a>.</p>`}
    <div class="grid-2">
      ${SCHEDULERS.map((d) => html`<${Scheduler} key=${d.name} def=${d} settings=${settings} fromFiles=${fromFiles} onSaved=${load} />`)}
    </div>
    <${Heartbeat} />
    <${Overrides} settings=${settings} fromFiles=${fromFiles} onSaved=${load} />
    <${Provisioning} status=${provisioning} />
  </section>`;
}
