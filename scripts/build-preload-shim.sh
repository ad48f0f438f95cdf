#!/bin/sh
# Builds the preload shim, libStallwatchPreloadShim.so, next to the products of a SwiftPM build:
#   scripts/build-preload-shim.sh [debug|release] [swift build options, e.g. --scratch-path P]
# `stallwatch record` preloads the shim instead of libStallwatchPreload.so when both are in its
# directory: the shim is C linked against the C library only, and loads the Swift part itself
# when the process needs it (Sources/StallwatchPreloadShim/loader.c, docs/cli.md). SwiftPM links
# the Swift runtime into every dynamic product, so the C compiler builds this one directly.
#
# Sources: the shim's loader, every interposer of Sources/CStallwatchPreload and every registry of
# Sources/CStallwatchShims (whatever .c files are there now), but for the files that need what a
# process without Swift does not have: preload.c (the Swift part's constructor, which calls into
# Swift) and main_queue.c (libdispatch's main-queue hooks). -z defs makes a new file that needs
# more than the C library fail here, not in every recorded process.
set -eu
cd "$(dirname "$0")/.."
config=${1:-debug}
[ $# -eq 0 ] || shift
bin=$(swift build -c "$config" --show-bin-path "$@")
mkdir -p "$bin"
out="$bin/libStallwatchPreloadShim.so"
sources="Sources/StallwatchPreloadShim/loader.c"
for file in Sources/CStallwatchPreload/*.c Sources/CStallwatchShims/*.c; do
    case "${file##*/}" in
    preload.c | main_queue.c) ;;
    *) sources="$sources $file" ;;
    esac
done
# The toolchain's clang, else the system's cc (both GCC-compatible here).
cc=$(command -v clang || command -v cc)
# shellcheck disable=SC2086
"$cc" -shared -fPIC -O2 -g -std=gnu11 -Wall -Wextra -Werror -Wno-unused-parameter \
    -fvisibility=default -ISources/CStallwatchShims/include -ISources/CStallwatchPreload/include \
    -Wl,-z,defs -Wl,--as-needed -o "$out.tmp" $sources -ldl -lpthread
mv "$out.tmp" "$out"
# The Swift part beside it must export what the shim looks up in it with dlsym: a release build
# leaves an internal @_cdecl function local, and the shim then recorded nothing ("undefined
# symbol: stallwatch_preload_start").
swift_part="$bin/libStallwatchPreload.so"
if [ -e "$swift_part" ] && command -v nm >/dev/null; then
    exported=$(nm -D --defined-only "$swift_part")
    for symbol in $(sed -n 's/.*dlsym([a-z_]*, "\([a-z_]*\)").*/\1/p' Sources/StallwatchPreloadShim/loader.c); do
        if ! printf '%s\n' "$exported" | grep -q " T $symbol\$"; then
            echo "build-preload-shim: $swift_part does not export $symbol, which the shim looks up" >&2
            exit 1
        fi
    done
fi
echo "$out"
