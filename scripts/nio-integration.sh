#!/bin/sh
# Builds Integration/NIO against the real swift-nio and runs its tests: a NIOHTTP1 server watched
# by HeartbeatMonitor (Integration/NIO/Tests). swift-nio comes from the vendored sources
# (`STALLWATCH_NIO_SOURCES`, default ../shared/vendor/swift-nio-sources.tar.gz beside this
# checkout, or /work/shared/vendor), unpacked under $TMPDIR and built offline; without them, from
# GitHub (a connected machine); with neither it says SKIPPED and exits 0. Extra arguments go to
# `swift test`; `scripts/nio-integration.sh bench [ROUNDS] [SECONDS]` runs the requests/s bench
# instead, `scripts/nio-integration.sh bench-record [ROUNDS] [SECONDS]` the same server as a
# program without Stallwatch run plain and under `stallwatch record` (release builds of the CLI,
# the preload library and its shim too), `scripts/nio-integration.sh sample` the server sample's
# two variants.
set -eu
cd "$(dirname "$0")/.."
root=$(pwd)
sources=${STALLWATCH_NIO_SOURCES:-}
if [ -z "$sources" ]; then
    for candidate in "$root/../shared/vendor" /work/shared/vendor; do
        [ ! -e "$candidate/swift-nio-sources.tar.gz" ] || { sources=$candidate/swift-nio-sources.tar.gz; break; }
    done
fi
if [ -n "$sources" ] && [ -e "$sources" ]; then
    dir=${TMPDIR:-/tmp}/stallwatch-nio-vendored
    if [ ! -d "$dir/swift-nio" ]; then
        mkdir -p "$dir"
        tar -xzf "$sources" -C "$dir"
    fi
    export STALLWATCH_NIO_PATH="$dir/swift-nio" SWIFTCI_USE_LOCAL_DEPS=1
    echo "nio-integration: swift-nio from $sources"
elif git ls-remote https://github.com/apple/swift-nio.git HEAD >/dev/null 2>&1; then
    echo "nio-integration: no vendored sources (../shared/vendor); swift-nio from GitHub"
else
    echo "nio-integration: SKIPPED: no vendored swift-nio sources (../shared/vendor or" \
        "STALLWATCH_NIO_SOURCES) and GitHub is unreachable"
    exit 0
fi
export STALLWATCH_ROOT="$root"
# `sample`: the server sample ReportServer, blocking and fixed, one summary each.
if [ "${1:-}" = sample ]; then
    swift build --package-path Integration/NIO --product ReportServer
    Integration/NIO/.build/debug/ReportServer
    exec Integration/NIO/.build/debug/ReportServer --fixed
fi
# `bench [ROUNDS] [SECONDS]`: requests/s of the server with and without monitoring (release).
if [ "${1:-}" = bench ]; then
    shift
    swift build -c release --package-path Integration/NIO --product stallwatch-nio-bench
    exec Integration/NIO/.build/release/stallwatch-nio-bench "$@"
fi
# `bench-record [ROUNDS] [SECONDS]`: requests/s of the server as an unmodified program, plain and
# recorded by the release CLI, whose preload library and shim are beside it (release).
if [ "${1:-}" = bench-record ]; then
    shift
    swift build -c release --product stallwatch
    swift build -c release --product StallwatchPreload
    bin=$(swift build -c release --show-bin-path)
    # The shim, when it is older than its sources or the Swift part (whose exports it checks).
    for file in Sources/StallwatchPreloadShim/*.[ch] Sources/CStallwatchPreload/*.[ch] Sources/CStallwatchShims/*.[ch] \
        Sources/CStallwatchPreload/include/* Sources/CStallwatchShims/include/* "$bin/libStallwatchPreload.so"; do
        [ "$bin/libStallwatchPreloadShim.so" -nt "$file" ] || { scripts/build-preload-shim.sh release; break; }
    done
    swift build -c release --package-path Integration/NIO --product stallwatch-nio-bench
    swift build -c release --package-path Integration/NIO --product NIOBenchServer
    STALLWATCH_CLI="$bin/stallwatch" exec Integration/NIO/.build/release/stallwatch-nio-bench --record "$@"
fi
# The CLI, for the tests' `report` of the server's trace.
swift build --product stallwatch
export STALLWATCH_CLI="$root/.build/debug/stallwatch"
swift build --package-path Integration/NIO --build-tests
swift test --package-path Integration/NIO --skip-build --no-parallel "$@"
