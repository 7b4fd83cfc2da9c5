// The dashboard's shared state: signals every view reads. Only live.js, api.js
// callers and the actions below write them.
import { signal, computed, batch } from '@preact/signals';

// GET /api/v1/me: {id, username, role ('viewer' | 'operator' | 'admin', roles.js),
// via, expiresAt}, or null.
export const session = signal(null);
export const authType = signal('local');
export const connection = signal('connecting'); // 'connecting' | 'live' | 'reconnecting'
export const clients = signal([]); // Client[] as CLIENTS_UPDATE sends it
// clientId -> signal(KeepalivedState): one signal per client, so a reading
// re-renders only what shows that client and costs the same at 2,000 hosts as
// at 2. (One object of all readings, copied once per frame, was the page's
// largest script cost at 2,000 hosts and 500 readings/s.)
const readingSignals = new Map();
export function readingSignal(clientId) {
  let s = readingSignals.get(clientId);
  if (!s) { s = signal(undefined); readingSignals.set(clientId, s); }
  return s;
}
export function readingOf(clientId) {
  return readingSignal(clientId).value;
}
export const clusters = signal([]); // Cluster[] in the API's order (attention first)
export const clustersLoaded = signal(false);
export const recent = signal([]); // newest activity records (live window), newest first
export const seenIds = signal(new Set()); // ids turned seen in this tab
export const incidents = signal(new Map()); // correlationId -> newest incident event
export const unseenAlerts = signal(0); // unseen warnings and errors
export const activityVersion = signal(0); // bumps when the activity list changed
export const toasts = signal([]); // {id, level, count, message}
export const now = signal(Date.now());
export const schedulers = signal({}); // scheduler name -> Scheduler status (REST, then SCHEDULER_STATUS_UPDATE)
export const silences = signal(null); // Silence[] as GET /api/v1/silences answers (silence.js), null until loaded
// cluster key -> its 30-day availability figures, for the clusters list's order
// (history.js); null until loaded.
export const availabilityByKey = signal(null);
// drill id -> the newest Drill seen in this tab: each DRILL_UPDATE of the socket
// (live.js) and each drill started here (drills.js). Only drills that moved
// while the tab was open; the past ones the cluster page asks the API for.
export const drills = signal(new Map());

// Keeps `d` unless a later state of the same drill is held already: a REST
// answer may arrive after the socket's next step.
export function noteDrill(d) {
  if (!d || typeof d.id !== 'string') return;
  const have = drills.value.get(d.id);
  const rank = (x) => [x.finishedAt ? 1 : 0, (x.steps || []).length];
  if (have) {
    const [a, b] = [rank(have), rank(d)];
    if (a[0] > b[0] || (a[0] === b[0] && a[1] > b[1])) return;
  }
  const m = new Map(drills.value);
  m.set(d.id, d);
  drills.value = m;
}

setInterval(() => { now.value = Date.now(); }, 15000);

export const clientById = computed(() => {
  const m = new Map();
  for (const c of clients.value) m.set(c.id, c);
  return m;
});

export function clientName(id) {
  const c = clientById.value.get(id);
  if (!c) return id ? id.slice(0, 8) : '';
  return c.displayName || c.hostname || id.slice(0, 8);
}

export const RECENT_MAX = 200;

export function isSeen(record) {
  return record.seen || seenIds.value.has(record.id);
}

const INCIDENT = /^vrrp\.incident_/;

export function noteIncidentEvents(records) {
  let m = null;
  for (const r of records) {
    if (!INCIDENT.test(r.kind) || !r.correlationId) continue;
    m = m || new Map(incidents.value);
    const have = m.get(r.correlationId);
    if (!have || have.occurredAt <= r.occurredAt) m.set(r.correlationId, r);
  }
  if (m) incidents.value = m;
}

export const openIncidents = computed(() =>
  [...incidents.value.values()]
    .filter((r) => r.kind !== 'vrrp.incident_resolved')
    .sort((a, b) => (a.data?.incident?.openedAt || '').localeCompare(b.data?.incident?.openedAt || '')));

let toastSeq = 0;
const FADE_MS = 8000;

// Newly appended warnings and errors: one toast per level per batch; several at
// once merge into one ("3 new errors"). Errors stay until dismissed.
export function toastFor(records) {
  for (const level of ['error', 'warning']) {
    // A silenced event (maintenance window) is listed but raises no toast.
    const hits = records.filter((r) => r.level === level && !r.data?.silenced);
    if (!hits.length) continue;
    const open = toasts.value.find((t) => t.level === level);
    if (open) {
      toasts.value = toasts.value.map((t) => t === open
        ? { ...t, count: t.count + hits.length, message: hits[0].message, at: Date.now() } : t);
      if (level === 'warning') fadeLater(open.id);
    } else {
      const id = ++toastSeq;
      toasts.value = [...toasts.value, { id, level, count: hits.length, message: hits[0].message, at: Date.now() }];
      if (level === 'warning') fadeLater(id);
    }
  }
}

export function toastError(message) {
  if (toasts.value.some((t) => t.plain && t.message === message)) return;
  const id = ++toastSeq;
  toasts.value = [...toasts.value, { id, level: 'error', count: 1, message, at: Date.now(), plain: true }];
}

function fadeLater(id) {
  setTimeout(() => {
    const t = toasts.value.find((x) => x.id === id);
    if (t && Date.now() - t.at >= FADE_MS - 50) dismissToast(id);
    else if (t) fadeLater(id);
  }, FADE_MS);
}

export function dismissToast(id) {
  toasts.value = toasts.value.filter((t) => t.id !== id);
}

export function resetData() {
  batch(() => {
    clients.value = [];
    for (const r of readingSignals.values()) r.value = undefined;
    clusters.value = [];
    clustersLoaded.value = false;
    recent.value = [];
    seenIds.value = new Set();
    incidents.value = new Map();
    unseenAlerts.value = 0;
    toasts.value = [];
    schedulers.value = {};
    silences.value = null;
    availabilityByKey.value = null;
    drills.value = new Map();
  });
}
