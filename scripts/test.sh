#!/bin/sh
# Runs the whole test suite (installs the system packages it needs first).
set -eu
cd "$(dirname "$0")/.."
scripts/install-deps.sh
# One test at a time: the monitor's tests time real stalls against a 16 ms budget, and on a
# 2-core machine dozens of parallel tests (some spinning on purpose) starve the loop threads
# enough to turn a 5 ms sleep into a real 30 ms stall. Serially the suite takes ~30 s.
# A test that fails on an expectation is run once more on its own (scripts/lib/rerun-failed.sh
# says why and what is never re-run).
. scripts/lib/rerun-failed.sh
status=0
swift_test_with_one_rerun swift test --no-parallel "$@" || status=$?
exit "$status"
