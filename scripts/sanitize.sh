#!/bin/sh
# Runs the whole test suite under a sanitizer:
#   scripts/sanitize.sh address   AddressSanitizer + LeakSanitizer (scratch path .build-asan)
#   scripts/sanitize.sh thread    ThreadSanitizer (scratch path .build-tsan)
# Extra arguments go to `swift test` (e.g. --filter SamplerTests). Any sanitizer report fails the
# run: in the test process (it stops at the first report) and in every subprocess a test starts
# (the test host, the samples, exit tests), which inherit the options below and exit non-zero.
# Tests that cannot run under a sanitizer are skipped by their own `.disabled(if: Sanitizer.…)`.
set -eu
cd "$(dirname "$0")/.."
kind=${1:-}
case "$kind" in
address) scratch=.build-asan ;;
thread)
    scratch=.build-tsan
    ;;
*)
    echo "usage: scripts/sanitize.sh address|thread [swift test arguments]" >&2
    exit 64
    ;;
esac
shift
scripts/install-deps.sh
here=$(pwd)
# halt_on_error: stop at the first report; exitcode: a report (including LeakSanitizer's at exit)
# makes the process exit non-zero, so a subprocess test's exit-status check fails too. Options
# already in the environment come last and win (e.g. TSAN_OPTIONS=halt_on_error=0 to see every
# report of a run).
export ASAN_OPTIONS="halt_on_error=1:exitcode=86:detect_leaks=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
export LSAN_OPTIONS="suppressions=$here/scripts/sanitizers/lsan.supp:print_suppressions=0${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
export TSAN_OPTIONS="halt_on_error=1:exitcode=66:suppressions=$here/scripts/sanitizers/tsan.supp${TSAN_OPTIONS:+:$TSAN_OPTIONS}"
start=$(date +%s)
# lld, not the default gold: gold prints a "Cannot export local symbol" warning for each of the
# ASan runtime's ~1,400 assembly stubs at every link.
swift build --build-tests --sanitize="$kind" --scratch-path "$scratch" -Xswiftc -use-ld=lld
built=$(date +%s)
# Nothing is re-run by this script; the last lines say how many timing-sensitive tests ran a
# second time in process (`retried: N — …`, scripts/lib/test-log.sh). The output is kept in
# $STALLWATCH_TEST_LOG if set.
. scripts/lib/test-log.sh
log=$(test_log_path)
status=0
run_logged "$log" swift test --skip-build --no-parallel --sanitize="$kind" --scratch-path "$scratch" \
    -Xswiftc -use-ld=lld "$@" || status=$?
done=$(date +%s)
echo "sanitize $kind: build $((built - start)) s, tests $((done - built)) s, exit $status" >&2
retried_summary "$log"
[ -n "${STALLWATCH_TEST_LOG:-}" ] || rm -f "$log"
exit "$status"
