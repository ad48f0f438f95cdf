#!/bin/sh
# Installs the Debian packages Stallwatch needs, if any is missing (as root, or with sudo).
set -eu
need=""
for pkg in libunwind-dev libsqlite3-dev libdw-dev zlib1g-dev; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || need="$need $pkg"
done
[ -z "$need" ] && exit 0
if [ "$(id -u)" -eq 0 ]; then sudo=""; else sudo="sudo"; fi
echo "installing:$need" >&2
$sudo apt-get update -qq
# shellcheck disable=SC2086
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq $need >/dev/null
