#!/bin/sh
# Builds Integration/NIO against the real swift-nio and runs its tests: a NIOHTTP1 server watched
# by HeartbeatMonitor (Integration/NIO/Tests). swift-nio comes from the vendored sources
# (`STALLWATCH_NIO_SOURCES`, default ../shared/vendor/swift-nio-sources.tar.gz beside this
# checkout), unpacked under $TMPDIR and built offline; without them, from GitHub (a connected
# machine). Extra arguments go to `swift test`.
set -eu
cd "$(dirname "$0")/.."
root=$(pwd)
sources=${STALLWATCH_NIO_SOURCES:-$root/../shared/vendor/swift-nio-sources.tar.gz}
if [ -e "$sources" ]; then
    dir=${TMPDIR:-/tmp}/stallwatch-nio-vendored
    if [ ! -d "$dir/swift-nio" ]; then
        mkdir -p "$dir"
        tar -xzf "$sources" -C "$dir"
    fi
    export STALLWATCH_NIO_PATH="$dir/swift-nio" SWIFTCI_USE_LOCAL_DEPS=1
    echo "nio-integration: swift-nio from $sources"
else
    echo "nio-integration: no vendored sources at $sources; swift-nio from GitHub"
fi
export STALLWATCH_ROOT="$root"
# The CLI, for the tests' `report` of the server's trace.
swift build --product stallwatch
export STALLWATCH_CLI="$root/.build/debug/stallwatch"
swift build --package-path Integration/NIO --build-tests
swift test --package-path Integration/NIO --skip-build --no-parallel "$@"
