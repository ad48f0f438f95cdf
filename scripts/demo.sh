#!/bin/sh
# The main job: builds in release mode and runs the run-loop benchmark.
set -eu
cd "$(dirname "$0")/.."
scripts/install-deps.sh
swift build -c release --product stallwatch-bench
exec .build/release/stallwatch-bench loop
