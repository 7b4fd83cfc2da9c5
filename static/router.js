// The dashboard's routes live in the URL (deep links work: the server answers
// index.html for them). Filters are query parameters, so a view can be shared.
import { signal } from '@preact/signals';

export const route = signal(readLocation());

function readLocation() {
  return { path: location.pathname, params: new URLSearchParams(location.search) };
}

export function currentPath() {
  return location.pathname + location.search;
}

// Forms with unsaved typing (form.js useDirtyGuard): while any says dirty,
// leaving asks first (`pendingLeave` holds where to; the shell shows the dialog).
const leaveGuards = new Set();
export function addLeaveGuard(isDirty) {
  leaveGuards.add(isDirty);
  return () => leaveGuards.delete(isDirty);
}
const dirty = () => [...leaveGuards].some((f) => f());
export const pendingLeave = signal(null); // {to, replace} or null

// `force`: leave even with unsaved typing (after a save, at logout).
export function navigate(to, replace = false, force = false) {
  if (to === currentPath()) return;
  if (!force && dirty()) { pendingLeave.value = { to, replace }; return; }
  if (replace) history.replaceState(null, '', to);
  else history.pushState(null, '', to);
  route.value = readLocation();
  window.scrollTo(0, 0);
}

// Changes query parameters of the current view in place (no new history entry).
export function setParams(changes) {
  const p = new URLSearchParams(location.search);
  for (const [k, v] of Object.entries(changes)) {
    if (v === undefined || v === null || v === '' || v === false) p.delete(k);
    else p.set(k, String(v));
  }
  const s = p.toString();
  history.replaceState(null, '', location.pathname + (s ? `?${s}` : ''));
  route.value = readLocation();
}

export function confirmLeave() {
  const p = pendingLeave.value;
  pendingLeave.value = null;
  if (p) navigate(p.to, p.replace, true);
}
export function stayHere() { pendingLeave.value = null; }

addEventListener('popstate', () => {
  if (dirty()) {
    // Back or forward away from unsaved typing: stay, and ask.
    const to = location.pathname + location.search;
    const here = route.value;
    const q = here.params.toString();
    history.pushState(null, '', here.path + (q ? `?${q}` : ''));
    pendingLeave.value = { to, replace: false };
    return;
  }
  route.value = readLocation();
});

// Same-origin links navigate inside the app.
addEventListener('click', (e) => {
  const a = e.target.closest && e.target.closest('a[href]');
  if (!a || e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || a.target) return;
  const url = new URL(a.href, location.href);
  if (url.origin !== location.origin || url.pathname.startsWith('/api/') || url.pathname.startsWith('/docs/')) return;
  e.preventDefault();
  navigate(url.pathname + url.search);
});
