#!/bin/sh
# Runs the fleet Spark job in local mode on a generated fleet and checks that its signature
# table is `stallwatch report`'s: tools/fleet/check-spark.sh [TRACES] (default 200).
# Installs what only it needs if missing (a JRE from Debian, pyspark into the venv that
# scripts/install-deps.sh makes). Not part of .ci/run: Spark's start-up alone takes most of a
# minute on a 2-core machine (see tools/fleet/README.md).
set -eu
count=${1:-200}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
venv=${STALLWATCH_VENV:-${HOME:-/root}/.cache/stallwatch-venv}
cd "$root"
"$root/scripts/install-deps.sh"
if ! command -v java >/dev/null 2>&1; then
    if [ "$(id -u)" -eq 0 ]; then sudo=""; else sudo="sudo"; fi
    echo "installing: default-jre-headless" >&2
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq default-jre-headless >/dev/null
fi
if ! "$venv/bin/python3" -c "import pyspark" 2>/dev/null; then
    echo "installing pyspark into $venv" >&2
    "$venv/bin/pip" install -q --disable-pip-version-check pyspark >&2
fi
swift build --product stallwatch >/dev/null
swift build --product stallwatch-bench >/dev/null
bin=$(swift build --show-bin-path)
work=$(mktemp -d "${TMPDIR:-/tmp}/stallwatch-spark.XXXXXX")
trap 'rm -rf "$work"' EXIT
"$bin/stallwatch-bench" generate-fleet "$work/traces" "$count" >/dev/null
"$bin/stallwatch" export "$work/traces" --format jsonl -o "$work/stalls.jsonl"
"$bin/stallwatch" report "$work/traces" --json --top 10 >"$work/report.json"
start=$(date +%s)
"$venv/bin/python3" "$here/spark_signatures.py" "$work/stalls.jsonl" >"$work/spark.jsonl" 2>"$work/spark.log" || {
    cat "$work/spark.log" >&2
    exit 1
}
end=$(date +%s)
echo "spark local mode: $((end - start)) s for $(wc -l <"$work/stalls.jsonl") stall lines from $count traces"
"$venv/bin/python3" "$here/compare.py" "$work/report.json" "$work/spark.jsonl"
