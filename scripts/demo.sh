#!/bin/sh
# The main job: builds in release mode and runs `stallwatch demo`, a workload on the main loop
# that stalls once in each category, recorded to a trace and reported.
set -eu
cd "$(dirname "$0")/.."
scripts/install-deps.sh
swift build -c release --product stallwatch
exec .build/release/stallwatch demo "$@"
