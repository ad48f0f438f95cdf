#!/bin/sh
# The picture in docs/reading-reports.md: records the demo (scripts/demo.sh) unless a trace is given, writes its
# `stallwatch report --html` page, loads it in headless Chromium (fails unless the page's script
# and its self-test ran cleanly) and saves a screenshot with the longest stall selected.
#   scripts/report-screenshot.sh [TRACE] [PNG]     PNG defaults to docs/images/report.png
set -eu
cd "$(dirname "$0")/.."
scripts/install-deps.sh
work=$(mktemp -d "${TMPDIR:-/tmp}/stallwatch-html.XXXXXX")
trap 'rm -rf "$work"' EXIT
if [ $# -ge 1 ]; then
    name=$(basename "$1")
    cp "$1" "$work/$name"
    swift build -c release --product stallwatch
else
    name=demo.swtrace
    DEMO_TRACE=$work/$name scripts/demo.sh >/dev/null
fi
png=${2:-docs/images/report.png}
# From the trace's directory, so the page names it as a person would type it.
stallwatch=$(pwd)/.build/release/stallwatch
(cd "$work" && "$stallwatch" report "$name" --html report.html >/dev/null)
browser() {
    chromium --headless --no-sandbox --disable-gpu --no-first-run --user-data-dir="$work/profile" \
        --enable-logging=stderr --v=0 "$@"
}
browser --window-size=1400,1000 --dump-dom "file://$work/report.html#selftest" >"$work/dom.html" 2>"$work/log.txt"
if grep ':CONSOLE' "$work/log.txt" >&2 || ! grep -q 'data-selftest="passed"' "$work/dom.html"; then
    echo "error: the page's script failed in Chromium (see above)" >&2
    grep -o '<pre id="errors"[^<]*' "$work/dom.html" >&2 || true
    exit 1
fi
mkdir -p "$(dirname "$png")"
browser --hide-scrollbars --window-size=1400,1480 --screenshot="$png" "file://$work/report.html#stall=longest" \
    2>/dev/null
echo "wrote $png from ${1:-a fresh demo trace}"
