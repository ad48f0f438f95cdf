// The main script's last part: a #stall=T:ID address selects that stall (#stall=longest the
// longest); #selftest drives every control once with synthetic events and checks what it sees
// (the Chromium test loads the page so); then the page marks itself ready.
// ---- Start ----
drawTimeline();
drawFlame();
const wanted = /^#stall=(?:(\d+):(\d+)|longest)$/.exec(location.hash);
if (wanted && stalls.length) {
  const s = wanted[1] === undefined ? stalls.reduce((a, b) => (b.duration > a.duration ? b : a))
    : stalls.find((x) => x.trace === Number(wanted[1]) && x.id === Number(wanted[2]));
  if (s) { selectStall(s, false); drawTimeline(); }
}
function selfTest() {
  const begun = performance.now();
  const steps = [];
  let last = begun;
  const step = (name) => { const now = performance.now(); steps.push(name + ' ' + (now - last).toFixed(0)); last = now; };
  const failures = [];
  const check = (ok, what) => { if (!ok) failures.push(what); };
  const fire = (target, type, x, y, extra) => target.dispatchEvent(new MouseEvent(type,
    Object.assign({ clientX: x, clientY: y, bubbles: true, cancelable: true, view: window }, extra || {})));
  const r = tl.canvas.getBoundingClientRect();
  tl.canvas.dispatchEvent(new WheelEvent('wheel', { deltaY: -400, clientX: r.left + r.width / 2, clientY: r.top + 30, bubbles: true, cancelable: true }));
  check(tl.t1 - tl.t0 < tl.extent, 'the wheel zooms the timeline in');
  const before = tl.t0;
  fire(tl.canvas, 'mousedown', r.left + r.width / 2, r.top + 30);
  fire(tl.canvas, 'mousemove', r.left + r.width / 2 + 80, r.top + 30);
  fire(tl.canvas, 'mouseup', r.left + r.width / 2 + 80, r.top + 30);
  check(tl.t0 !== before || tl.t0 === 0, 'dragging pans the timeline');
  fire(tl.canvas, 'mousedown', r.left + 100, r.top + 30, { shiftKey: true });
  fire(tl.canvas, 'mousemove', r.left + 300, r.top + 30, { shiftKey: true });
  fire(tl.canvas, 'mouseup', r.left + 300, r.top + 30, { shiftKey: true });
  fire(tl.canvas, 'dblclick', r.left + 10, r.top + 10);
  check(tl.t0 === 0 && tl.t1 === tl.extent, 'double-click shows the whole run');
  step('timeline');
  if (stalls.length) {
    const s = stalls.reduce((a, b) => (b.duration > a.duration ? b : a));
    const laneY = laneTop(s.trace) + LABEL + FRAMES + 3 + BUSY + 3 + STALLS - 3;
    const x = r.left + tx(s.start + s.duration / 2);
    fire(tl.canvas, 'mousemove', x, r.top + laneY);
    check(!tooltip.hidden && tooltip.textContent.includes('stall ' + s.id), 'hovering a stall shows its tooltip');
    fire(tl.canvas, 'mousedown', x, r.top + laneY);
    fire(tl.canvas, 'mouseup', x, r.top + laneY);
    check(document.getElementById('details').getAttribute('data-stall') === stallKey(s), 'clicking a stall selects it');
  step('stall');
    fire(tl.canvas, 'mouseleave', 0, 0);
  }
  const fr = flame.canvas.getBoundingClientRect();
  const child = flame.root.children[0];
  if (child) {
    fire(flame.canvas, 'mousemove', fr.left + 5, fr.top + ROW + 5);
    fire(flame.canvas, 'click', fr.left + 5, fr.top + ROW + 5);
    check(flame.focus === child, 'clicking a flame-graph frame zooms into it');
    drawFlame();
    fire(flame.canvas, 'mouseleave', 0, 0);
  }
  const search = document.getElementById('flame-search');
  search.value = child ? child.name : 'x';
  search.dispatchEvent(new Event('input', { bubbles: true }));
  drawFlame();
  check(!child || document.getElementById('flame-match').textContent.startsWith('matched'), 'the search reports a match');
  search.value = '';
  search.dispatchEvent(new Event('input', { bubbles: true }));
  document.getElementById('flame-reset').click();
  drawFlame();
  step('flame');
  ['signatures', 'stalls'].forEach((id) => {
    document.querySelectorAll('#' + id + ' th').forEach((th) => { th.click(); th.click(); });
  });
  step('sort');
  const firstSignature = document.querySelector('#signatures tr.row');
  if (firstSignature) {
    firstSignature.click();
    check(document.querySelector('#signatures tr.expansion') !== null, 'a signature row expands');
    check(document.querySelector('#signatures tr.expansion .if-fixed').textContent.startsWith('if fixed: hitch ratio '),
      'an expanded signature says what its fix would buy');
    const chip = document.querySelector('#signatures tr.expansion .chip');
    if (chip) chip.click();
  }
  step('expand');
  // The filters: each lists only its stalls, the timeline hits only those, and
  // 'any' and 'or not' bring every stall back.
  const choose = (id, value) => {
    const select = document.getElementById(id);
    select.value = value;
    select.dispatchEvent(new Event('change'));
  };
  const listed = () => Array.from(document.querySelectorAll('#stalls tbody tr'), (row) => row.getAttribute('data-stall'));
  const listsOnly = (wanted, what) => {
    const keys = new Set(wanted.map(stallKey)), rows = listed();
    check(rows.length === Math.min(wanted.length, PAGE) && rows.every((k) => keys.has(k)), what + ' lists only its stalls');
    check(stalls.every((s) => s.hidden === !keys.has(stallKey(s))), what + ' hides the others');
    setView(0, tl.extent);
    const hit = (s) => stallAt(tx(s.start + s.duration / 2), laneTop(s.trace) + LABEL + FRAMES + 3 + BUSY + 3 + STALLS - 3);
    const other = stalls.find((s) => !keys.has(stallKey(s)));
    if (other) check(hit(other) !== other, what + ' hides the others on the timeline');
    if (wanted.length) {
      const longest = wanted.reduce((a, b) => (b.duration > a.duration ? b : a));
      check(hit(longest) === longest, what + ' keeps its stalls on the timeline');
    }
  };
  if (document.getElementById('state-filter')) {
    const p = filters.pairs[0].pair;
    choose('state-filter', '0');
    listsOnly(stalls.filter((s) => s.state.some((q) => q[0] === p[0] && q[1] === p[1])), 'the app-state filter');
    choose('state-filter', '');
  }
  if (document.getElementById('expected-filter')) {
    choose('expected-filter', 'only');
    listsOnly(stalls.filter((s) => s.expected >= 0), 'the expected filter');
    choose('expected-filter', 'no');
    listsOnly(stalls.filter((s) => s.expected < 0), 'the not-expected filter');
    choose('expected-filter', 'all');
  }
  if (filters.pairs.length || document.getElementById('expected-filter')) {
    listsOnly(stalls, 'no filter');
    step('filters');
  }
  const more = document.querySelector('#stalls-more button');
  if (more) {
    more.click();
    check(document.querySelectorAll('#stalls tbody tr').length === Math.min(stalls.length, PAGE * 6), 'Show more adds rows');
  }
  step('more');
  drawTimeline();
  document.getElementById('zoom-in').click();
  document.getElementById('zoom-out').click();
  document.getElementById('zoom-reset').click();
  drawTimeline();
  failures.forEach((f) => window.stallwatchError('self-test failed: ' + f));
  document.documentElement.setAttribute('data-selftest', failures.length ? 'failed' : 'passed');
  document.documentElement.setAttribute('data-selftest-ms', (performance.now() - begun).toFixed(1));
  document.documentElement.setAttribute('data-selftest-steps', steps.join(', '));
}
if (location.hash === '#selftest') selfTest();
// The script's own time, and the time from navigation start to ready.
document.documentElement.setAttribute('data-script-ms', (performance.now() - started).toFixed(1));
document.documentElement.setAttribute('data-ready-ms', performance.now().toFixed(1));
document.documentElement.setAttribute('data-ready', 'true');
