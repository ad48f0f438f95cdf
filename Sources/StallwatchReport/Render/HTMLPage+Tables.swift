extension HTMLPage {
    /// The page's main script, part 3: the signature table (sortable, each row expanding to
    /// its stack and its stalls) and the stall table (sortable; a row selects its stall).
    /// Both add rows a page at a time, so ten thousand stalls stay responsive.
    static let tableScript = #"""
        // ---- Tables ----
        const PAGE = 200;
        function sortableTable(id, columns, rows, renderRow, defaultColumn, onRendered) {
          const table = document.getElementById(id), head = table.tHead, body = table.tBodies[0];
          const more = document.getElementById(id + '-more');
          const state = { column: defaultColumn, descending: true, shown: PAGE, order: rows.slice() };
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
            state.order = keyed.map((k) => k.row);
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
          return { render, state };
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
        stallTable.state.order = stalls.slice().sort((a, b) => a.trace - b.trace || a.start - b.start);
        stallTable.render();
        function highlightStallRow(s) {
          document.querySelectorAll('#stalls tr.selected').forEach((r) => r.classList.remove('selected'));
          const row = stallRowsByKey.get(stallKey(s));
          if (row) row.classList.add('selected');
        }

        """#

    /// The page's last lines: a `#stall=T:ID` address selects that stall (`#stall=longest` the
    /// longest); `#selftest` drives every control once with synthetic events and checks what
    /// it sees (the Chromium test loads the page so); then the page marks itself ready.
    static let selfTestScript = #"""
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

        """#
}
