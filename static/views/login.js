// Login: username and password, or the OIDC provider when the server uses one.
// After login the tab goes back to the page that was asked for.
import { useEffect, useState } from 'preact/hooks';
import { html } from '../ui.js';
import { get, post } from '../api.js';
import { route, navigate } from '../router.js';
import * as S from '../state.js';

function nextPath() {
  const next = route.value.params.get('next') || '/';
  // Only paths of this dashboard: never an address elsewhere.
  return next.startsWith('/') && !next.startsWith('//') && !next.startsWith('/login') ? next : '/';
}

export function Login({ onLogin }) {
  const [username, setUsername] = useState('');
  const [password, setPassword] = useState('');
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);
  const [retryUntil, setRetryUntil] = useState(0);
  const oidc = S.authType.value === 'oidc';

  useEffect(() => {
    get('/api/auth/config').then((c) => { S.authType.value = c?.type === 'oidc' ? 'oidc' : 'local'; }).catch(() => {});
    document.title = 'Log in · vrrp-monitor';
  }, []);

  const waitLeft = Math.max(0, Math.ceil((retryUntil - S.now.value) / 1000));

  async function submit(e) {
    e.preventDefault();
    setBusy(true);
    setError('');
    try {
      await post('/api/login', { username, password });
      await onLogin();
      navigate(nextPath(), true);
    } catch (err) {
      if (err.status === 429) {
        const secs = err.retryAfter || 60;
        setRetryUntil(Date.now() + secs * 1000);
        const mins = Math.ceil(secs / 60);
        setError(`Too many login attempts. Try again in ${secs < 120 ? `${secs} s` : `${mins} min`}.`);
      } else if (err.status === 401) {
        setError('Wrong username or password.');
      } else {
        setError(err.message);
      }
    }
    setBusy(false);
  }

  return html`<main class="login">
    <form class="card" onSubmit=${submit} aria-labelledby="login-title">
      <h1 id="login-title">vrrp-monitor</h1>
      <label>Username
        <input name="username" autocomplete="username" required value=${username}
          onInput=${(e) => setUsername(e.currentTarget.value)} autofocus />
      </label>
      <label>Password
        <input name="password" type="password" autocomplete="current-password" required value=${password}
          onInput=${(e) => setPassword(e.currentTarget.value)} />
      </label>
      ${error && html`<p class="form-error" role="alert" id="login-error">${error}</p>`}
      <button type="submit" class="primary" disabled=${busy || waitLeft > 0}>Log in</button>
      ${oidc && html`<a class="button" id="oidc-login" href="/api/auth/login">Log in with single sign-on</a>`}
    </form>
  </main>`;
}
