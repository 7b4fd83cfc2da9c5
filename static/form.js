// Form pieces the administration views share. The API is the one judge of a
// form: its 400 text (`<field>: <message>`, or one of its known sentences) is
// shown beside the field it names, and a refused form keeps what was typed.
import { useEffect, useRef, useState } from 'preact/hooks';
import { html, ago, exact } from './ui.js';
import { addLeaveGuard } from './router.js';

// Every editor's guard: while `dirty` (typed but not saved), leaving the page
// inside the app asks first (the shell's "Leave without saving?"), and closing
// or reloading the tab asks the browser's way.
export function useDirtyGuard(dirty) {
  const now = useRef(dirty);
  now.current = dirty;
  useEffect(() => {
    const remove = addLeaveGuard(() => now.current);
    const unload = (e) => { if (now.current) { e.preventDefault(); e.returnValue = ''; } };
    addEventListener('beforeunload', unload);
    return () => { remove(); removeEventListener('beforeunload', unload); };
  }, []);
}

// Esc in an editor (not in an open dialog, which handles its own): `onEscape`.
export function useEscape(onEscape) {
  const f = useRef(onEscape);
  f.current = onEscape;
  useEffect(() => {
    const onKey = (e) => {
      if (e.key !== 'Escape' || e.defaultPrevented || document.querySelector('dialog[open]')) return;
      f.current();
    };
    addEventListener('keydown', onKey);
    return () => removeEventListener('keydown', onKey);
  }, []);
}

// Whether `values` differ from `initial` (both plain data).
export const differs = (values, initial) => JSON.stringify(values) !== JSON.stringify(initial);

// The field an API error names: the path before the first ": " (its head up to
// a `.` or `[`), or the field a known sentence of the API is about.
export function fieldOf(message, known = {}) {
  for (const [text, field] of Object.entries(known)) {
    if (message.includes(text)) return field;
  }
  const m = /^([A-Za-z_][A-Za-z0-9_]*)(?:[.[][^:]*)?: /.exec(message || '');
  return m ? m[1] : '';
}

// Errors of one form: {field: text}; '' holds an error that names no field.
export function useErrors() {
  const [errors, setErrors] = useState({});
  return {
    errors,
    clear: () => setErrors({}),
    set: (field, text) => setErrors({ [field]: text }),
    fail: (e, fields, known) => {
      const f = fieldOf(e.message, known);
      setErrors({ [fields.includes(f) ? f : '']: e.message });
    },
  };
}

export function FieldError({ name, error }) {
  if (!error) return null;
  return html`<p class="form-error" role="alert" data-error-for=${name || 'form'} id=${`${name || 'form'}-error`}>${error}</p>`;
}

// A labelled field; `children` is the control, whose id must be `f-<name>`.
export function Field({ label, name, error, hint, children }) {
  return html`<div class=${`field${error ? ' invalid' : ''}`}>
    <label for=${`f-${name}`}>${label}</label>
    ${children}
    ${hint && html`<small class="muted">${hint}</small>`}
    <${FieldError} name=${name} error=${error} />
  </div>`;
}

// A text input bound to form state `values[name]`.
export function Input({ name, values, setValues, errors, type = 'text', ...rest }) {
  return html`<input id=${`f-${name}`} name=${name} type=${type} value=${values[name] ?? ''}
    aria-invalid=${errors && errors[name] ? 'true' : undefined}
    aria-describedby=${errors && errors[name] ? `${name}-error` : undefined}
    onInput=${(e) => setValues({ ...values, [name]: e.currentTarget.value })} ...${rest} />`;
}

// Countdown text to an ISO time ("12:34 left"), or '' once passed.
export function left(iso, nowMs) {
  const s = Math.floor((Date.parse(iso) - nowMs) / 1000);
  if (!(s > 0)) return '';
  return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, '0')}`;
}

// A time that may lie ahead ("in 24 h") or behind ("3 min ago"), exact on hover.
export function When({ at, nowMs }) {
  if (!at) return html`<span class="muted">never</span>`;
  const t = Date.parse(at);
  const s = Math.round((t - nowMs) / 1000);
  let text;
  if (Number.isNaN(t)) text = String(at);
  else if (s <= 45) text = ago(at, nowMs);
  else if (s < 3600) text = `in ${Math.round(s / 60)} min`;
  else if (s < 48 * 3600) text = `in ${Math.round(s / 3600)} h`;
  else text = `in ${Math.round(s / 86400)} days`;
  return html`<time datetime=${at} title=${exact(at)}>${text}</time>`;
}
