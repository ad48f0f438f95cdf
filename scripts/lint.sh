#!/bin/sh
# Checks every Swift file of the package against .swift-format (`swift format`, which ships with
# the toolchain): the manifest, the plugins, the sources, tests, benchmarks, samples and the NIO
# integration, and the layers of Sources/Stallwatch (scripts/check-layers.sh). Prints each
# finding; exits non-zero if there is any.
#   scripts/lint.sh                 to fix most findings: swift format -i -r -p <the same paths>
set -eu
cd "$(dirname "$0")/.."
scripts/check-layers.sh
exec swift format lint --strict --recursive --parallel \
    Package.swift Plugins Sources Tests Benchmarks Samples Integration
