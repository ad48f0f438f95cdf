#!/bin/sh
# Runs the whole test suite (installs the system packages it needs first).
set -eu
cd "$(dirname "$0")/.."
scripts/install-deps.sh
exec swift test "$@"
