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
# The Connect client test (integration/test_connect_clients.py) runs Connect-ES under Node.js
# with npm. Machines of this kind come with Node.js 20 and npm; where they are missing, Debian's
# own are installed (a separate step: a Node.js from elsewhere must not be replaced).
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update
  apt-get install -y --no-install-recommends nodejs npm
fi
