#!/usr/bin/env bash
# Installs, from Debian bookworm's packages, everything the build, the tests and the example need.
set -euo pipefail
packages=(
  build-essential cmake pkg-config clang
  libgtest-dev libgmock-dev
  mosquitto mosquitto-clients mosquitto-dev
  libmicrohttpd-dev libcjson-dev prometheus-cpp-dev libssl-dev
  python3-paho-mqtt curl jq openssl prometheus
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update
  apt-get install -y --no-install-recommends "${missing[@]}"
fi
