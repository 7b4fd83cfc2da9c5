// The shell: session check, navigation, live indicator, the "standby" badge of
// a server pair, theme switch, toasts, keyboard shortcuts; picks the view for
// the current route.
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { signal } from '@preact/signals';
import { html, Confirm } from './ui.js';
import * as S from './state.js';
import { route, navigate, pendingLeave, confirmLeave, stayHere } from './router.js';
import { get, post, setUnauthorizedHandler, goLogin } from './api.js';
import * as live from './live.js';
import { Login } from './views/login.js';
import { Overview } from './views/overview.js';
import { Clusters } from './views/clusters.js';
import { ClusterDetail } from './views/cluster.js';
import { Clients, ClientDetail } from './views/clients.js';
import { Activity } from './views/activity.js';
import { Silences } from './views/silences.js';
import { can, role, roleText } from './roles.js';

// The administration views load when first opened: the pages watched all day
// (overview, clusters, activity) do not fetch them.
function lazy(load, name) {
  let Component = null;
  let pending = null;
  return function LazyView(props) {
    const [failed, setFailed] = useState('');
    const [, loaded] = useState(0);
    useEffect(() => {
      if (Component) return;
      pending = pending || load().then((m) => { Component = m[name]; });
      pending.then(() => loaded((n) => n + 1), (e) => { pending = null; setFailed(e.message || String(e)); });
    }, []);
    if (Component) return html`<${Component} ...${props} />`;
    if (failed) return html`<section><p class="form-error" role="alert">This page could not be loaded (${failed}). <button type="button" onClick=${() => location.reload()}>Reload</button></p></section>`;
    return html`<div class="loading" aria-busy="true">Loading…</div>`;
  };
}
const AddHost = lazy(() => import('./views/add-host.js'), 'AddHost');
const ClientEditor = lazy(() => import('./views/client-edit.js'), 'ClientEditor');
const Tokens = lazy(() => import('./views/tokens.js'), 'Tokens');
const Webhooks = lazy(() => import('./views/webhooks.js'), 'Webhooks');
const WebhookEditor = lazy(() => import('./views/webhook-edit.js'), 'WebhookEditor');
const Settings = lazy(() => import('./views/settings.js'), 'Settings');
const Users = lazy(() => import('./views/users.js'), 'Users');
const ApiTokens = lazy(() => import('./views/api-tokens.js'), 'ApiTokens');
const Audit = lazy(() => import('./views/audit.js'), 'Audit');

// --- session ---

let expiryTimer = 0;

function endSession() {
  clearTimeout(expiryTimer);
  live.stop();
  S.session.value = null;
  S.resetData();
}

setUnauthorizedHandler(() => {
  if (!S.session.value && route.value.path.startsWith('/login')) return;
  endSession();
  goLogin();
});

export async function startSession() {
  live.stage('app-started');
  const me = await get('/api/v1/me');
  live.stage('session-known');
  S.session.value = me;
  clearTimeout(expiryTimer);
  if (me.expiresAt) {
    // Back to login when the session ends (timers cap at about 24 days).
    const left = Math.min(Date.parse(me.expiresAt) - Date.now(), 2 ** 31 - 1);
    expiryTimer = setTimeout(() => { endSession(); goLogin(); }, Math.max(0, left));
  }
  live.start();
  live.loadIncidents();
}

// Own password changed (views/users.js): the answer set a fresh cookie; take
// its new expiry. The socket reconnects by itself after its close 4002.
addEventListener('vrrp:session-renewed', async () => {
  try {
    const me = await get('/api/v1/me');
    S.session.value = me;
    clearTimeout(expiryTimer);
    if (me.expiresAt) {
      const left = Math.min(Date.parse(me.expiresAt) - Date.now(), 2 ** 31 - 1);
      expiryTimer = setTimeout(() => { endSession(); goLogin(); }, Math.max(0, left));
    }
  } catch { /* a 401 already went to login */ }
});

async function logout() {
  try { await post('/api/auth/logout'); } catch { /* cookies are cleared anyway on the next 401 */ }
  endSession();
  navigate('/login', true, true);
}

// --- theme: follows the system unless switched ---

const THEMES = ['auto', 'light', 'dark'];
function applyTheme(t) {
  if (t === 'auto') delete document.documentElement.dataset.theme;
  else document.documentElement.dataset.theme = t;
}
const stored = localStorage.getItem('theme');
const theme = signal(THEMES.includes(stored) ? stored : 'auto');
applyTheme(theme.value);

function ThemeSwitch() {
  const t = theme.value;
  const next = THEMES[(THEMES.indexOf(t) + 1) % THEMES.length];
  return html`<button type="button" class="ghost" aria-label=${`Theme: ${t}. Switch to ${next}`}
    title=${`Theme: ${t}`}
    onClick=${() => { theme.value = next; localStorage.setItem('theme', next); applyTheme(next); }}>
    ${t === 'dark' ? '☾' : t === 'light' ? '☀' : '◐'}</button>`;
}

// --- shell ---

function LiveIndicator() {
  const c = S.connection.value;
  const text = c === 'live' ? 'Live' : c === 'reconnecting' ? 'Reconnecting…' : 'Connecting…';
  return html`<span class=${`live ${c}`} role="status" aria-live="polite" id="live-indicator">${text}</span>`;
}

// A server pair: the server without the VIP says "standby" (it
// records everything, sends no webhooks). Asked every 10 s.
const pair = signal(null);
function PairRole() {
  useEffect(() => {
    let stop = false;
    const ask = () => get('/api/v1/ha').then((r) => { if (!stop) pair.value = r; }, () => {});
    ask();
    const t = setInterval(ask, 10000);
    return () => { stop = true; clearInterval(t); };
  }, []);
  const p = pair.value;
  if (!p || !p.configured || p.role !== 'standby') return null;
  return html`<span class="badge warn" id="pair-role" role="status"
    title=${`Standby: ${p.vip} is on the other server, which sends the webhooks. This dashboard is complete all the same.`}>standby</span>`;
}

function Toasts() {
  const list = S.toasts.value;
  return html`<div class="toasts" role="region" aria-label="Notifications">
    ${list.map((t) => html`<div class=${`toast ${t.level}`} key=${t.id} role=${t.level === 'error' ? 'alert' : 'status'}>
      <div>
        ${!t.plain && html`<strong>${t.count > 1 ? `${t.count} new ${t.level}s` : `New ${t.level}`}</strong>`}
        <div class="toast-text">${t.message}${t.count > 1 ? ' …' : ''}</div>
        ${!t.plain && html`<a href="/activity?unseen=1">Show in activity</a>`}
      </div>
      <button type="button" class="ghost" aria-label="Dismiss" onClick=${() => S.dismissToast(t.id)}>×</button>
    </div>`)}
  </div>`;
}

// At phone width the navigation opens from a menu button (the header stays one row).
const menuOpen = signal(false);

function Shell({ children }) {
  const path = route.value.path;
  const here = (p) => (p === '/' ? path === '/' : path.startsWith(p));
  const unseen = S.unseenAlerts.value;
  useEffect(() => { menuOpen.value = false; }, [path]);
  return html`<header class="top">
      <a class="brand" href="/">vrrp-monitor</a>
      <button type="button" class="ghost menu-button" id="menu-button" aria-expanded=${menuOpen.value} aria-controls="main-nav"
        onClick=${() => { menuOpen.value = !menuOpen.value; }}>☰<span class="sr"> Menu</span>${unseen > 0 ? html` <span class="count">${unseen > 999 ? '999+' : unseen}</span>` : ''}</button>
      <nav aria-label="Main" id="main-nav" class=${menuOpen.value ? 'open' : ''}>
        ${nav().map(([p, label]) => html`<a href=${p} aria-current=${here(p) ? 'page' : undefined}>
          ${label}${p === '/activity' && unseen > 0
            ? html` <span class="count" aria-label=${`${unseen} unseen warnings and errors`}>${unseen > 999 ? '999+' : unseen}</span>` : ''}
        </a>`)}
      </nav>
      <div class="tools">
        <${PairRole} />
        <${LiveIndicator} />
        <${ThemeSwitch} />
        <span class="user" id="signed-in" title=${`Signed in as ${roleText(role()).toLowerCase()}`}>${S.session.value?.username}${
          role() !== 'admin' ? html` <span class="badge role">${role()}</span>` : ''}</span>
        <button type="button" class="ghost" id="logout" onClick=${logout}>Log out</button>
      </div>
    </header>
    <main id="main">${children}</main>
    <${Confirm} id="leave-dialog" open=${!!pendingLeave.value} title="Leave without saving?"
      text="What you typed in this form is not saved; leaving throws it away." action="Leave" cancel="Stay"
      onConfirm=${confirmLeave} onClose=${stayHere} />`;
}

// Every page: its path (a string, or a pattern whose groups are the view's `id`),
// its view, and its label when it is in the navigation (in this order). The
// first match wins. `needs`: the navigation shows it only to a role that may do
// that (roles.js); the page itself still opens, read-only, for a typed address.
const ROUTES = [
  { path: '/', nav: 'Overview', view: Overview },
  { path: '/clusters', nav: 'Clusters', view: Clusters },
  { path: /^\/clusters\/(.+)$/, view: ClusterDetail },
  { path: '/clients', nav: 'Clients', view: Clients },
  { path: '/clients/add', view: AddHost },
  { path: /^\/clients\/([^/]+)\/edit$/, view: ClientEditor },
  { path: /^\/clients\/(.+)$/, view: ClientDetail },
  { path: '/tokens', view: Tokens },
  { path: '/activity', nav: 'Activity', view: Activity },
  { path: '/webhooks', nav: 'Webhooks', needs: 'change', view: Webhooks },
  { path: /^\/webhooks\/(.+)$/, view: WebhookEditor },
  { path: '/settings', nav: 'Settings', view: Settings },
  { path: '/users', nav: 'Users', needs: 'change', view: Users },
  { path: '/api-tokens', view: ApiTokens },
  { path: '/audit', nav: 'Audit', needs: 'change', view: Audit },
  { path: '/silences', nav: 'Silences', view: Silences },
];

// The navigation for this session's role. Without Users, the same page under
// "Account": a viewer or operator changes its own password there.
function nav() {
  const out = ROUTES.filter((r) => r.nav && (!r.needs || can(r.needs))).map((r) => [r.path, r.nav]);
  if (!can('change')) out.push(['/users', 'Account']);
  return out;
}

function pickView(path) {
  for (const r of ROUTES) {
    if (typeof r.path === 'string') {
      if (r.path === path) return html`<${r.view} />`;
      continue;
    }
    const m = r.path.exec(path);
    if (m) return html`<${r.view} id=${decodeURIComponent(m[1])} />`;
  }
  return html`<section><h1>Not found</h1><p>There is no page at this address. <a href="/">Overview</a></p></section>`;
}

function App() {
  const { path } = route.value;
  useEffect(() => {
    const onKey = (e) => {
      const tag = (e.target.tagName || '').toLowerCase();
      if (e.key === '/' && !['input', 'textarea', 'select'].includes(tag)) {
        const search = document.querySelector('[data-search]');
        if (search) { e.preventDefault(); search.focus(); }
      }
    };
    addEventListener('keydown', onKey);
    return () => removeEventListener('keydown', onKey);
  }, []);
  let view;
  if (path.startsWith('/login')) view = html`<${Login} onLogin=${startSession} />`;
  else if (!S.session.value) view = html`<div class="loading" aria-busy="true">Loading…</div>`;
  else view = html`<${Shell}>${pickView(path)}<//>`;
  return html`${view}<${Toasts} />`;
}

async function boot() {
  render(html`<${App} />`, document.getElementById('app'));
  if (route.value.path.startsWith('/login')) return;
  try {
    await startSession();
  } catch (e) {
    if (e.status !== 401) {
      // The server cannot be reached or failed: say so, and try again shortly.
      document.getElementById('app').dataset.error = e.message;
      setTimeout(boot, 3000);
      S.toastError(`${e.message} Retrying…`);
    }
  }
}

boot();
