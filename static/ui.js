// Small pieces every view uses: html (htm bound to Preact), relative times with
// the exact time on hover, health badges, the confirmation dialog, a secret
// shown once with its copy button.
import { h } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import htm from 'htm';
import { now } from './state.js';

export const html = htm.bind(h);

export function ago(iso, nowMs) {
  const t = Date.parse(iso);
  if (Number.isNaN(t)) return '';
  const s = Math.round((nowMs - t) / 1000);
  if (s < 45) return s < -45 ? 'in the future' : 'just now';
  const m = Math.round(s / 60);
  if (m < 60) return `${m} min ago`;
  const hr = Math.round(m / 60);
  if (hr < 48) return `${hr} h ago`;
  return `${Math.round(hr / 24)} days ago`;
}

export function exact(iso) {
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? String(iso) : d.toLocaleString();
}

// "3 min ago" that says the exact time on hover (and to screen readers).
export function Time({ at }) {
  if (!at) return html`<span class="muted">never</span>`;
  return html`<time datetime=${at} title=${exact(at)}>${ago(at, now.value)}</time>`;
}

export function duration(seconds) {
  const s = Math.max(0, Math.round(seconds));
  const d = Math.floor(s / 86400), hr = Math.floor((s % 86400) / 3600), m = Math.floor((s % 3600) / 60);
  if (d) return `${d} d ${hr} h`;
  if (hr) return `${hr} h ${m} min`;
  if (m) return `${m} min`;
  return `${s} s`;
}

export const HEALTH_TEXT = {
  'split-brain': 'Split brain', 'no-master': 'No master', 'vip-mismatch': 'Address mismatch',
  degraded: 'Degraded', unknown: 'Unknown', ok: 'OK',
};

export function Health({ health }) {
  return html`<span class=${`badge health-${health}`}>${HEALTH_TEXT[health] || health}</span>`;
}

export function Level({ level }) {
  return html`<span class=${`badge level-${level}`}>${level}</span>`;
}

export function Dot({ online }) {
  return html`<span class=${online ? 'dot on' : 'dot off'} role="img" aria-label=${online ? 'online' : 'offline'}></span>`;
}

// The one confirmation dialog: asks before anything destroys or throws work
// away. Cancel (or Esc, the native <dialog>'s) keeps everything. `onConfirm`
// may return a promise: while it runs the buttons wait; if it fails, its error
// is shown inside the dialog, which stays open; the caller closes it on success.
let dialogSeq = 0;
// `children` (fields, what a check found) follow the text.
export function Confirm({ open, title, text, action, cancel = 'Cancel', onConfirm, onClose, id, children }) {
  const ref = useRef(null);
  const [titleId] = useState(() => `dialog-title-${++dialogSeq}`);
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);
  // Set when we shut the dialog ourselves: its `close` event is ours, not Esc.
  const shutByUs = useRef(false);
  useEffect(() => {
    const d = ref.current;
    if (!d) return;
    if (open && !d.open) { setError(''); d.showModal(); }
    if (!open && d.open) { shutByUs.current = true; d.close(); }
  }, [open]);
  const run = async () => {
    setBusy(true);
    setError('');
    try { await onConfirm(); } catch (e) { setError(e.message || String(e)); } finally { setBusy(false); }
  };
  // The close event is queued: after Cancel then a quick reopen it arrives
  // late, maybe after the new `open` rendered but before the effect showed the
  // dialog again, when it would read as Esc and shut the reopened dialog (the
  // flaky "Delete… does nothing" the browser tests caught). So the event of a
  // close we made is ours and ignored; only one we did not make (Esc) counts.
  const closed = (e) => {
    if (shutByUs.current) { shutByUs.current = false; return; }
    if (open && !e.currentTarget.open) onClose();
  };
  return html`<dialog ref=${ref} id=${id} class="dialog" onClose=${closed} aria-labelledby=${titleId}>
    <h2 id=${titleId}>${title}</h2>
    ${text && html`<p>${text}</p>`}
    ${children}
    ${error && html`<p class="form-error" role="alert" data-error-for="dialog">${error}</p>`}
    <div class="row end">
      <button type="button" class="cancel" disabled=${busy} onClick=${onClose}>${cancel}</button>
      <button type="button" class="danger confirm" disabled=${busy} onClick=${run}>${action}</button>
    </div>
  </dialog>`;
}

// The page's title while a view is shown ("Clusters · vrrp-monitor").
export function useTitle(title) {
  useEffect(() => { document.title = `${title} · vrrp-monitor`; }, [title]);
}

// Loads what a view shows: `fetch()` once (and again when `deps` change or
// `reload()` is called). {data: null until the first answer, error: the last
// failure's text or '', reload}. A later answer of an older load is dropped.
export function useLoad(fetch, deps = []) {
  const [state, setState] = useState({ data: null, error: '' });
  const seq = useRef(0);
  const reload = () => {
    const n = ++seq.current;
    return Promise.resolve().then(fetch).then(
      (data) => { if (n === seq.current) setState({ data, error: '' }); },
      (e) => { if (n === seq.current) setState((s) => ({ data: s.data, error: e.message || String(e) })); },
    );
  };
  useEffect(() => { reload(); return () => { seq.current++; }; }, deps);
  return { data: state.data, error: state.error, reload, set: (data) => setState({ data, error: '' }) };
}

// Shows `items` a page at a time: long lists stay cheap to render.
export function Paged({ items, size = 100, render, empty }) {
  const [limit, setLimit] = useState(size);
  if (!items.length) return html`<p class="empty">${empty}</p>`;
  return html`${items.slice(0, limit).map(render)}
    ${items.length > limit && html`<div class="more"><button type="button" onClick=${() => setLimit(limit + size)}>
      Show ${Math.min(size, items.length - limit)} more (${items.length - limit} not shown)</button></div>`}`;
}

// A secret shown once (a registration or API token) with a Copy button; `id`
// is the code element's, `buttonId` the button's.
export function Copy({ text, id, buttonId }) {
  const [done, setDone] = useState('');
  const ref = useRef(null);
  async function copy() {
    try {
      await navigator.clipboard.writeText(text);
      setDone('Copied.');
    } catch {
      // No clipboard outside a secure context: select it for Ctrl+C instead.
      const r = document.createRange();
      r.selectNodeContents(ref.current);
      const sel = getSelection(); sel.removeAllRanges(); sel.addRange(r);
      setDone('Selected: press Ctrl+C to copy.');
    }
  }
  return html`<span class="copy"><code ref=${ref} id=${id}>${text}</code>
    <button type="button" class="small" id=${buttonId} onClick=${copy}>Copy</button>
    ${done && html`<span class="muted" role="status">${done}</span>`}</span>`;
}
