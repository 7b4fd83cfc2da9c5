// The one dashboard WebSocket of this tab. Messages are queued and applied once
// per animation frame, so a burst of readings costs one render, not hundreds.
// Reconnects after 1, 2, 5, then every 10 s; close 4002 (own password changed,
// fresh cookie already set) reconnects at once; 4001 goes to the login page.
// Messages of unknown type are dropped (the spec's versioning rules).
import { batch } from '@preact/signals';
import * as S from './state.js';
import { get, unauthorized } from './api.js';

const BACKOFF = [1000, 2000, 5000, 10000];
// Only the newest records come with the connect snapshot; the activity view
// pages older ones over REST (doc/decisions.md, "Dashboard snapshot size").
const SNAPSHOT = S.RECENT_MAX;

// Counters a benchmark may read (window.vrrpLive): messages applied, frames used.
const counters = { messages: 0, flushes: 0 };
window.vrrpLive = counters;

let socket = null;
let snapshotApplied = false;
let attempt = 0;
let timer = null;
let stopped = true;
let queue = [];
let frame = 0;

export function start() {
  stopped = false;
  attempt = 0;
  connect();
}

export function stop() {
  stopped = true;
  clearTimeout(timer);
  if (socket) {
    const s = socket;
    socket = null;
    s.onclose = null;
    s.close(1000);
  }
  S.connection.value = 'connecting';
}

function connect() {
  clearTimeout(timer);
  const scheme = location.protocol === 'https:' ? 'wss' : 'ws';
  const ws = new WebSocket(`${scheme}://${location.host}/ws/dashboard?activity=${SNAPSHOT}`);
  socket = ws;
  clustersSeq = -1;
  let gotMessage = false;
  ws.onopen = () => stage('ws-open');
  ws.onmessage = (e) => {
    if (!gotMessage) {
      gotMessage = true;
      stage('ws-first-message');
      attempt = 0;
      S.connection.value = 'live';
    }
    let msg;
    try { msg = JSON.parse(e.data); } catch { return; }
    if (!msg || typeof msg.type !== 'string') return;
    queue.push(msg);
    if (!frame) frame = requestAnimationFrame(flush);
  };
  ws.onclose = (e) => {
    if (socket !== ws || stopped) return;
    socket = null;
    if (e.code === 4001) {
      stop();
      unauthorized();
      return;
    }
    S.connection.value = 'reconnecting';
    const delay = e.code === 4002 ? 0 : BACKOFF[Math.min(attempt, BACKOFF.length - 1)];
    attempt += 1;
    timer = setTimeout(connect, delay);
  };
}

// Background tabs get no animation frames; flush anyway within a second so the
// queue cannot grow without bound.
setInterval(() => { if (queue.length && document.hidden) flush(); }, 1000);

function flush() {
  frame = 0;
  const msgs = queue;
  queue = [];
  counters.messages += msgs.length;
  counters.flushes += 1;
  batch(() => {
    for (const m of msgs) {
      const p = m.payload;
      switch (m.type) {
        case 'CLIENTS_UPDATE':
          if (Array.isArray(p)) S.clients.value = p;
          break;
        case 'CLUSTERS_UPDATE':
          if (p && typeof p.seq === 'number' && Array.isArray(p.changed)) takeClusters(p);
          break;
        case 'KEEPALIVED_STATE_UPDATE':
          if (p && typeof p.clientId === 'string') S.readingSignal(p.clientId).value = p;
          break;
        case 'ACTIVITY_UPDATE':
          if (Array.isArray(p)) {
            if (!snapshotApplied) stage('snapshot-applied');
            snapshotApplied = true;
            S.recent.value = p.slice(0, S.RECENT_MAX);
            S.seenIds.value = new Set();
            S.noteIncidentEvents(p);
            if (p.length === 0) S.incidents.value = new Map();
            S.activityVersion.value++;
            refreshCounts();
          }
          break;
        case 'ACTIVITY_APPENDED':
          if (Array.isArray(p) && p.length) {
            const fresh = [...p].sort((a, b) => b.occurredAt.localeCompare(a.occurredAt));
            S.recent.value = [...fresh, ...S.recent.value].slice(0, S.RECENT_MAX);
            S.noteIncidentEvents(p);
            S.toastFor(p);
            S.activityVersion.value++;
            refreshCounts();
          }
          break;
        case 'ACTIVITY_SEEN':
          if (p && Array.isArray(p.ids)) {
            const s = new Set(S.seenIds.value);
            for (const id of p.ids) s.add(id);
            S.seenIds.value = s;
            refreshCounts();
          }
          break;
        case 'SCHEDULER_STATUS_UPDATE':
          if (p && typeof p.scheduler === 'string' && p.status && typeof p.status === 'object') {
            S.schedulers.value = { ...S.schedulers.value, [p.scheduler]: p.status };
          }
          break;
        case 'DRILL_UPDATE':
          // A failover drill moved on (a step, or its report): the cluster page
          // shows it as it runs.
          if (p && typeof p.id === 'string' && typeof p.cluster === 'string') S.noteDrill(p);
          break;
        default:
          break; // unknown types are dropped
      }
    }
  });
  markReady();
}

// Stages of the first load, as User Timing marks (`vrrp:<name>`, once each) that
// the dashboard benchmark prints: where the time to interactive goes.
const staged = new Set();
export function stage(name) {
  if (staged.has(name)) return;
  staged.add(name);
  performance.mark(`vrrp:${name}`);
}

// The first time the page shows everything (snapshot applied, clusters listed,
// rendered): a User Timing mark the dashboard benchmark reads.
let ready = false;
function markReady() {
  if (ready || !snapshotApplied || !S.clustersLoaded.value) return;
  ready = true;
  requestAnimationFrame(() => setTimeout(() => performance.mark('vrrp:ready'), 0));
}

// The cluster list is the server's (grouping, health and readiness are decided
// there, once): the whole list when the socket connects, then what changed
// (CLUSTERS_UPDATE: changed clusters whole, removed keys, a `seq` one more than
// the message before). A message from before the whole list is skipped; a gap
// (never expected: the server drops a socket rather than a message) reconnects
// for a whole list again.
let clusterMap = new Map();
let clustersSeq = -1;
// The server's order, attention first (src/clusters/group.rs, `Health`), then key.
const HEALTH_ORDER = ['split-brain', 'no-master', 'vip-mismatch', 'degraded', 'unknown', 'ok'];
const healthRank = (h) => { const i = HEALTH_ORDER.indexOf(h); return i < 0 ? HEALTH_ORDER.length : i; };

function takeClusters(p) {
  if (p.full) {
    clusterMap = new Map(p.changed.map((c) => [c.key, c]));
  } else {
    if (clustersSeq < 0 || p.seq <= clustersSeq) return;
    if (p.seq !== clustersSeq + 1) { resync(); return; }
    for (const c of p.changed) clusterMap.set(c.key, c);
    for (const k of p.removed || []) clusterMap.delete(k);
  }
  clustersSeq = p.seq;
  S.clusters.value = [...clusterMap.values()]
    .sort((a, b) => healthRank(a.health) - healthRank(b.health) || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  if (!S.clustersLoaded.value) stage('clusters-listed');
  S.clustersLoaded.value = true;
}

function resync() {
  clustersSeq = -1;
  if (socket) socket.close();
}

// The unseen warnings and errors count, and the open incidents, from REST (they
// may lie beyond the live window of newest records); coalesced to once a second.
let countsTimer = 0;
export function refreshCounts() {
  if (countsTimer) return;
  countsTimer = setTimeout(async () => {
    countsTimer = 0;
    try {
      const unseen = await get('/api/v1/activity?level=warning,error&unseen=true&count=true');
      S.unseenAlerts.value = Number(unseen.count) || 0;
    } catch { /* next change retries */ }
  }, 300);
}

// The incidents open now, each by its newest event: the server answers from the
// cluster evaluator's state, however many incident events the list holds.
export async function loadIncidents() {
  try {
    const list = await get('/api/v1/activity?openIncidents=true');
    stage('incidents-fetched');
    S.incidents.value = new Map();
    S.noteIncidentEvents(list);
  } catch { /* shown as none; the next event adds it */ }
}
