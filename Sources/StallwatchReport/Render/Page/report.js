// The report page's main script, part 1 of 4 (report.js, flame.js, tables.js, start.js, run in
// that order in one script element, sharing its scope): the data, helpers, the header, the timeline
// and the selected-stall panel. Names from the trace only ever reach the document through
// textContent (the `el` helper appends text nodes). Embedded in `stallwatch` at build time
// (Plugins/EmbedFiles); HTMLReport.swift writes the page around it.
'use strict';
const started = performance.now();
const D = JSON.parse(document.getElementById('report-data').textContent);
const S = D.strings;
const str = (i) => (i >= 0 && i < S.length ? S[i] : '');
const CATS = D.categories;
const TIERS = D.tiers;
const COLOR = { compute: '#e8833a', io: '#3a7bd5', lockWait: '#b8418f', database: '#2a9d7f', other: '#8a8f98' };
const catColor = (c) => COLOR[CATS[c]] || '#8a8f98';
const TIER_HEIGHT = [12, 20, 30, 40];

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  if (attrs) {
    for (const key of Object.keys(attrs)) {
      const value = attrs[key];
      if (value === undefined || value === null) continue;
      if (key === 'class') node.className = value;
      else if (key.startsWith('on')) node.addEventListener(key.slice(2), value);
      else node.setAttribute(key, String(value));
    }
  }
  for (const child of children) {
    if (child === undefined || child === null || child === false) continue;
    if (child instanceof Node) node.appendChild(child);
    else node.appendChild(document.createTextNode(String(child)));
  }
  return node;
}
function swatch(color) {
  const s = el('span', { class: 'swatch' });
  s.style.background = color;
  return s;
}
function fmtMs(ms) {
  if (!isFinite(ms)) return '–';
  if (ms === 0) return '0 ms';
  if (ms < 1) return (ms * 1000).toFixed(0) + ' µs';
  if (ms < 1000) return ms.toFixed(ms < 10 ? 2 : 1) + ' ms';
  return (ms / 1000).toFixed(ms < 10000 ? 3 : 2) + ' s';
}
const pct = (permille) => (permille / 10).toFixed(permille % 10 === 0 ? 0 : 1) + ' %';

// The stalls of every trace, flattened; lanes keep their stalls in start order.
const stalls = [];
const lanes = D.traces.map((trace, t) => {
  const lane = { trace, index: t, stalls: [], maxDuration: 0 };
  for (const r of trace.stalls) {
    const s = {
      index: stalls.length, trace: t, id: r[0], start: r[1], duration: r[2], tier: r[3], category: r[4],
      site: r[5], signature: r[6], stack: r[7], unfinished: r[8] === 1, samples: r[9], shares: r[10],
      reasons: r[11], label: r[12], kind: r[13], expected: r[14], state: r[15], hidden: false,
    };
    stalls.push(s);
    lane.stalls.push(s);
    lane.maxDuration = Math.max(lane.maxDuration, s.duration);
  }
  return lane;
});
const stallKey = (s) => s.trace + ':' + s.id;
const stateText = (s) => s.state.map((p) => str(p[0]) + '=' + str(p[1])).join(', ');
const stallName = (s) => (D.traces.length > 1 ? 'trace ' + (s.trace + 1) + ' · ' : '') + 'stall ' + s.id;

function stackList(stackIndex, limit) {
  const list = el('ol', { class: 'stack' });
  if (stackIndex < 0) {
    list.appendChild(el('li', { class: 'system' }, '(no stack)'));
    return list;
  }
  const frames = D.stacks[stackIndex];
  frames.slice(0, limit || frames.length).forEach((f) => {
    const frame = D.frames[f];
    const source = frame[1] >= 0 ? '  ' + str(frame[1]) : frame[2] >= 0 ? '  ' + str(frame[2]) : '';
    list.appendChild(
      el('li', { class: frame[3] ? 'system' : null }, str(frame[0]), el('span', { class: 'source' }, source)));
  });
  if (limit && frames.length > limit) list.appendChild(el('li', { class: 'system' }, '… ' + (frames.length - limit) + ' more'));
  return list;
}
function breakdownBar(shares) {
  const bar = el('div', { class: 'bar' });
  shares.forEach((share, c) => {
    if (share <= 0) return;
    const part = el('div', { title: CATS[c] + ' ' + pct(share) });
    part.style.width = share / 10 + '%';
    part.style.background = catColor(c);
    bar.appendChild(part);
  });
  return bar;
}
function breakdownText(shares) {
  return shares.map((share, c) => (share > 0 ? CATS[c] + ' ' + pct(share) : null)).filter((x) => x).join(', ') || 'no samples';
}
function signatureText(index) {
  if (index < 0) return '';
  const sig = D.signatures[index];
  return CATS[sig.category] + ': ' + sig.frames.map(str).join(' ← ');
}

// ---- Header ----
(function header() {
  const sum = D.summary;
  const title = D.traces.length === 1 ? D.traces[0].path : D.traces.length + ' traces';
  document.title = 'Stallwatch report — ' + title;
  document.getElementById('title').textContent = 'Stallwatch report — ' + title;
  const traces = document.getElementById('traces');
  D.traces.forEach((t, i) => {
    traces.appendChild(
      el('div', null, (D.traces.length > 1 ? i + 1 + '. ' : '') + t.path + ': ' + (t.process || '?') + ' (pid ' + t.pid +
        '), ' + t.mode + ' mode, ' + fmtMs(t.runMs) + ', ' + t.stalls.length + (t.stalls.length === 1 ? ' stall' : ' stalls')));
    t.problems.forEach((p) => traces.appendChild(el('div', { class: 'problem' }, p)));
  });
  const figures = document.getElementById('figures');
  function figure(label, value, sub) {
    figures.appendChild(el('div', { class: 'figure' }, el('div', { class: 'value' }, value),
      el('div', { class: 'label' }, label), sub ? el('div', { class: 'sub' }, sub) : null));
  }
  figure('run time', fmtMs(sum.runTimeSeconds * 1000));
  figure('loop utilisation', sum.loopUtilisation === null ? 'n/a' : (sum.loopUtilisation * 100).toFixed(1) + ' %',
    sum.loopUtilisation === null ? 'needs a full-mode trace' : 'time in callouts');
  if (sum.frames) {
    figure('frames per second', sum.frames.fps.toFixed(1),
      sum.frames.dropped + ' of ' + sum.frames.expected + ' frames dropped');
  }
  figure('hitch ratio', sum.hitchRatioMsPerSecond.toFixed(1) + ' ms/s',
    'stall time beyond the budget; ' + sum.hitchGrade);
  figure('hang rate', sum.hangRateSecondsPerHour.toFixed(1) + ' s/h',
    'seconds of hang per hour; ' + fmtMs(sum.stalls.hangMs) + ' in stalls ≥ hang tier');
  figure('stalls', String(sum.stalls.total), fmtMs(sum.stalls.totalMs) + ' in all' +
    (sum.stalls.unfinished ? ', ' + sum.stalls.unfinished + ' unfinished' : ''));
  figure('hangs', String(sum.stalls.hangs), '≥ hang tier');
  if (sum.loopLatency) figure('loop latency p99', fmtMs(sum.loopLatency.p99Ms), 'max ' + fmtMs(sum.loopLatency.maxMs));
  const counts = document.getElementById('counts');
  const tiers = el('div', { class: 'group', id: 'tier-counts' }, el('span', { class: 'name' }, 'by tier'));
  TIERS.forEach((tier, i) => tiers.appendChild(el('span', null, tier + ' ' + sum.stalls.byTier[i])));
  const cats = el('div', { class: 'group', id: 'category-counts' }, el('span', { class: 'name' }, 'by category'));
  CATS.forEach((cat, i) => cats.appendChild(el('span', null, swatch(catColor(i)),
    cat + ' ' + sum.stalls.byCategory[i] + ' (' + fmtMs(sum.stalls.categoryMs[i]) + ')')));
  counts.append(tiers, cats);
  const legend = document.getElementById('legend');
  CATS.forEach((cat, i) => legend.appendChild(el('span', null, swatch(catColor(i)), cat)));
  legend.appendChild(el('span', null, 'bar height: hitch < microHang < hang < severe (▼ marker)'));
  legend.appendChild(el('span', null, 'frames strip: green delivered, red dropped'));
  legend.appendChild(el('span', null, 'grey: loop busy time (full mode)'));
})();

// ---- Tooltip ----
const tooltip = document.getElementById('tooltip');
function showTooltip(content, x, y) {
  tooltip.replaceChildren(...content);
  tooltip.hidden = false;
  const w = tooltip.offsetWidth, h = tooltip.offsetHeight;
  const left = x + 14 + w > window.innerWidth ? Math.max(0, x - 14 - w) : x + 14;
  const top = y + 14 + h > window.innerHeight ? Math.max(0, y - 14 - h) : y + 14;
  tooltip.style.left = left + 'px';
  tooltip.style.top = top + 'px';
}
function hideTooltip() { tooltip.hidden = true; }
function stallTooltip(s) {
  return [
    el('div', { class: 'title' }, stallName(s) + ' — ' + TIERS[s.tier] + ', ' + fmtMs(s.duration) + (s.unfinished ? ' (unfinished)' : '')),
    el('div', null, 'posted at ' + str(s.site) + (s.label >= 0 ? ' "' + str(s.label) + '"' : '')),
    el('div', null, CATS[s.category] + ': ' + breakdownText(s.shares)),
    ...(s.expected >= 0 ? [el('div', null, 'expected: ' + str(s.expected))] : []),
    ...(s.state.length ? [el('div', null, 'app state: ' + stateText(s))] : []),
    stackList(s.stack, 8),
  ];
}

// ---- Timeline ----
const tl = {
  canvas: document.getElementById('timeline'), width: 0, extent: Math.max(D.extentMs, 1),
  t0: 0, t1: Math.max(D.extentMs, 1), hover: null, drag: null, brush: null,
};
tl.ctx = tl.canvas.getContext('2d');
const AXIS = 22, LABEL = 16, FRAMES = 10, BUSY = 22, STALLS = 44, GAP = 10;
const LANE = LABEL + FRAMES + 3 + BUSY + 3 + STALLS + GAP;
const laneTop = (i) => AXIS + i * LANE;
const tx = (t) => ((t - tl.t0) / (tl.t1 - tl.t0)) * tl.width;
let selected = null;
let pendingDraw = false;
function redraw() {
  if (pendingDraw) return;
  pendingDraw = true;
  requestAnimationFrame(() => { pendingDraw = false; drawTimeline(); });
}
// Resizing a canvas makes the browser lay the page out again: only when the size changed.
function fitCanvas(canvas, width, height, dpr) {
  if (canvas.style.height !== height + 'px') canvas.style.height = height + 'px';
  const w = Math.round(width * dpr), h = Math.round(height * dpr);
  if (canvas.width !== w) canvas.width = w;
  if (canvas.height !== h) canvas.height = h;
}
function niceStep(span, pixels) {
  const raw = span / Math.max(1, pixels / 110);
  const power = Math.pow(10, Math.floor(Math.log10(raw)));
  for (const m of [1, 2, 5, 10]) if (m * power >= raw) return m * power;
  return 10 * power;
}
// The first stall of `lane` that may reach into [t, …): starts are sorted, so search
// from t minus the lane's longest stall.
function firstVisible(lane, t) {
  let lo = 0, hi = lane.stalls.length;
  const from = t - lane.maxDuration;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (lane.stalls[mid].start < from) lo = mid + 1; else hi = mid;
  }
  return lo;
}
function drawTimeline() {
  const canvas = tl.canvas, dpr = window.devicePixelRatio || 1;
  tl.width = canvas.clientWidth || 800;
  const height = AXIS + lanes.length * LANE;
  fitCanvas(canvas, tl.width, height, dpr);
  const g = tl.ctx;
  g.setTransform(dpr, 0, 0, dpr, 0, 0);
  g.clearRect(0, 0, tl.width, height);
  g.font = '11px system-ui, sans-serif';
  g.textBaseline = 'middle';
  // Axis.
  const span = tl.t1 - tl.t0, step = niceStep(span, tl.width);
  g.fillStyle = '#6b7280';
  g.strokeStyle = '#eef0f3';
  for (let t = Math.ceil(tl.t0 / step) * step; t <= tl.t1; t += step) {
    const x = Math.round(tx(t)) + 0.5;
    g.beginPath(); g.moveTo(x, AXIS - 4); g.lineTo(x, height); g.stroke();
    if (x < tl.width - 50) g.fillText(fmtMs(t), x + 3, AXIS / 2);
  }
  lanes.forEach((lane, i) => drawLane(g, lane, laneTop(i)));
  if (tl.brush) {
    const a = Math.min(tl.brush.x0, tl.brush.x1), b = Math.max(tl.brush.x0, tl.brush.x1);
    g.fillStyle = 'rgba(37, 99, 235, 0.15)';
    g.fillRect(a, AXIS, b - a, height - AXIS);
  }
  document.getElementById('view-range').textContent = fmtMs(tl.t0) + ' – ' + fmtMs(tl.t1) + ' (' + fmtMs(span) + ')';
}
function drawLane(g, lane, top) {
  const W = tl.width, trace = lane.trace;
  g.fillStyle = '#1d2330';
  g.fillText((D.traces.length > 1 ? lane.index + 1 + '. ' : '') + trace.path + ' — ' + (trace.process || '?'), 4, top + LABEL / 2);
  // Frames delivered (green) and dropped (red), per frame-clock interval.
  const fy = top + LABEL;
  g.fillStyle = '#f1f2f4';
  g.fillRect(0, fy, W, FRAMES);
  for (const f of trace.frameClock) {
    const x0 = tx(f[0]), x1 = tx(f[0] + f[1]);
    if (x1 < 0 || x0 > W || f[2] === 0) continue;
    const dropped = f[4] / f[2];
    g.fillStyle = '#7cc48a';
    g.fillRect(x0, fy, Math.max(1, x1 - x0), FRAMES);
    g.fillStyle = '#e5484d';
    g.fillRect(x0, fy + FRAMES * (1 - dropped), Math.max(1, x1 - x0), FRAMES * dropped);
  }
  // Loop busy time per interval, the tallest bin per pixel column.
  const by = top + LABEL + FRAMES + 3;
  g.fillStyle = '#f7f8f9';
  g.fillRect(0, by, W, BUSY);
  if (trace.busy) {
    const bin = trace.busy.binMs, values = trace.busy.permille;
    const first = Math.max(0, Math.floor(tl.t0 / bin)), last = Math.min(values.length - 1, Math.ceil(tl.t1 / bin));
    g.fillStyle = '#9aa3b2';
    let column = -1, peak = 0;
    const flush = () => { if (column >= 0 && peak > 0) g.fillRect(column, by + BUSY * (1 - peak / 1000), 1, BUSY * peak / 1000); };
    for (let b = first; b <= last; b++) {
      const x0 = tx(b * bin), x1 = tx((b + 1) * bin);
      if (x1 - x0 >= 1) {
        flush(); column = -1; peak = 0;
        g.fillRect(x0, by + BUSY * (1 - values[b] / 1000), x1 - x0, BUSY * values[b] / 1000);
      } else {
        const c = Math.floor(x0);
        if (c !== column) { flush(); column = c; peak = 0; }
        peak = Math.max(peak, values[b]);
      }
    }
    flush();
  } else {
    g.fillStyle = '#9aa1ac';
    g.fillText('loop busy time: full-mode traces only', 4, by + BUSY / 2);
  }
  // Stalls: a bar per stall, coloured by category, as tall as its tier.
  const sy = by + BUSY + 3, bottom = sy + STALLS;
  g.strokeStyle = '#e3e6eb';
  g.beginPath(); g.moveTo(0, bottom + 0.5); g.lineTo(W, bottom + 0.5); g.stroke();
  let lastColumn = -1, lastHeight = 0;
  for (let i = firstVisible(lane, tl.t0); i < lane.stalls.length; i++) {
    const s = lane.stalls[i];
    if (s.start > tl.t1) break;
    if (s.hidden || s.start + s.duration < tl.t0) continue;
    const x0 = tx(s.start), w = Math.max(2, tx(s.start + s.duration) - x0), h = TIER_HEIGHT[s.tier] || 12;
    const column = Math.floor(x0);
    if (w <= 2 && column === lastColumn && h <= lastHeight) continue;
    lastColumn = column; lastHeight = h;
    g.fillStyle = catColor(s.category);
    g.fillRect(x0, bottom - h, w, h);
    if (s.unfinished) {
      g.fillStyle = 'rgba(255,255,255,0.6)';
      for (let k = x0 + 2; k < x0 + w; k += 6) g.fillRect(k, bottom - h, 2, h);
    }
    if (s.tier >= 3) {
      g.fillStyle = '#b42318';
      g.beginPath(); g.moveTo(x0 + w / 2 - 4, sy + 1); g.lineTo(x0 + w / 2 + 4, sy + 1); g.lineTo(x0 + w / 2, sy + 6); g.fill();
    }
    if (s === selected || s === tl.hover) {
      g.strokeStyle = s === selected ? '#111827' : '#2563eb';
      g.lineWidth = 2;
      g.strokeRect(x0 - 1, bottom - h - 1, w + 2, h + 2);
      g.lineWidth = 1;
      g.strokeStyle = '#e3e6eb';
    }
    if (w > 60) {
      g.fillStyle = '#ffffff';
      g.fillText(fmtMs(s.duration), x0 + 3, bottom - 6);
    }
  }
}
function stallAt(x, y) {
  const laneIndex = Math.floor((y - AXIS) / LANE);
  if (laneIndex < 0 || laneIndex >= lanes.length) return null;
  const lane = lanes[laneIndex];
  const top = laneTop(laneIndex), sy = top + LABEL + FRAMES + 3 + BUSY + 3;
  if (y < sy - 4 || y > sy + STALLS + 2) return null;
  const slack = (4 / tl.width) * (tl.t1 - tl.t0), t = tl.t0 + (x / tl.width) * (tl.t1 - tl.t0);
  let best = null, bestDistance = Infinity;
  for (let i = firstVisible(lane, t - slack); i < lane.stalls.length; i++) {
    const s = lane.stalls[i];
    if (s.start > t + slack) break;
    if (s.hidden) continue;
    const distance = t < s.start ? s.start - t : t > s.start + s.duration ? t - s.start - s.duration : 0;
    if (distance <= slack && (distance < bestDistance || (distance === bestDistance && s.tier > best.tier))) {
      best = s; bestDistance = distance;
    }
  }
  return best;
}
function setView(t0, t1) {
  const minimum = 0.05;
  let span = Math.min(tl.extent, Math.max(minimum, t1 - t0));
  t0 = Math.max(0, Math.min(t0, tl.extent - span));
  tl.t0 = t0; tl.t1 = t0 + span;
  redraw();
}
function zoomAround(t, factor) {
  const span = (tl.t1 - tl.t0) * factor, f = (t - tl.t0) / (tl.t1 - tl.t0);
  setView(t - f * span, t - f * span + span);
}
function canvasPoint(event) {
  const r = tl.canvas.getBoundingClientRect();
  return { x: event.clientX - r.left, y: event.clientY - r.top };
}
tl.canvas.addEventListener('wheel', (event) => {
  event.preventDefault();
  const p = canvasPoint(event);
  zoomAround(tl.t0 + (p.x / tl.width) * (tl.t1 - tl.t0), Math.exp(event.deltaY * 0.002));
}, { passive: false });
tl.canvas.addEventListener('mousedown', (event) => {
  const p = canvasPoint(event);
  tl.drag = { x: p.x, t0: tl.t0, t1: tl.t1, moved: false, brush: event.shiftKey };
  if (event.shiftKey) tl.brush = { x0: p.x, x1: p.x };
});
window.addEventListener('mousemove', (event) => {
  const p = canvasPoint(event);
  if (tl.drag) {
    if (Math.abs(p.x - tl.drag.x) > 3) tl.drag.moved = true;
    if (tl.drag.brush) { tl.brush.x1 = p.x; redraw(); return; }
    const dt = ((p.x - tl.drag.x) / tl.width) * (tl.drag.t1 - tl.drag.t0);
    setView(tl.drag.t0 - dt, tl.drag.t1 - dt);
    return;
  }
  if (event.target !== tl.canvas) return;
  const s = stallAt(p.x, p.y);
  if (s !== tl.hover) { tl.hover = s; redraw(); }
  if (s) showTooltip(stallTooltip(s), event.clientX, event.clientY); else hideTooltip();
});
window.addEventListener('mouseup', (event) => {
  if (!tl.drag) return;
  const drag = tl.drag, p = canvasPoint(event);
  tl.drag = null;
  if (drag.brush) {
    const a = Math.min(tl.brush.x0, tl.brush.x1), b = Math.max(tl.brush.x0, tl.brush.x1);
    tl.brush = null;
    if (b - a > 3) {
      const span = tl.t1 - tl.t0;
      setView(tl.t0 + (a / tl.width) * span, tl.t0 + (b / tl.width) * span);
    } else redraw();
    return;
  }
  if (!drag.moved && event.target === tl.canvas) {
    const s = stallAt(p.x, p.y);
    if (s) selectStall(s, false);
  }
});
tl.canvas.addEventListener('mouseleave', () => { if (tl.hover) { tl.hover = null; redraw(); } hideTooltip(); });
tl.canvas.addEventListener('dblclick', () => setView(0, tl.extent));
document.getElementById('zoom-in').addEventListener('click', () => zoomAround((tl.t0 + tl.t1) / 2, 0.5));
document.getElementById('zoom-out').addEventListener('click', () => zoomAround((tl.t0 + tl.t1) / 2, 2));
document.getElementById('zoom-reset').addEventListener('click', () => setView(0, tl.extent));
window.addEventListener('resize', redraw);

// ---- Selected stall ----
function selectStall(s, zoom) {
  selected = s;
  if (zoom) {
    const pad = Math.max(s.duration * 2, 50);
    setView(s.start - pad, s.start + s.duration + pad);
  } else redraw();
  const box = document.getElementById('details');
  const dl = el('dl');
  const row = (name, ...value) => dl.append(el('dt', null, name), el('dd', null, ...value));
  row('trace', D.traces[s.trace].path);
  row('started', fmtMs(s.start) + ' into the run');
  row('callout', str(s.kind) + (s.label >= 0 ? ' "' + str(s.label) + '"' : '') + ', posted at ' + str(s.site));
  row('category', CATS[s.category] + ' — ' + breakdownText(s.shares), breakdownBar(s.shares));
  if (s.reasons.length) row('reasons', s.reasons.map((r) => str(r[0]) + ' ' + pct(r[1])).join(', '));
  row('samples', String(s.samples));
  if (s.expected >= 0) row('expected', str(s.expected) + ' (long on purpose; not counted)');
  if (s.state.length) row('app state', stateText(s));
  if (s.signature >= 0) row('signature', signatureText(s.signature));
  box.replaceChildren(
    el('h3', null, stallName(s) + ' — ' + TIERS[s.tier] + ', ' + fmtMs(s.duration) + (s.unfinished ? ' (unfinished)' : '')),
    dl, el('div', { class: 'hint' }, 'Representative stack, innermost first'), stackList(s.stack));
  box.setAttribute('data-stall', stallKey(s));
  highlightStallRow(s);
}
