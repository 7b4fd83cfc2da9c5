// Activity: newest first, paged from the server; grouped by incident (one row per
// correlation id, opening into its events); filters (level, unseen, text,
// incident) live in the URL. Texts are the server's (`message`, `detail`).
import { useEffect, useState } from 'preact/hooks';
import { html, Confirm, useTitle } from '../ui.js';
import { EventRow } from '../events.js';
import * as S from '../state.js';
import { get, post, del, query } from '../api.js';
import { route, setParams } from '../router.js';
import { can } from '../roles.js';

const LEVELS = ['trace', 'info', 'warning', 'error'];
const PAGE = 100;

function levelsFrom(min) {
  const i = LEVELS.indexOf(min);
  return LEVELS.slice(i < 0 ? 1 : i);
}

// One row per incident (its newest event first, the rest inside), other events as they are.
export function group(records) {
  const out = [];
  const byId = new Map();
  for (const r of records) {
    if (r.correlationId) {
      const g = byId.get(r.correlationId);
      if (g) { g.rest.push(r); continue; }
      const ng = { head: r, rest: [] };
      byId.set(r.correlationId, ng);
      out.push(ng);
    } else {
      out.push({ head: r, rest: [] });
    }
  }
  return out;
}

function Group({ g, onSeen }) {
  const [open, setOpen] = useState(false);
  const unseen = [g.head, ...g.rest].filter((r) => !S.isSeen(r)).length;
  return html`<${EventRow} r=${g.head} onSeen=${onSeen}>
    ${g.rest.length > 0 && html`<button type="button" class="ghost small" aria-expanded=${open}
        onClick=${() => setOpen(!open)}>${open ? 'Hide' : 'Show'} ${g.rest.length} earlier event${g.rest.length > 1 ? 's' : ''} of this incident${unseen > 1 ? ` (${unseen} unseen)` : ''}</button>
      ${open && html`<ul class="events nested">${g.rest.map((r) => html`<${EventRow} r=${r} key=${r.id} onSeen=${onSeen} />`)}</ul>`}`}
  <//>`;
}

export function Activity() {
  useTitle('Activity');
  const p = route.value.params;
  const level = p.get('level');
  const unseen = p.get('unseen') === '1';
  const q = p.get('q') || '';
  const incident = p.get('incident') || '';
  const [records, setRecords] = useState(null);
  const [more, setMore] = useState(false);
  const [error, setError] = useState('');
  const [confirm, setConfirm] = useState(false);

  // Opening the view without a level: start at the most severe level with unseen events.
  useEffect(() => {
    if (level) return;
    get('/api/v1/activity?level=error&unseen=true&limit=1').then((e) => {
      if (e.length) setParams({ level: 'error' });
      else return get('/api/v1/activity?level=warning&unseen=true&limit=1')
        .then((w) => setParams({ level: w.length ? 'warning' : 'info' }));
    }).catch(() => setParams({ level: 'info' }));
  }, [level]);

  const filter = () => ({
    level: levelsFrom(level || 'info').join(','),
    unseen: unseen ? 'true' : '',
    q,
    correlationId: incident,
  });

  // First page, again whenever filters change or new activity arrives.
  const version = S.activityVersion.value;
  useEffect(() => {
    if (!level) return undefined;
    let gone = false;
    const t = setTimeout(() => {
      const limit = Math.min(1000, Math.max(PAGE, records ? records.length : 0));
      get(`/api/v1/activity${query({ ...filter(), limit })}`).then((list) => {
        if (gone) return;
        setRecords(list);
        setMore(list.length === limit);
        setError('');
      }).catch((e) => { if (!gone) setError(e.message); });
    }, records ? 250 : 0);
    return () => { gone = true; clearTimeout(t); };
  }, [level, unseen, q, incident, version]);

  async function older() {
    const last = records[records.length - 1];
    const list = await get(`/api/v1/activity${query({ ...filter(), limit: PAGE, before: last.id })}`);
    setRecords([...records, ...list]);
    setMore(list.length === PAGE);
  }

  async function markSeen(ids) {
    if (!ids.length) return;
    try {
      await post('/api/v1/activity/seen', { ids });
      const s = new Set(S.seenIds.value);
      for (const id of ids) s.add(id);
      S.seenIds.value = s;
      S.activityVersion.value++;
    } catch (e) { setError(e.message); }
  }

  async function deleteAll() {
    await del('/api/v1/activity');
    setConfirm(false);
  }

  const shown = records || [];
  const unseenShown = shown.filter((r) => !S.isSeen(r)).map((r) => r.id);
  const groups = group(shown);
  return html`<section>
    <h1>Activity</h1>
    <div class="filters row">
      <input type="search" data-search placeholder="Search messages ( / )" aria-label="Search activity" value=${q}
        onInput=${(e) => setParams({ q: e.currentTarget.value })} />
      <select aria-label="Lowest level shown" id="level-filter" value=${level || 'info'} onChange=${(e) => setParams({ level: e.currentTarget.value })}>
        <option value="error">errors</option>
        <option value="warning">warnings and errors</option>
        <option value="info">info and above</option>
        <option value="trace">everything (with trace)</option>
      </select>
      <label class="switch"><input type="checkbox" id="unseen-only" checked=${unseen}
        onChange=${(e) => setParams({ unseen: e.currentTarget.checked ? '1' : '' })} /> Unseen only</label>
      ${incident && html`<button type="button" onClick=${() => setParams({ incident: '' })}>One incident ×</button>`}
    </div>
    <div class="row actions">
      <button type="button" id="mark-all-seen" disabled=${!unseenShown.length} onClick=${() => markSeen(unseenShown)}>
        Mark ${unseenShown.length} shown seen</button>
      ${can('change') && html`<button type="button" class="danger" id="delete-all" onClick=${() => setConfirm(true)}>Delete all…</button>`}
    </div>
    ${error && html`<p class="form-error" role="alert">${error}</p>`}
    ${records === null ? html`<p class="muted">Loading…</p>`
      : groups.length === 0 ? html`<p class="empty">Nothing matches these filters.</p>`
      : html`<ul class="events" id="activity-list">${groups.map((g) => html`<${Group} g=${g} key=${g.head.id} onSeen=${markSeen} />`)}</ul>`}
    ${more && html`<div class="more"><button type="button" onClick=${older}>Load older events</button></div>`}
    <${Confirm} open=${confirm} title="Delete all activity?" action="Delete all"
      text="Every recorded event is removed for every user. This cannot be undone."
      onConfirm=${deleteAll} onClose=${() => setConfirm(false)} />
  </section>`;
}
