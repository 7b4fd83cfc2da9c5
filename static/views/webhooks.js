// Webhooks: the list with an enabled switch and the last delivery's outcome.
// The switch sends the whole configuration back (PUT replaces it). A webhook a
// provisioning file defines says so and has no switch: its file changes it.
import { useState } from 'preact/hooks';
import { html, Time, useLoad, useTitle } from '../ui.js';
import { get, put } from '../api.js';
import { can, ProvisionedBadge } from '../roles.js';

// The fields PUT takes, from a listed webhook.
export function configOf(w) {
  return { name: w.name, enabled: w.enabled, url: w.url, method: w.method, headers: w.headers || {},
    bodyTemplate: w.bodyTemplate, minLevel: w.minLevel, kinds: w.kinds || [], timeoutMs: w.timeoutMs };
}

// A delivery failure in words; the transport's own text stays on hover.
export function failureText(status, error) {
  const e = (error || '').toLowerCase();
  if (/lookup address|dns|name or service not known|no such host/.test(e)) return 'The receiver’s host name could not be resolved (DNS).';
  if (/connection refused/.test(e)) return 'The receiver refused the connection (nothing listens on that port).';
  if (/timed out|timeout/.test(e)) return 'The receiver did not answer in time.';
  if (/certificate|tls|ssl/.test(e)) return 'The secure connection failed (TLS certificate or handshake).';
  if (/connection reset|broken pipe|closed/.test(e)) return 'The receiver closed the connection.';
  if (status != null && status >= 400) return `The receiver answered ${status}, a refusal.`;
  return error ? 'The delivery failed.' : '';
}

// A URL with break chances after its separators, so it wraps between parts
// rather than in the middle of a word.
function Url({ url }) {
  const parts = String(url).split(/(?<=[/?&.=#])/);
  return html`<span class="url">${parts.map((p, i) => html`${p}${i < parts.length - 1 ? html`<wbr />` : ''}`)}</span>`;
}

export function Webhooks() {
  useTitle('Webhooks');
  const { data: list, error, reload: load } = useLoad(() => get('/api/v1/webhooks'));
  const [status, setStatus] = useState('');
  async function toggle(w) {
    setStatus('');
    try {
      await put(`/api/v1/webhooks/${encodeURIComponent(w.id)}`, { ...configOf(w), enabled: !w.enabled });
    } catch (e) { setStatus(`${w.name}: ${e.message}`); }
    load();
  }
  const admin = can('change');
  return html`<section class="admin">
    <h1>Webhooks ${admin && html`<a class="button primary" href="/webhooks/new" id="new-webhook">New webhook</a>`}</h1>
    <p class="muted">Each stored event at or above a webhook's level, of its kinds, is sent to it. Templates:${' '}
      <a href="/docs/webhook-templates" target="_blank" rel="noopener">the template language</a>.</p>
    ${(status || error) && html`<p class="form-error" role="alert">${status || error}</p>`}
    ${list === null ? html`<p class="loading">Loading…</p>` : !list.length
      ? html`<p class="empty">No webhooks yet.${admin && html` <a href="/webhooks/new">Create one</a> from a ready-made template (Slack, Teams, PagerDuty…).`}</p>`
      : html`<div class="table-wrap"><table class="stack" id="webhook-list">
        <thead><tr><th scope="col">Enabled</th><th scope="col">Name</th><th scope="col">Sends</th><th scope="col">To</th>
          <th scope="col">Last delivery</th></tr></thead>
        <tbody>${list.map((w) => html`<tr key=${w.id} data-id=${w.id} class=${w.enabled ? '' : 'dim'}>
          <td data-label="Enabled"><label class="switch"><input type="checkbox" checked=${w.enabled} disabled=${!admin || !!w.provisionedFrom} onChange=${() => toggle(w)}
            aria-label=${`${w.name} enabled`} title=${w.provisionedFrom ? `Provisioned from ${w.provisionedFrom}` : undefined} /></label></td>
          <td data-label="Name"><a href=${`/webhooks/${encodeURIComponent(w.id)}`}>${w.name}</a>${w.provisionedFrom && html` <${ProvisionedBadge} file=${w.provisionedFrom} />`}</td>
          <td data-label="Sends">${w.minLevel} and above${w.kinds && w.kinds.length ? `; ${w.kinds.join(', ')}` : '; every kind'}</td>
          <td data-label="To" class="wrap">${w.method} <${Url} url=${w.url} /></td>
          <td data-label="Last delivery" class="wrap">${!w.lastAttemptAt ? html`<span class="muted">never</span>` : html`
            <span class=${`badge ${w.lastError ? 'bad' : 'ok'}`}>${w.lastStatus ?? 'no answer'}</span>
            ${w.lastError && html` <span class="delivery-error" title=${w.lastError}>${failureText(w.lastStatus, w.lastError)}</span>`} <span class="muted">· <${Time} at=${w.lastAttemptAt} /></span>`}</td>
        </tr>`)}</tbody>
      </table></div>`}
  </section>`;
}
