#!/bin/sh
# The main job: builds the CLI and the demo sample in release mode, records the demo (an
# app-like main loop that stalls once in each category) in full mode, and reports the trace.
#   scripts/demo.sh [REPORT OPTIONS]     e.g. --top 3, --json; the trace is kept (path printed)
set -eu
cd "$(dirname "$0")/.."
scripts/install-deps.sh
swift build -c release --product stallwatch
swift build -c release --product Demo
trace=${DEMO_TRACE:-$(mktemp -d "${TMPDIR:-/tmp}/stallwatch-demo.XXXXXX")/demo.swtrace}
.build/release/stallwatch record --mode full -o "$trace" -- .build/release/Demo
echo
.build/release/stallwatch report "$trace" "$@"
echo
echo "The trace: $trace"
echo "  stallwatch show $trace --stall 1"
echo "  stallwatch export $trace --format chrome -o demo.json"
