// One stored event as a list row (activity list, cluster page): the server's
// message and detail, its level, host and kind.
import { html, Time, Level } from './ui.js';
import * as S from './state.js';

export function EventRow({ r, children, onSeen }) {
  const seen = S.isSeen(r);
  const host = r.clientId ? S.clientName(r.clientId) : null;
  return html`<li class=${`event level-${r.level} ${seen ? 'seen' : 'unseen'}`} data-id=${r.id}>
    <div class="event-main">
      <${Level} level=${r.level} />
      <span class="event-message">${r.message || r.kind}</span>
      ${r.data?.silenced && html`<span class="badge silenced" title=${`Silenced: ${r.data.silenced.comment}`}>silenced</span>`}
      ${r.data?.planned === true && html`<span class="badge planned" title="A host was drained or undrained (a drain or a failover drill): a planned change">planned</span>`}
      ${!seen && onSeen && html`<button type="button" class="ghost small mark-seen" aria-label="Mark seen"
        onClick=${() => onSeen([r.id])}>Mark seen</button>`}
    </div>
    <div class="event-meta muted">
      <${Time} at=${r.occurredAt} />
      ${host && html`${' · '}<a href=${`/clients/${encodeURIComponent(r.clientId)}`}>${host}</a>`}
      ${' · '}<span class="kind">${r.kind}</span>
      ${r.detail && html`${' · '}<span class="detail">${r.detail}</span>`}
    </div>
    ${children}
  </li>`;
}
