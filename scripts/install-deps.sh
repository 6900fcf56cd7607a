#!/usr/bin/env bash
# Installs, from Debian bookworm's packages, everything the build, the tests and the example need:
# the packages named in scripts/debian-packages.txt (the one list; the test run checks it).
set -euo pipefail
list="$(dirname "$0")/debian-packages.txt"
mapfile -t packages < <(grep -v -e '^[[:space:]]*#' -e '^[[:space:]]*$' "$list")
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update
  apt-get install -y --no-install-recommends "${missing[@]}"
fi
