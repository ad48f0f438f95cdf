# Sourced by scripts/test.sh, scripts/sanitize.sh and .ci/run: run `swift test` with its output
# shown and kept, and say how many tests ran a second time.
#
# No test is re-run by a script. A test that times real stalls may carry the
# `.timingSensitive("why")` trait (Tests/StallwatchTestSupport/TimingSensitive.swift): it runs again
# once, in the same process, only if its first attempt failed on an expectation, and prints one
# `RETRIED: <Suite>.<test> — <why> — first attempt: <issues>` line. A second failure fails the
# test; a thrown error, a crash or a sanitizer report is never retried.

# run_logged LOG COMMAND...: runs COMMAND, its standard output and error shown and copied to LOG;
# returns COMMAND's status. Its variables are prefixed `logged_`: POSIX sh has no locals.
run_logged() {
    logged_log=$1
    shift
    # The status comes through a file: POSIX sh has no pipefail.
    { "$@" 2>&1 && echo 0 >"$logged_log.status" || echo $? >"$logged_log.status"; } | tee "$logged_log"
    logged_status=$(cat "$logged_log.status")
    rm -f "$logged_log.status"
    return "$logged_status"
}

# retried_summary LOG...: one line, `retried: N`, then ` — ` and the retried tests (`Suite.test`,
# with `×k` when one retried k times, e.g. k cases of a parameterized test), from the logs'
# RETRIED: lines.
retried_summary() {
    cat "$@" | grep -o 'RETRIED: [^ ]*' | sed 's/^RETRIED: //' | awk '
        { if (!($0 in count)) order[++names] = $0; count[$0]++; total++ }
        END {
            line = "retried: " (total + 0)
            for (i = 1; i <= names; i++) {
                name = order[i] (count[order[i]] > 1 ? " ×" count[order[i]] : "")
                line = line (i == 1 ? " — " : ", ") name
            }
            print line
        }'
}

# test_log_path: where this run's log goes: $STALLWATCH_TEST_LOG if set (kept, e.g. by .ci/run),
# else a new temporary file (the caller removes it).
test_log_path() {
    if [ -n "${STALLWATCH_TEST_LOG:-}" ]; then
        echo "$STALLWATCH_TEST_LOG"
    else
        mktemp
    fi
}
