// The webhook editor: every field, a start from a ready-made template, a live
// preview of the body for a sample event rendered by the server's own engine
// (POST /api/v1/webhooks/preview; the browser never renders templates), the
// template's error located as a save would report it, and a test send. Below
// administrator the stored webhook is shown read-only, without the preview (a
// POST the server refuses to that role). A webhook a provisioning file defines
// is read-only for everyone (the API answers 409): no save, no delete; an
// administrator still sees the preview and may send a test.
import { useEffect, useRef, useState } from 'preact/hooks';
import { html, Confirm, useTitle } from '../ui.js';
import { get, post, put, del } from '../api.js';
import { navigate } from '../router.js';
import { Field, Input, FieldError, useErrors, useDirtyGuard, useEscape, differs } from '../form.js';
import { can, ReadOnly, ProvisionedNote } from '../roles.js';

const LEVELS = ['trace', 'info', 'warning', 'error'];
const FIELDS = ['name', 'url', 'method', 'headers', 'bodyTemplate', 'minLevel', 'kinds', 'timeoutMs', 'enabled'];
const BLANK = { name: '', enabled: true, url: '', method: 'POST', headersText: '', bodyTemplate: '{\n  "text": "{{event.message}}"\n}',
  minLevel: 'warning', kindsText: '', timeoutMs: '10000' };

function valuesOf(w) {
  return {
    name: w.name || '', enabled: w.enabled !== false, url: w.url || '', method: w.method || 'POST',
    headersText: Object.entries(w.headers || {}).map(([k, v]) => `${k}: ${v}`).join('\n'),
    bodyTemplate: w.bodyTemplate || '', minLevel: w.minLevel || 'warning', kindsText: (w.kinds || []).join(', '),
    timeoutMs: String(w.timeoutMs ?? 10000),
  };
}

// Header lines `Name: value`; a line without a colon is the form's own error.
function parseHeaders(text) {
  const out = {};
  const lines = text.split('\n').map((l) => l.trim()).filter(Boolean);
  for (const [i, line] of lines.entries()) {
    const at = line.indexOf(':');
    if (at < 1) throw new Error(`headers: line ${i + 1} is not "Name: value"`);
    out[line.slice(0, at).trim()] = line.slice(at + 1).trim();
  }
  return out;
}

// The API body from the form; the API judges every value (numbers that are not
// numbers are passed as typed, so its own text comes back).
function bodyOf(v) {
  const t = v.timeoutMs.trim();
  return {
    name: v.name, enabled: v.enabled, url: v.url, method: v.method, headers: parseHeaders(v.headersText),
    bodyTemplate: v.bodyTemplate, minLevel: v.minLevel,
    kinds: v.kindsText.split(',').map((k) => k.trim()).filter(Boolean),
    timeoutMs: t === '' ? null : /^\d+$/.test(t) ? Number(t) : t,
  };
}

function ReadyMade({ onPick }) {
  const [list, setList] = useState([]);
  useEffect(() => { get('/api/v1/webhooks/templates').then((l) => setList(l || [])).catch(() => {}); }, []);
  return html`<div class="card" id="ready-made">
    <h2>Start from a ready-made template</h2>
    <div class="ready-list">
      ${list.map((r) => html`<button type="button" key=${r.id} class="ready" data-template=${r.id} onClick=${() => onPick(r.webhook)}>
        <strong>${r.name}</strong><span class="muted">${r.description}</span></button>`)}
    </div>
  </div>`;
}

// `shown` lives in the editor: a located error also goes beside its field.
function Preview({ values, shown, setShown }) {
  const [kind, setKind] = useState('');
  const seq = useRef(0);
  useEffect(() => {
    const mine = ++seq.current;
    const timer = setTimeout(async () => {
      let body;
      try { body = bodyOf(values); } catch (e) { setShown({ ok: false, field: 'headers', error: e.message }); return; }
      try {
        const r = await post('/api/v1/webhooks/preview', { ...body, sampleKind: kind || undefined });
        if (mine === seq.current) setShown(r);
      } catch (e) {
        if (mine === seq.current) setShown({ ok: false, field: '', error: e.message });
      }
    }, 250);
    return () => clearTimeout(timer);
  }, [values, kind]);
  return html`<div class="card preview" id="preview" aria-live="polite">
    <div class="row">
      <h2>Preview</h2>
      <label>Sample event <select id="sample-kind" value=${kind} onChange=${(e) => setKind(e.currentTarget.value)}>
        <option value="">first of the webhook's kinds</option>
        ${(shown.kinds || []).map((k) => html`<option value=${k} key=${k}>${k}</option>`)}
      </select></label>
    </div>
    ${shown.state === 'waiting' && html`<p class="muted">Rendering…</p>`}
    ${shown.ok === false && html`<p class="form-error" role="alert" id="preview-error">${shown.error}</p>`}
    ${shown.ok && html`<p class="muted" id="preview-kind">${shown.kind}: ${shown.message}</p>
      <p class="wrap"><code id="preview-url">${shown.method} ${shown.url}</code></p>
      <pre class="code" id="preview-body">${JSON.stringify(shown.body, null, 2)}</pre>`}
  </div>`;
}

function TestResult({ result }) {
  if (!result) return null;
  if (result.pending) return html`<p role="status" id="test-result">Sending…</p>`;
  return html`<div class=${`callout ${result.ok ? 'ok' : 'bad'}`} role="status" id="test-result">
    <p><strong>${result.ok ? 'Delivered' : 'Not delivered'}</strong>: ${result.status != null ? `answered ${result.status}` : 'no answer'}${result.error ? `; ${result.error}` : ''}</p>
    ${result.response && html`<p>The receiver answered:</p><pre class="code" id="test-response">${result.response}</pre>`}
  </div>`;
}

export function WebhookEditor({ id }) {
  const isNew = id === 'new';
  const [values, setValues] = useState(isNew ? null : undefined);
  const [saved, setSaved] = useState(null);
  const { errors, fail, clear, set } = useErrors();
  const [status, setStatus] = useState('');
  const [test, setTest] = useState(null);
  const [confirm, setConfirm] = useState(false);
  const [preview, setPreview] = useState({ state: 'waiting' });
  // What the form held when loaded or last saved: typing beyond it is unsaved.
  const [base, setBase] = useState(null);
  useDirtyGuard(!!values && !!base && differs(values, base));
  const start = (v) => { setValues(v); setBase(v); };
  useEscape(() => navigate('/webhooks'));
  useTitle(isNew ? 'New webhook' : 'Webhook');
  const admin = can('change');
  // Defined by a file on the server: read-only here whatever the role.
  const fromFile = !isNew && saved ? saved.provisionedFrom : null;
  const editable = admin && !fromFile;
  useEffect(() => {
    if (!isNew) {
      get('/api/v1/webhooks').then((list) => {
        const w = (list || []).find((x) => x.id === id);
        setSaved(w || null);
        start(w ? valuesOf(w) : null);
      }).catch((e) => setStatus(e.message));
    }
  }, [id]);
  if (values === undefined) return html`<section><p class="loading">Loading…</p></section>`;
  if (!isNew && !saved) return html`<section><h1>Webhook</h1><p class="empty">No such webhook.</p><p><a href="/webhooks">All webhooks</a></p></section>`;
  if (values === null && !admin) {
    return html`<section class="admin"><p><a href="/webhooks">← Webhooks</a></p><h1>New webhook</h1>
      <${ReadOnly} what="webhooks" /></section>`;
  }
  if (values === null) {
    return html`<section class="admin"><p><a href="/webhooks">← Webhooks</a></p><h1>New webhook</h1>
      <${ReadyMade} onPick=${(w) => start(valuesOf(w))} />
      <p><button type="button" id="start-blank" onClick=${() => start({ ...BLANK })}>Start blank</button></p></section>`;
  }
  // The save's error first; else what the preview located (the same text).
  const field = (name) => errors[name] || (preview.ok === false && preview.field === name ? preview.error : '');
  const setV = setValues;

  async function save(e) {
    e.preventDefault();
    if (!editable) return;
    clear();
    setStatus('');
    let body;
    try { body = bodyOf(values); } catch (err) { set('headers', err.message); return; }
    try {
      if (isNew) {
        const w = await post('/api/v1/webhooks', body);
        navigate(`/webhooks/${encodeURIComponent(w.id)}`, true, true);
      } else {
        const w = await put(`/api/v1/webhooks/${encodeURIComponent(id)}`, body);
        setSaved(w);
        setBase(values);
        setStatus('Saved.');
      }
    } catch (err) { fail(err, FIELDS); }
  }
  async function sendTest() {
    clear();
    let body;
    try { body = bodyOf(values); } catch (err) { set('headers', err.message); return; }
    setTest({ pending: true });
    try { setTest(await post('/api/v1/webhooks/test', body)); } catch (err) { setTest(null); fail(err, FIELDS); }
  }
  async function remove() {
    await del(`/api/v1/webhooks/${encodeURIComponent(id)}`);
    setConfirm(false);
    navigate('/webhooks', false, true);
  }
  const text = (name, label, hint, rest = {}) => html`<${Field} label=${label} name=${name} error=${field(name)} hint=${hint}>
    <${Input} name=${name} values=${values} setValues=${setV} errors=${errors} ...${rest} /><//>`;

  return html`<section class="admin webhook-editor">
    <p><a href="/webhooks">← Webhooks</a></p>
    <h1>${isNew ? 'New webhook' : saved.name}</h1>
    ${fromFile ? html`<${ProvisionedNote} what="This webhook" file=${fromFile} />` : !admin && html`<${ReadOnly} what="webhooks" />`}
    <div class="editor-grid">
      <form class="card form" id="webhook-form" onSubmit=${save}>
        <fieldset class="plain" disabled=${!editable}>
        ${text('name', 'Name')}
        <div class="field"><label class="switch"><input type="checkbox" id="f-enabled" checked=${values.enabled}
          onChange=${(e) => setV({ ...values, enabled: e.currentTarget.checked })} /> Enabled</label></div>
        <div class="row two">
          <${Field} label="Method" name="method" error=${field('method')}>
            <select id="f-method" value=${values.method} onChange=${(e) => setV({ ...values, method: e.currentTarget.value })}>
              <option>POST</option><option>PUT</option></select><//>
          ${text('url', 'URL', 'http:// or https://; may hold placeholders.', { placeholder: 'https://hooks.example/…' })}
        </div>
        <${Field} label="Headers" name="headers" error=${field('headers')} hint="One per line, Name: value; values may hold placeholders. Content-Type: application/json is always sent.">
          <textarea id="f-headers" rows="2" value=${values.headersText} onInput=${(e) => setV({ ...values, headersText: e.currentTarget.value })}></textarea><//>
        <${Field} label="Body template" name="bodyTemplate" error=${field('bodyTemplate')}
          hint=${html`JSON with {{…}} placeholders and $if/$map/$join directives: see <a href="/docs/webhook-templates" target="_blank" rel="noopener" id="template-docs">the template language</a>.`}>
          <textarea id="f-bodyTemplate" class="code" rows="14" spellcheck="false" value=${values.bodyTemplate}
            onInput=${(e) => setV({ ...values, bodyTemplate: e.currentTarget.value })}></textarea><//>
        <div class="row two">
          <${Field} label="Minimum level" name="minLevel" error=${field('minLevel')}>
            <select id="f-minLevel" value=${values.minLevel} onChange=${(e) => setV({ ...values, minLevel: e.currentTarget.value })}>
              ${LEVELS.map((l) => html`<option key=${l}>${l}</option>`)}</select><//>
          ${text('timeoutMs', 'Timeout (ms)', '1000 to 60000 per attempt.', { inputmode: 'numeric' })}
        </div>
        ${text('kindsText', 'Kinds', 'Comma-separated; * is a wildcard (vrrp.incident_*); empty sends every kind.', { placeholder: 'vrrp.incident_*, keepalived.*' })}
        <${FieldError} name="kinds" error=${field('kinds')} />
        </fieldset>
        <${FieldError} error=${errors['']} />
        ${admin && html`<div class="row">
          ${editable && html`<button type="submit" class="primary" id="save-webhook">${isNew ? 'Create webhook' : 'Save'}</button>`}
          <button type="button" id="send-test" onClick=${sendTest}>Send test</button>
          ${!isNew && editable && html`<button type="button" class="danger" id="delete-webhook" onClick=${() => setConfirm(true)}>Delete…</button>`}
          ${status && html`<span role="status" id="webhook-status">${status}</span>`}
        </div>`}
        <${TestResult} result=${test} />
        ${saved && saved.lastAttemptAt && html`<p class="muted">Last delivery: ${saved.lastStatus ?? 'no answer'}${saved.lastError ? `, ${saved.lastError}` : ''} at ${saved.lastAttemptAt}.</p>`}
      </form>
      ${admin && html`<${Preview} values=${values} shown=${preview} setShown=${setPreview} />`}
    </div>
    ${!isNew && html`<${Confirm} open=${confirm} title=${`Delete ${saved.name}?`} action="Delete webhook"
      text="Events are no longer sent to it; deliveries waiting for it are dropped." onConfirm=${remove} onClose=${() => setConfirm(false)} />`}
  </section>`;
}
