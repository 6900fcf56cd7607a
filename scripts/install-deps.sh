#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Installs, from Debian's own packages (without Recommends), what this project needs:
#   scripts/install-deps.sh            everything (CI, scripts/test.sh): the packages that build
#                                      and run the plugin, and the test tools
#   scripts/install-deps.sh --example  only those that build, package and run the plugin
#                                      (scripts/run-example.sh): no test tool, no service
#   scripts/install-deps.sh --list [--example]
#                                      print those package names for this machine, install nothing
# The names are in scripts/debian-packages-example.txt and scripts/debian-packages-test.txt (the
# test run checks them: scripts/check-build-headers.py), written for Debian 12 (bookworm), with
# the few that Debian 13 (trixie) names differently marked there. This script picks them for
# this machine's release, VERSION_CODENAME in /etc/os-release: the one place that choice is made.
set -euo pipefail
here="$(dirname "$0")"
lists=("$here/debian-packages-example.txt" "$here/debian-packages-test.txt")
list_only=false
for argument in "$@"; do
  case "$argument" in
    --example) lists=("$here/debian-packages-example.txt") ;;
    --list) list_only=true ;;
    *) echo "usage: $0 [--example] [--list]" >&2; exit 2 ;;
  esac
done
codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")

# A line is NAME, optionally followed by CODENAME=OTHER_NAME (OTHER_NAME '-': none there).
packages=()
while read -r name overrides; do
  case "$name" in '' | '#'*) continue ;; esac
  for override in $overrides; do
    [ "${override%%=*}" = "$codename" ] && name=${override#*=}
  done
  [ "$name" = - ] || packages+=("$name")
done < <(cat "${lists[@]}")

if $list_only; then
  printf '%s\n' "${packages[@]}"
  exit 0
fi
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
if [ ${#lists[@]} -gt 1 ] && { ! command -v node >/dev/null || ! command -v npm >/dev/null; }; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update
  apt-get install -y --no-install-recommends nodejs npm
fi
