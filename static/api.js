// The REST client. A 401 from any call sends the tab to the login page (the
// session expired, was revoked, or the cookie was tampered with).
import { navigate, currentPath } from './router.js';

export class ApiError extends Error {
  // `data`: the answer's body, for errors that carry more than their text (a
  // refused drill's findings).
  constructor(status, message, retryAfter, data = null) {
    super(message);
    this.status = status;
    this.retryAfter = retryAfter;
    this.data = data;
  }
}

let onUnauthorized = () => {};
export function setUnauthorizedHandler(f) { onUnauthorized = f; }
// The session is gone (a 401, or the socket closed with 4001): end it, go to login.
export function unauthorized() { onUnauthorized(); }

export async function api(method, path, body) {
  const init = { method, headers: {}, credentials: 'same-origin' };
  if (body !== undefined) {
    init.headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  let res;
  try {
    res = await fetch(path, init);
  } catch (e) {
    throw new ApiError(0, 'The server cannot be reached.');
  }
  let data = null;
  const text = await res.text();
  if (text) {
    try { data = JSON.parse(text); } catch { data = null; }
  }
  if (!res.ok) {
    const message = (data && typeof data.error === 'string') ? data.error : `HTTP ${res.status}`;
    if (res.status === 401 && path !== '/api/login') onUnauthorized();
    throw new ApiError(res.status, message, Number(res.headers.get('retry-after')) || null, data);
  }
  return data;
}

export const get = (path) => api('GET', path);
export const post = (path, body) => api('POST', path, body);
export const del = (path) => api('DELETE', path);
export const put = (path, body) => api('PUT', path, body);

export function query(params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v !== undefined && v !== null && v !== '' && v !== false) q.set(k, String(v));
  }
  const s = q.toString();
  return s ? `?${s}` : '';
}

export function goLogin() {
  const here = currentPath();
  if (!here.startsWith('/login')) navigate(`/login${query({ next: here })}`, true, true);
}
