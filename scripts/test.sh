#!/bin/sh
# Runs the whole test suite (installs the system packages it needs first); extra arguments go to
# `swift test`. The output is shown and kept in $STALLWATCH_TEST_LOG if set; the last line says
# how many timing-sensitive tests ran a second time (`retried: N — …`, scripts/lib/test-log.sh).
# Without arguments it also checks release-build names and formatting (scripts/lint.sh). Exits
# non-zero if any of them failed.
set -eu
cd "$(dirname "$0")/.."
scripts/install-deps.sh
# The preload shim beside the debug products: `record` preloads it in the tests as it does for
# users (SwiftPM cannot build it; it needs only the C sources, not the Swift build).
scripts/build-preload-shim.sh debug >/dev/null
# One test at a time: the monitor's tests time real stalls against a 16 ms budget, and on a
# 2-core machine dozens of parallel tests (some spinning on purpose) starve the loop threads
# enough to turn a 5 ms sleep into a real 30 ms stall.
. scripts/lib/test-log.sh
log=$(test_log_path)
status=0
run_logged "$log" swift test --no-parallel "$@" || status=$?
# Names as a release build gives them (the demo's build): checked on a real release recording.
[ $# -gt 0 ] || scripts/release-names.sh || status=$?
# Formatting: any `swift format lint` finding fails the run (scripts/lint.sh).
[ $# -gt 0 ] || scripts/lint.sh || status=$?
retried_summary "$log"
[ -n "${STALLWATCH_TEST_LOG:-}" ] || rm -f "$log"
exit "$status"
