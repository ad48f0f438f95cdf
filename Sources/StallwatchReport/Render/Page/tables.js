// Part 3 of the main script: the signature table (sortable, each row expanding to its stack
// and its stalls) and the stall table (sortable; a row selects its stall). Both add rows a
// page at a time, so ten thousand stalls stay responsive. When any stall has app state or is
// expected, the filters above the timeline show the stalls of one app-state key=value and/or
// only the expected (or unexpected) ones, in the timeline and the stall table.
// ---- Tables ----
const PAGE = 200;
function sortableTable(id, columns, rows, renderRow, defaultColumn, onRendered) {
  const table = document.getElementById(id), head = table.tHead, body = table.tBodies[0];
  const more = document.getElementById(id + '-more');
  // `all`: every row in the chosen order; `order`: those `keep` lets through.
  const state = { column: defaultColumn, descending: true, shown: PAGE, all: rows.slice(), order: rows.slice(), keep: null };
  const headRow = el('tr');
  columns.forEach((column, i) => {
    headRow.appendChild(el('th', { 'data-column': i, title: 'sort by ' + column.name, onclick: () => {
      if (state.column === i) state.descending = !state.descending;
      else { state.column = i; state.descending = column.numeric; }
      sort(); render();
    } }, column.name));
  });
  head.appendChild(headRow);
  // Each row's key is computed once per sort, not once per comparison.
  function sort() {
    const key = columns[state.column].key, sign = state.descending ? -1 : 1;
    const keyed = rows.map((row) => ({ row, key: key(row) }));
    keyed.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0) * sign || a.row.index - b.row.index);
    state.all = keyed.map((k) => k.row);
    state.order = state.keep ? state.all.filter(state.keep) : state.all;
  }
  function filter(keep) {
    state.keep = keep;
    state.order = keep ? state.all.filter(keep) : state.all;
    state.shown = PAGE;
    render();
  }
  function render() {
    Array.from(headRow.children).forEach((th, i) => {
      th.className = i === state.column ? (state.descending ? 'sorted-desc' : 'sorted-asc') : '';
    });
    body.replaceChildren();
    state.order.slice(0, state.shown).forEach((row) => renderRow(row, body));
    more.replaceChildren();
    if (state.order.length > state.shown) {
      more.appendChild(el('button', { type: 'button', onclick: () => { state.shown += PAGE * 5; render(); } },
        'Show more (' + (state.order.length - state.shown) + ' not shown)'));
    }
    if (onRendered) onRendered();
  }
  sort(); render();
  return { render, state, filter };
}
const tierText = (tiers) => tiers.map((n, i) => (n ? TIERS[i] + ' ' + n : null)).filter((x) => x).join(', ');

// Signatures, with the stalls each holds.
const signatureRows = D.signatures.map((sig, index) => Object.assign({ index, members: [] }, sig));
stalls.forEach((s) => { if (s.signature >= 0) signatureRows[s.signature].members.push(s); });
const expanded = new Set();
document.getElementById('signatures-title').textContent = 'Signatures (' + D.signatures.length +
  (D.summary.signatureCount > D.signatures.length ? ' of ' + D.summary.signatureCount : '') + ', by total time)';
const signatureTable = sortableTable('signatures', [
  { name: '#', key: (r) => r.index, numeric: false },
  { name: 'category', key: (r) => CATS[r.category], numeric: false },
  { name: 'signature (innermost app frames)', key: (r) => r.frames.map(str).join(' '), numeric: false },
  { name: 'stalls', key: (r) => r.count, numeric: true },
  { name: 'total', key: (r) => r.totalMs, numeric: true },
  { name: 'max', key: (r) => r.maxMs, numeric: true },
  { name: 'tiers', key: (r) => r.tiers.slice().reverse().join(','), numeric: true },
  { name: 'reason', key: (r) => str(r.reason), numeric: false },
  { name: 'posted at', key: (r) => (r.sites.length ? str(r.sites[0][0]) : ''), numeric: false },
], signatureRows, (r, body) => {
  const isOpen = expanded.has(r.index);
  body.appendChild(el('tr', { class: 'row', 'data-signature': r.index, onclick: () => {
    if (expanded.has(r.index)) expanded.delete(r.index); else expanded.add(r.index);
    signatureTable.render();
  } },
  el('td', { class: 'num' }, (isOpen ? '▾ ' : '▸ ') + (r.index + 1)),
  el('td', null, swatch(catColor(r.category)), CATS[r.category]),
  el('td', { class: 'frames' }, r.frames.map(str).join(' ← ')),
  el('td', { class: 'num' }, String(r.count)),
  el('td', { class: 'num' }, fmtMs(r.totalMs)),
  el('td', { class: 'num' }, fmtMs(r.maxMs)),
  el('td', null, tierText(r.tiers)),
  el('td', null, str(r.reason)),
  el('td', null, r.sites.length ? str(r.sites[0][0]) + (r.sites.length > 1 ? ' +' + (r.sites.length - 1) : '') : '')));
  if (!isOpen) return;
  const chips = el('div', { class: 'chips' });
  r.members.slice(0, 300).forEach((s) => {
    const chip = el('button', { type: 'button', class: 'chip', 'data-stall': stallKey(s), onclick: () => selectStall(s, true) },
      stallName(s) + ' · ' + fmtMs(s.duration));
    chip.style.borderColor = catColor(s.category);
    chips.appendChild(chip);
  });
  if (r.members.length > 300) chips.appendChild(el('span', { class: 'hint' }, '… ' + (r.members.length - 300) + ' more'));
  const shares = el('div', null, 'breakdown: ' + breakdownText(r.shares));
  const sites = el('div', null, 'posted at: ' + r.sites.map((site) => str(site[0]) + ' (' + site[1] + ')').join(', '));
  const fix = r.ifFixed;
  const fixed = el('div', { class: 'if-fixed' }, fix === null ? '' : 'if fixed: hitch ratio ' +
    fix.hitchRatioMsPerSecond.toFixed(1) + ' ms/s (' + fix.hitchGrade + '), hang rate ' +
    fix.hangRateSecondsPerHour.toFixed(1) + ' s/h' + (fix.droppedFrames === null ? '' :
    ', ' + fix.droppedFrames + ' dropped frames, ' + fix.fps.toFixed(1) + ' fps'));
  body.appendChild(el('tr', { class: 'expansion', 'data-expansion': r.index },
    el('td', { colspan: 9 }, shares, sites, fixed, el('div', { class: 'hint' }, 'Stack of the longest stall, innermost first'),
      stackList(r.stack), el('div', { class: 'hint' }, 'Its stalls (click to show one)'), chips)));
}, 4);

// Every stall.
document.getElementById('stalls-title').textContent = 'Stalls (' + stalls.length + ')';
let stallRowsByKey = new Map();
const stallTable = sortableTable('stalls', [
  { name: 'trace', key: (s) => s.trace, numeric: false },
  { name: 'stall', key: (s) => s.id, numeric: false },
  { name: 'start', key: (s) => s.start, numeric: false },
  { name: 'duration', key: (s) => s.duration, numeric: true },
  { name: 'tier', key: (s) => s.tier, numeric: true },
  { name: 'category', key: (s) => CATS[s.category], numeric: false },
  { name: 'posted at', key: (s) => str(s.site), numeric: false },
  { name: 'signature', key: (s) => signatureText(s.signature), numeric: false },
], stalls, (s, body) => {
  const row = el('tr', { class: 'row' + (s === selected ? ' selected' : ''), 'data-stall': stallKey(s), onclick: () => selectStall(s, true) },
    el('td', { class: 'num' }, String(s.trace + 1)),
    el('td', { class: 'num' }, String(s.id)),
    el('td', { class: 'num' }, fmtMs(s.start)),
    el('td', { class: 'num' }, fmtMs(s.duration) + (s.unfinished ? ' +' : '')),
    el('td', null, TIERS[s.tier]),
    el('td', null, swatch(catColor(s.category)), CATS[s.category]),
    el('td', null, str(s.site) + (s.label >= 0 ? ' "' + str(s.label) + '"' : '')),
    el('td', { class: 'frames' }, signatureText(s.signature)));
  body.appendChild(row);
}, 2, () => { stallRowsByKey = new Map(Array.from(document.querySelectorAll('#stalls tbody tr'), (r) => [r.getAttribute('data-stall'), r])); });
// Start order by default, not by the last column chosen.
stallTable.state.column = 2; stallTable.state.descending = false;
stallTable.state.all = stallTable.state.order = stalls.slice().sort((a, b) => a.trace - b.trace || a.start - b.start);
stallTable.render();
function highlightStallRow(s) {
  document.querySelectorAll('#stalls tr.selected').forEach((r) => r.classList.remove('selected'));
  const row = stallRowsByKey.get(stallKey(s));
  if (row) row.classList.add('selected');
}

// ---- Filters: one app-state key=value, expected or not ----
// Shown only when some stall has app state or is expected. A hidden stall is neither
// drawn nor hit on the timeline and has no row in the stall table.
const filters = { pair: null, expected: 'all', pairs: [] };
function stallShown(s) {
  const pair = filters.pair;
  if (pair && !s.state.some((p) => p[0] === pair[0] && p[1] === pair[1])) return false;
  if (filters.expected === 'all') return true;
  return (filters.expected === 'only') === (s.expected >= 0);
}
function applyFilters() {
  let shown = 0;
  for (const s of stalls) { s.hidden = !stallShown(s); if (!s.hidden) shown++; }
  const all = filters.pair === null && filters.expected === 'all';
  stallTable.filter(all ? null : (s) => !s.hidden);
  document.getElementById('stalls-title').textContent = 'Stalls (' + (all ? stalls.length : shown + ' of ' + stalls.length) + ')';
  document.getElementById('filter-count').textContent = all ? '' : shown + ' of ' + stalls.length + ' stalls shown';
  if (tl.hover && tl.hover.hidden) { tl.hover = null; hideTooltip(); }
  redraw();
}
(function buildFilters() {
  const counts = new Map();
  let expectedCount = 0;
  for (const s of stalls) {
    for (const p of s.state) {
      const key = p[0] + ':' + p[1], entry = counts.get(key);
      if (entry) entry.count++; else counts.set(key, { pair: p, text: str(p[0]) + '=' + str(p[1]), count: 1 });
    }
    if (s.expected >= 0) expectedCount++;
  }
  if (!counts.size && !expectedCount) return;
  const box = document.getElementById('filters');
  box.hidden = false;
  box.appendChild(el('span', { class: 'name' }, 'Show stalls'));
  if (counts.size) {
    filters.pairs = Array.from(counts.values()).sort((a, b) => (a.text < b.text ? -1 : a.text > b.text ? 1 : 0));
    const select = el('select', { id: 'state-filter', 'aria-label': 'Stalls of one app state', onchange: () => {
      filters.pair = select.value === '' ? null : filters.pairs[Number(select.value)].pair;
      applyFilters();
    } }, el('option', { value: '' }, 'in any app state'),
    ...filters.pairs.map((entry, i) => el('option', { value: i }, entry.text + ' (' + entry.count + ')')));
    box.appendChild(select);
  }
  if (expectedCount) {
    const select = el('select', { id: 'expected-filter', 'aria-label': 'Expected stalls', onchange: () => {
      filters.expected = select.value;
      applyFilters();
    } }, el('option', { value: 'all' }, 'expected or not'),
    el('option', { value: 'no' }, 'not expected (' + (stalls.length - expectedCount) + ')'),
    el('option', { value: 'only' }, 'expected only (' + expectedCount + ')'));
    box.appendChild(select);
  }
  box.appendChild(el('span', { id: 'filter-count', class: 'hint' }));
  // The address can set them: #state=KEY=VALUE, #expected=only|no, or both joined by '&'.
  for (const part of location.hash.slice(1).split('&')) {
    const m = /^(state|expected)=(.*)$/.exec(part);
    if (!m) continue;
    // A malformed escape (#state=%E0%A4%A) is no filter, not an exception that stops the page.
    let value;
    try { value = decodeURIComponent(m[2]); } catch (error) { continue; }
    const select = document.getElementById(m[1] + '-filter');
    if (!select) continue;
    const index = m[1] === 'state' ? filters.pairs.findIndex((entry) => entry.text === value) : -1;
    const option = m[1] === 'state' ? (index >= 0 ? String(index) : null) : ['all', 'no', 'only'].includes(value) ? value : null;
    if (option === null) continue;
    select.value = option;
    select.dispatchEvent(new Event('change'));
  }
})();
