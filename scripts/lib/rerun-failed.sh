# Sourced by scripts/test.sh and scripts/sanitize.sh: run `swift test` with the given arguments
# and, if tests failed on an expectation, run just those tests once more.
#
# Why: the monitor's tests time real stalls against a 16 ms budget on a shared 2-core VM whose
# timings move by ±30 % from run to run. Each CI run lost a different one of them (a stall split
# in two, a 45 ms spin with too little CPU to pass the budget, a thread stopped for 30 ms between
# callouts), and each passed when run again. A test that fails twice fails the run.
#
# Never re-run: a crash, an exit test's surprise, or any sanitizer report. Those end the run at
# once with the first run's status. The tests that passed only on the second try are listed, so
# nothing is hidden.
#
# The names of the test functions that recorded an issue in LOG, as a --filter regex.
failed_tests_filter() {
    sed -n 's/^✘ Test \([A-Za-z_][A-Za-z0-9_]*\)(.*recorded an issue.*/\1/p' "$1" | sort -u | paste -sd '|' -
}

# Whether LOG shows something a re-run must not excuse: a sanitizer report or a crash.
is_hard_failure() {
    grep -Eq 'ERROR: (Address|Leak)Sanitizer|WARNING: ThreadSanitizer|SUMMARY: [A-Za-z]*Sanitizer|runtime error:|unexpected signal|Fatal error:|exit code (66|86)' "$1"
}

# Runs "$@" (a `swift test` command line), re-running once the tests that failed; returns the
# status to exit with. Its variables are prefixed `rerun_`: POSIX sh has no locals.
swift_test_with_one_rerun() {
    rerun_log=$(mktemp)
    # Shown as it runs; the status comes through a file (POSIX sh has no pipefail).
    { "$@" 2>&1 && echo 0 >"$rerun_log.status" || echo $? >"$rerun_log.status"; } | tee "$rerun_log"
    rerun_status=$(cat "$rerun_log.status")
    rm -f "$rerun_log.status"
    if [ "$rerun_status" -eq 0 ]; then
        rm -f "$rerun_log"
        return 0
    fi
    rerun_filter=$(failed_tests_filter "$rerun_log")
    if is_hard_failure "$rerun_log" || [ -z "$rerun_filter" ]; then
        rm -f "$rerun_log"
        return "$rerun_status"
    fi
    echo "rerun: these tests failed; running them once more on their own: $rerun_filter" >&2
    rm -f "$rerun_log"
    set +e
    "$@" --filter "($rerun_filter)"
    rerun_again=$?
    set -e
    if [ "$rerun_again" -eq 0 ]; then
        echo "rerun: passed on the second run (timing on a loaded machine): $rerun_filter" >&2
        return 0
    fi
    echo "rerun: failed again: $rerun_filter" >&2
    return "$rerun_again"
}
