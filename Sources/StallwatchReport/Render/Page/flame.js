// Part 2 of the main script: the flame graph (an icicle, root on top: all stalls, then the
// sample's category, then frames outermost first), drawn on a canvas, only the nodes at least
// half a pixel wide; click zooms, the search box highlights.
// ---- Flame graph ----
const flame = (function build() {
  const F = D.flame, count = F.name.length;
  const nodes = new Array(count);
  for (let i = 0; i < count; i++) {
    nodes[i] = { index: i, name: str(F.name[i]), weight: F.weight[i], parent: F.parent[i] < 0 ? null : null, children: [], depth: 0 };
  }
  let maxDepth = 0;
  for (let i = 0; i < count; i++) {
    const p = F.parent[i];
    if (p >= 0) {
      nodes[i].parent = nodes[p];
      nodes[p].children.push(nodes[i]);
      nodes[i].depth = nodes[p].depth + 1;
      maxDepth = Math.max(maxDepth, nodes[i].depth);
    }
  }
  return { nodes, root: nodes[0], maxDepth, focus: nodes[0], query: '', rects: [], hover: null,
    canvas: document.getElementById('flame') };
})();
const ROW = 18;
function categoryOf(node) {
  while (node && node.depth > 1) node = node.parent;
  return node && node.depth === 1 ? CATS.indexOf(node.name) : -1;
}
function nameHue(name) {
  let h = 0;
  for (let i = 0; i < name.length; i++) h = (h * 31 + name.charCodeAt(i)) | 0;
  return (h >>> 0) % 1000 / 1000;
}
function shade(hex, amount) {
  const n = parseInt(hex.slice(1), 16);
  const mix = (c) => Math.round(c + (255 - c) * amount);
  return 'rgb(' + mix(n >> 16) + ',' + mix((n >> 8) & 255) + ',' + mix(n & 255) + ')';
}
function matches(node) {
  return flame.query !== '' && node.name.toLowerCase().includes(flame.query);
}
function drawFlame() {
  const canvas = flame.canvas, dpr = window.devicePixelRatio || 1;
  const W = canvas.clientWidth || 800;
  const H = Math.max(3, flame.maxDepth + 1) * ROW;
  fitCanvas(canvas, W, H, dpr);
  const g = canvas.getContext('2d');
  g.setTransform(dpr, 0, 0, dpr, 0, 0);
  g.clearRect(0, 0, W, H);
  g.font = '11px system-ui, sans-serif';
  g.textBaseline = 'middle';
  flame.rects = [];
  const focus = flame.focus;
  function box(node, x, w, dim) {
    const y = node.depth * ROW;
    const category = categoryOf(node);
    let fill = node.depth === 0 ? '#d5d9e0' : category >= 0 ? shade(catColor(category), 0.25 + 0.45 * nameHue(node.name)) : '#c9ced6';
    if (matches(node)) fill = '#f5c400';
    if (dim) fill = '#e7e9ed';
    g.fillStyle = fill;
    g.fillRect(x, y, Math.max(0.5, w - 0.5), ROW - 1);
    if (node === flame.hover) { g.strokeStyle = '#111827'; g.strokeRect(x + 0.5, y + 0.5, w - 1.5, ROW - 2); }
    flame.rects.push({ node, x, y, w });
    if (w > 28) {
      g.fillStyle = '#1d2330';
      const label = node.depth === 0 ? node.name + ' (' + fmtMs(node.weight / 1000) + ')' : node.name;
      const room = Math.floor((w - 6) / 6.2);
      g.fillText(label.length > room ? label.slice(0, Math.max(1, room - 1)) + '…' : label, x + 3, y + ROW / 2);
    }
  }
  // The focus's ancestors span the width, dimmed; the focus's subtree scales to it.
  for (let a = focus.parent; a; a = a.parent) box(a, 0, W, true);
  (function layout(node, x, w) {
    box(node, x, w, false);
    if (node.weight === 0) return;
    let cx = x;
    for (const child of node.children) {
      const cw = (child.weight / node.weight) * w;
      if (cw < 0.5) break;  // heaviest first: the rest are narrower still
      layout(child, cx, cw);
      cx += cw;
    }
  })(focus, 0, W);
  // What the search matched, within the focus, counting a match inside a match once.
  const matchBox = document.getElementById('flame-match');
  if (flame.query === '') {
    matchBox.textContent = '';
  } else {
    let matched = 0;
    (function walk(node) {
      if (matches(node)) { matched += node.weight; return; }
      node.children.forEach(walk);
    })(focus);
    matchBox.textContent = 'matched ' + fmtMs(matched / 1000) + ' (' + (focus.weight ? (matched / focus.weight * 100).toFixed(1) : '0') + ' % of shown)';
  }
}
function flameNodeAt(event) {
  const r = flame.canvas.getBoundingClientRect(), x = event.clientX - r.left, y = event.clientY - r.top;
  for (const rect of flame.rects) {
    if (x >= rect.x && x < rect.x + rect.w && y >= rect.y && y < rect.y + ROW) return rect.node;
  }
  return null;
}
let pendingFlame = false;
function redrawFlame() {
  if (pendingFlame) return;
  pendingFlame = true;
  requestAnimationFrame(() => { pendingFlame = false; drawFlame(); });
}
flame.canvas.addEventListener('mousemove', (event) => {
  const node = flameNodeAt(event);
  if (node !== flame.hover) { flame.hover = node; redrawFlame(); }
  if (!node) { hideTooltip(); return; }
  const total = flame.root.weight || 1;
  showTooltip([
    el('div', { class: 'title' }, node.name),
    el('div', null, fmtMs(node.weight / 1000) + ' — ' + (node.weight / total * 100).toFixed(1) + ' % of all stall samples' +
      (node.parent ? ', ' + (node.weight / (node.parent.weight || 1) * 100).toFixed(1) + ' % of its caller' : '')),
    el('div', null, 'click to zoom'),
  ], event.clientX, event.clientY);
});
flame.canvas.addEventListener('mouseleave', () => { flame.hover = null; hideTooltip(); redrawFlame(); });
flame.canvas.addEventListener('click', (event) => {
  const node = flameNodeAt(event);
  if (!node) return;
  flame.focus = node;
  redrawFlame();
});
document.getElementById('flame-reset').addEventListener('click', () => { flame.focus = flame.root; redrawFlame(); });
document.getElementById('flame-search').addEventListener('input', (event) => {
  flame.query = event.target.value.trim().toLowerCase();
  redrawFlame();
});
window.addEventListener('resize', redrawFlame);
