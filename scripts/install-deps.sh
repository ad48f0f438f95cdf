#!/bin/sh
# Installs what Stallwatch needs, if anything is missing (as root, or with sudo): Debian
# packages for the build (libunwind, SQLite, libdw, zlib) and for the tests that check outputs
# with their real readers (libxml2-utils for xmllint and the strict JUnit XSD, chromium for the
# `report --html` page, Go's pprof, python3-venv; GLib, pkg-config and Debian's python3 for the
# event loops of programs that never heard of Stallwatch; time for `stallwatch-bench preload`'s peak
# memory), then a small Python venv with duckdb, chdb
# (ClickHouse in process) and opentelemetry-proto from PyPI. Spark is not installed here:
# tools/fleet/check-spark.sh installs pyspark and a JRE itself. Idempotent: a second run
# changes nothing. The venv lives in $STALLWATCH_VENV, else ~/.cache/stallwatch-venv (outside
# the clone, so CI's fresh clones reuse it).
set -eu
need=""
for pkg in libunwind-dev libsqlite3-dev libdw-dev zlib1g-dev libxml2-utils chromium golang-go python3-venv \
    libglib2.0-dev pkg-config python3 time; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || need="$need $pkg"
done
if [ "$(id -u)" -eq 0 ]; then sudo=""; else sudo="sudo"; fi
if [ -n "$need" ]; then
    echo "installing:$need" >&2
    $sudo apt-get update -qq
    # shellcheck disable=SC2086
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq $need >/dev/null
fi

# The venv never fails the install: without PyPI the build and most tests still run, and the
# checks that need these modules skip, saying what is missing.
venv=${STALLWATCH_VENV:-${HOME:-/root}/.cache/stallwatch-venv}
python_modules="duckdb chdb opentelemetry.proto.collector.trace.v1.trace_service_pb2"
if [ -x "$venv/bin/python3" ] && "$venv/bin/python3" -c "import $(echo $python_modules | tr ' ' ',')" 2>/dev/null; then
    exit 0
fi
echo "making the Python venv $venv (duckdb, chdb, opentelemetry-proto)" >&2
if ! { /usr/bin/python3 -m venv "$venv" &&
    "$venv/bin/pip" install -q --disable-pip-version-check duckdb chdb opentelemetry-proto >&2; }; then
    echo "warning: could not make the Python venv $venv; the DuckDB, ClickHouse and OTLP checks will skip" >&2
fi
exit 0
