// A discrete-state timeline: one lane per host, a bar where that host was
// MASTER (red where several were at once), incident windows shaded, time with no
// record hatched (never guessed), a tooltip with host and exact times, and the
// same facts as a table for screen readers and copy-paste.
//
// Reusable: the cluster detail feeds it the cluster history over 24 h / 7 d /
// 30 d, with `fromClusterEvents` only for the time before the history began
// (views/availability.js); any other view can feed it intervals over any range:
//   <${MasterTimeline} from=${ms} to=${ms} hosts=${['lb-a', 'lb-b']}
//     intervals=${[{ from, to, masters: ['lb-a'] }]}        // ms or ISO strings
//     incidents=${[{ from, to /* null: still open */, health: 'degraded' }]} />
// Drawn with uPlot (time axis, scaling, cursor), loaded on first use so the
// first page load does not carry it; the bars are painted in uPlot's draw hook.
import { useEffect, useRef, useState } from 'preact/hooks';
import { html, exact, duration } from './ui.js';

let uPlotModule = null;
function loadUPlot() {
  uPlotModule = uPlotModule || import('uplot').then((m) => m.default);
  return uPlotModule;
}

const toMs = (t) => (typeof t === 'number' ? t : t == null ? NaN : Date.parse(t));

// Pure: intervals and incident windows of a cluster from its stored cluster
// events (any order). Each event's `data.cluster.masters` holds until the next
// event; an incident spans its `openedAt` to the event that resolved it.
export function fromClusterEvents(events, to) {
  const timed = events.filter((e) => e.data && e.data.cluster)
    .map((e) => ({ at: Date.parse(e.occurredAt), e }))
    .filter((x) => !Number.isNaN(x.at))
    .sort((a, b) => a.at - b.at);
  const intervals = timed.map(({ at, e }, i) => {
    const c = e.data.cluster;
    const masters = Array.isArray(c.masters) ? c.masters : (c.master ? [c.master] : []);
    return { from: at, to: i + 1 < timed.length ? timed[i + 1].at : to, masters };
  });
  const byId = new Map();
  for (const { at, e } of timed) {
    if (!e.kind.startsWith('vrrp.incident_') || !e.correlationId) continue;
    const inc = e.data.incident || {};
    const w = byId.get(e.correlationId) || { from: Date.parse(inc.openedAt) || at, to: null, health: inc.health };
    if (e.kind === 'vrrp.incident_resolved') w.to = at;
    else w.health = inc.health || w.health;
    byId.set(e.correlationId, w);
  }
  return { intervals, incidents: [...byId.values()] };
}

// Pure: what the chart draws, clipped to [from, to]. `unknown` is every part of
// the range no interval covers (before the first record, or a gap).
export function timelineModel({ intervals = [], incidents = [], hosts = [], from, to }) {
  const clip = (list) => list
    .map((x) => ({ ...x, from: toMs(x.from), to: x.to == null ? to : toMs(x.to) }))
    .filter((x) => !Number.isNaN(x.from) && !Number.isNaN(x.to) && x.to > from && x.from < to)
    .map((x) => ({ ...x, from: Math.max(x.from, from), to: Math.min(x.to, to) }))
    .sort((a, b) => a.from - b.from);
  const ivs = clip(intervals).map((x) => ({ ...x, masters: Array.isArray(x.masters) ? x.masters : [] }));
  const windows = clip(incidents);
  const unknown = [];
  let covered = from;
  for (const iv of ivs) {
    if (iv.from > covered) unknown.push({ from: covered, to: iv.from });
    covered = Math.max(covered, iv.to);
  }
  if (covered < to) unknown.push({ from: covered, to });
  // Overlapping incidents are shaded once (translucent fills would add up).
  const shaded = [];
  for (const w of windows) {
    const last = shaded[shaded.length - 1];
    if (last && w.from <= last.to) last.to = Math.max(last.to, w.to);
    else shaded.push({ from: w.from, to: w.to });
  }
  const lanes = [...new Set([...hosts, ...ivs.flatMap((iv) => iv.masters)])];
  return { from, to, intervals: ivs, incidents: windows, shaded, unknown, hosts: lanes };
}

// Pure: what the cursor at time `t` over `host`'s lane points at, as lines of text.
export function describeAt(model, host, t) {
  const lines = [];
  // At a boundary the later interval is the one that holds from then on.
  const iv = model.intervals.findLast((x) => x.from <= t && t <= x.to);
  if (!iv) {
    const gap = model.unknown.find((x) => x.from <= t && t <= x.to);
    lines.push(`${exact(t)}: no record${gap ? ` from ${exact(gap.from)} to ${exact(gap.to)}` : ''}`);
  } else if (iv.masters.includes(host)) {
    const others = iv.masters.filter((m) => m !== host);
    lines.push(`${host} MASTER${others.length ? ` together with ${others.join(', ')} (split brain)` : ''}`);
    lines.push(`from ${exact(iv.from)} to ${exact(iv.to)} (${duration((iv.to - iv.from) / 1000)})`);
  } else {
    lines.push(`${host} not master at ${exact(t)}`);
    lines.push(iv.masters.length ? `master: ${iv.masters.join(', ')}` : 'no master recorded');
  }
  for (const w of model.incidents.filter((x) => x.from <= t && t <= x.to)) {
    lines.push(`incident (${w.health || 'open'}) ${exact(w.from)} – ${exact(w.to)}`);
  }
  return lines;
}

const LANE = 28;
const AXIS = 44; // the time axis under the lanes (two lines of labels)
const PAD_TOP = 8;
const chartHeight = (lanes) => lanes * LANE + AXIS + PAD_TOP;

function css(el, name) {
  return getComputedStyle(el).getPropertyValue(name).trim() || '#888';
}

// The hatch for unrecorded time: thin diagonal lines, scaled to the device.
function hatch(ctx, color) {
  const size = Math.round(8 * devicePixelRatio);
  const tile = document.createElement('canvas');
  tile.width = tile.height = size;
  const t = tile.getContext('2d');
  t.strokeStyle = color;
  t.lineWidth = Math.max(1, devicePixelRatio);
  t.beginPath();
  t.moveTo(0, size); t.lineTo(size, 0);
  t.moveTo(-size / 2, size / 2); t.lineTo(size / 2, -size / 2);
  t.moveTo(size / 2, size * 1.5); t.lineTo(size * 1.5, size / 2);
  t.stroke();
  return ctx.createPattern(tile, 'repeat');
}

// A bar at least MIN_BAR css px wide, kept inside the plot: the current
// master's interval may be seconds long on a 24 h axis and must still show at
// the right edge. Canvas px.
const MIN_BAR = 3;
function barSpan(u, from, to) {
  const { left, width } = u.bbox;
  const min = MIN_BAR * devicePixelRatio;
  let x0 = u.valToPos(from, 'x', true), x1 = u.valToPos(to, 'x', true);
  if (x1 - x0 < min) {
    x1 = Math.min(left + width, x0 + min);
    x0 = x1 - min;
  }
  return [Math.max(left, x0), Math.min(left + width, x1)];
}

// Paints lanes, unknown time, incidents and bars; returns the bars drawn (css
// px, relative to the plot) so the tooltip names what is under the cursor.
function paint(u, model, el) {
  const { ctx, bbox } = u;
  const n = model.hosts.length;
  const drawn = [];
  if (!n) return drawn;
  const laneH = bbox.height / n;
  const pad = Math.max(2, laneH * 0.18);
  ctx.save();
  ctx.beginPath();
  ctx.rect(bbox.left, bbox.top, bbox.width, bbox.height);
  ctx.clip();
  ctx.fillStyle = hatch(ctx, css(el, '--muted'));
  ctx.globalAlpha = 0.45;
  for (const g of model.unknown) {
    const [x0, x1] = barSpan(u, g.from, g.to);
    ctx.fillRect(x0, bbox.top, x1 - x0, bbox.height);
  }
  ctx.globalAlpha = 1;
  ctx.fillStyle = css(el, '--shade');
  for (const w of model.shaded) {
    const [x0, x1] = barSpan(u, w.from, w.to);
    ctx.fillRect(x0, bbox.top, x1 - x0, bbox.height);
  }
  ctx.strokeStyle = css(el, '--line');
  ctx.lineWidth = 1;
  for (let i = 1; i < n; i++) {
    const y = Math.round(bbox.top + i * laneH) + 0.5;
    ctx.beginPath(); ctx.moveTo(bbox.left, y); ctx.lineTo(bbox.left + bbox.width, y); ctx.stroke();
  }
  const master = css(el, '--master'), split = css(el, '--bad');
  model.hosts.forEach((h, lane) => {
    for (const iv of model.intervals) {
      if (!iv.masters.includes(h)) continue;
      const [x0, x1] = barSpan(u, iv.from, iv.to);
      ctx.fillStyle = iv.masters.length > 1 ? split : master;
      ctx.fillRect(x0, bbox.top + lane * laneH + pad, x1 - x0, laneH - 2 * pad);
      drawn.push({ lane, x0: (x0 - bbox.left) / devicePixelRatio, x1: (x1 - bbox.left) / devicePixelRatio, iv });
    }
  });
  ctx.restore();
  return drawn;
}

function chartOptions(modelRef, el, width, tip) {
  const m = () => modelRef.current;
  let bars = [];
  const label = (h) => (h.length > 18 ? `${h.slice(0, 17)}…` : h);
  return {
    width,
    height: chartHeight(m().hosts.length),
    padding: [PAD_TOP, 16, 0, 0],
    ms: 1, // our times are milliseconds
    legend: { show: false },
    select: { show: false },
    cursor: { y: false, points: { show: false }, drag: { x: false, y: false, setScale: false } },
    scales: {
      x: { time: true, auto: false, range: () => [m().from, m().to] },
      y: { auto: false, range: () => [0, Math.max(1, m().hosts.length)] },
    },
    series: [{}, { scale: 'y', paths: () => null, points: { show: false } }],
    axes: [
      { size: AXIS, stroke: () => css(el, '--muted'), grid: { stroke: () => css(el, '--line'), width: 1 },
        ticks: { stroke: () => css(el, '--line'), width: 1 } },
      { scale: 'y', side: 3, size: 140, gap: 8, grid: { show: false }, ticks: { show: false },
        stroke: () => css(el, '--text'),
        // Lane i (from the top) is centred at n - i - 0.5 on the y scale.
        splits: () => m().hosts.map((_, i) => m().hosts.length - i - 0.5),
        values: (_, splits) => splits.map((s) => label(m().hosts[m().hosts.length - 1 - Math.floor(s)] || '')) },
    ],
    hooks: {
      draw: [(u) => { bars = paint(u, m(), el); }],
      setCursor: [(u) => {
        const { left, top } = u.cursor;
        const n = m().hosts.length;
        if (left == null || left < 0 || !n) { tip.hidden = true; return; }
        const lane = Math.min(n - 1, Math.max(0, Math.floor(top / (u.over.clientHeight / n))));
        // A bar widened to stay visible answers for its own interval.
        const hit = bars.find((b) => b.lane === lane && left >= b.x0 - 1 && left <= b.x1 + 1);
        let t = u.posToVal(left, 'x');
        if (hit && (t < hit.iv.from || t > hit.iv.to)) t = (hit.iv.from + hit.iv.to) / 2;
        const lines = describeAt(m(), m().hosts[lane], t);
        tip.replaceChildren(...lines.map((line) => {
          const d = document.createElement('div');
          d.textContent = line;
          return d;
        }));
        tip.hidden = false;
        const w = tip.offsetWidth;
        tip.style.left = `${Math.max(0, Math.min(left + 12, u.over.clientWidth - w))}px`;
        tip.style.top = `${Math.min(top + 14, u.over.clientHeight)}px`;
      }],
    },
  };
}

function span(iv) {
  return `${exact(iv.from)} – ${exact(iv.to)}`;
}

export function MasterTimeline({ id, label, from, to, intervals, incidents, hosts }) {
  const model = timelineModel({ intervals, incidents, hosts, from, to });
  const modelRef = useRef(model);
  modelRef.current = model;
  const box = useRef(null);
  const chart = useRef(null);
  const [failed, setFailed] = useState(null);

  // Create the chart once uPlot is here; follow the container's width and the theme.
  useEffect(() => {
    let gone = false;
    const cleanup = [];
    loadUPlot().then((UPlot) => {
      if (gone || !box.current) return;
      const el = box.current;
      const tip = document.createElement('div');
      tip.className = 'timeline-tip';
      tip.hidden = true;
      const u = new UPlot(chartOptions(modelRef, el, el.clientWidth || 600, tip), [[from, to], [null, null]], el);
      u.over.appendChild(tip);
      u.over.addEventListener('mouseleave', () => { tip.hidden = true; });
      chart.current = u;
      const resize = new ResizeObserver(() => {
        const w = el.clientWidth;
        if (w && w !== u.width) u.setSize({ width: w, height: u.height });
      });
      resize.observe(el);
      const repaint = () => u.redraw(false, true);
      const theme = new MutationObserver(repaint);
      theme.observe(document.documentElement, { attributes: true, attributeFilter: ['data-theme'] });
      const scheme = matchMedia('(prefers-color-scheme: dark)');
      scheme.addEventListener('change', repaint);
      cleanup.push(() => resize.disconnect(), () => theme.disconnect(),
        () => scheme.removeEventListener('change', repaint), () => u.destroy());
      el.dataset.ready = '1';
    }).catch((e) => { if (!gone) setFailed(String(e && e.message ? e.message : e)); });
    return () => { gone = true; chart.current = null; cleanup.forEach((f) => f()); };
  }, []);

  // New data or a moved range: same chart, new scales and lanes.
  useEffect(() => {
    const u = chart.current;
    if (!u) return;
    const height = chartHeight(model.hosts.length);
    if (height !== u.height) u.setSize({ width: u.width, height });
    u.setData([[model.from, model.to], [null, null]]);
  });

  const splitBrain = model.intervals.some((iv) => iv.masters.length > 1);
  const rows = model.hosts.flatMap((h) => model.intervals.filter((iv) => iv.masters.includes(h)).map((iv) => ({ h, iv })));
  return html`<figure class="timeline" id=${id} data-from=${model.from} data-to=${model.to}
      data-hosts=${JSON.stringify(model.hosts)}>
    ${failed ? html`<p class="form-error">The timeline could not be drawn: ${failed}</p>`
      : !model.hosts.length ? html`<p class="empty">No host to show.</p>`
      : html`<div class="timeline-chart" ref=${box} role="img" aria-label=${label}></div>`}
    <ul class="timeline-legend">
      <li><span class="swatch master"></span>MASTER</li>
      ${splitBrain && html`<li><span class="swatch split"></span>several masters (split brain)</li>`}
      <li><span class="swatch incident"></span>incident</li>
      ${model.unknown.length > 0 && html`<li><span class="swatch unknown"></span>no record${model.unknown[0].from === model.from
        ? ` before ${exact(model.unknown[0].to)}` : ''}</li>`}
    </ul>
    <details class="timeline-table">
      <summary>As a table</summary>
      <div class="table-wrap"><table>
        <thead><tr><th scope="col">Host</th><th scope="col">MASTER from – to</th><th scope="col">For</th></tr></thead>
        <tbody>
          ${rows.map(({ h, iv }) => html`<tr class="master-interval" data-host=${h} data-from=${iv.from} data-to=${iv.to}>
            <td>${h}${iv.masters.length > 1 ? ' (split brain)' : ''}</td><td>${span(iv)}</td><td>${duration((iv.to - iv.from) / 1000)}</td></tr>`)}
          ${model.incidents.map((w) => html`<tr class="incident-window" data-from=${w.from} data-to=${w.to}>
            <td>Incident (${w.health || 'open'})</td><td>${span(w)}</td><td>${duration((w.to - w.from) / 1000)}</td></tr>`)}
          ${model.unknown.map((g) => html`<tr class="unknown-span"><td class="muted">No record</td><td>${span(g)}</td>
            <td>${duration((g.to - g.from) / 1000)}</td></tr>`)}
        </tbody>
      </table></div>
    </details>
  </figure>`;
}
