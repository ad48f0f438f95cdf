#!/bin/sh
# Installs what Stallwatch needs, if anything is missing (as root, or with sudo): Debian
# packages for the build (libunwind, SQLite, libdw, zlib) and for the tests that check the
# exports with their real readers (Go's pprof, a JRE for Spark, python3-venv), then a Python
# venv with duckdb, chdb (ClickHouse in process), opentelemetry-proto and pyspark from PyPI.
# Idempotent: a second run changes nothing. The venv lives in $STALLWATCH_VENV, else
# ~/.cache/stallwatch-venv (outside the clone, so CI's fresh clones reuse it).
set -eu
need=""
for pkg in libunwind-dev libsqlite3-dev libdw-dev zlib1g-dev golang-go default-jre-headless python3-venv; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || need="$need $pkg"
done
if [ "$(id -u)" -eq 0 ]; then sudo=""; else sudo="sudo"; fi
if [ -n "$need" ]; then
    echo "installing:$need" >&2
    $sudo apt-get update -qq
    # shellcheck disable=SC2086
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq $need >/dev/null
fi

venv=${STALLWATCH_VENV:-${HOME:-/root}/.cache/stallwatch-venv}
python_modules="duckdb chdb opentelemetry.proto.collector.trace.v1.trace_service_pb2 pyspark"
if [ -x "$venv/bin/python3" ] && "$venv/bin/python3" -c "import $(echo $python_modules | tr ' ' ',')" 2>/dev/null; then
    exit 0
fi
echo "making the Python venv $venv (duckdb, chdb, opentelemetry-proto, pyspark)" >&2
# Not fatal: without PyPI the build and most tests still run; the export checks that need
# these tools then skip, saying what is missing.
if ! { /usr/bin/python3 -m venv "$venv" &&
    "$venv/bin/pip" install -q --disable-pip-version-check duckdb chdb opentelemetry-proto pyspark >&2; }; then
    echo "warning: could not make the Python venv $venv; the DuckDB, ClickHouse, OTLP and Spark checks will skip" >&2
fi
