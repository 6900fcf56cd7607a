#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Installs what is missing, builds, installs the plugin into /usr/local/lib/mosquitto and starts
# Mosquitto in the background on conf/mosquitto.conf (MQTT on 127.0.0.1:1883, HTTP on :8080).
# It installs only what builds and runs the plugin (scripts/install-deps.sh --example: compiler,
# cmake, the broker and its headers, the libraries, curl, jq), and builds no test; the test
# tools come with scripts/install-deps.sh (no option), which CI runs before scripts/test.sh.
#   scripts/run-example.sh        start (stops an earlier example broker first)
#   scripts/run-example.sh stop   stop it
set -euo pipefail
cd "$(dirname "$0")/.."
state=/run/mosquitto-connections-example
pidfile=$state/mosquitto.pid

stop() {
  if [ -f "$pidfile" ]; then
    pid=$(cat "$pidfile")
    if kill -0 "$pid" 2>/dev/null; then
      kill "$pid"
      for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    fi
    rm -f "$pidfile"
  fi
}

# Installing Debian's mosquitto package starts Debian's own broker service, on port 1883 as the
# example's: the example stops it while it runs (marker file) and starts it again at `stop`.
service_marker=$state/debian-mosquitto-service-stopped
stop_debian_service() {
  if command -v service > /dev/null && service mosquitto status > /dev/null 2>&1; then
    echo "Stopping Debian's mosquitto service, which holds port 1883 (started again at" \
      "'scripts/run-example.sh stop')."
    if ! service mosquitto stop > /dev/null || service mosquitto status > /dev/null 2>&1; then
      echo "Could not stop Debian's mosquitto service: stop it (systemctl stop mosquitto)" \
        "and run this again." >&2
      exit 1
    fi
    touch "$service_marker"
  fi
}

if [ "${1:-start}" = stop ]; then
  stop
  if [ -f "$service_marker" ]; then
    rm -f "$service_marker"
    echo "Starting Debian's mosquitto service again."
    service mosquitto start > /dev/null
  fi
  exit 0
fi

scripts/install-deps.sh --example
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMQC_TESTS=OFF > /dev/null
cmake --build build -j "$(nproc)" --target mosquitto_connections mosquitto_connections_companion
# The plugin and its companion only: a command line in /usr/local/bin would come before the
# .deb's /usr/bin copy on the PATH once the README's .deb is installed too (the clone's
# cli/mosquitto-connections runs as it is).
cmake --install build --prefix /usr/local --component plugin > /dev/null

stop
# The broker drops to user mosquitto before the plugin starts, and the plugin reads the
# broker's configuration file then: keep it where that user can read it.
mkdir -p "$state" /usr/local/etc/mosquitto_connections
stop_debian_service
install -m 0644 conf/mosquitto.conf /usr/local/etc/mosquitto_connections/example.conf
/usr/sbin/mosquitto -c /usr/local/etc/mosquitto_connections/example.conf > "$state/mosquitto.log" 2>&1 &
echo $! > "$pidfile"
for _ in $(seq 100); do
  grep -q "serving on" "$state/mosquitto.log" && break
  kill -0 "$(cat "$pidfile")" 2>/dev/null || { cat "$state/mosquitto.log"; exit 1; }
  sleep 0.1
done
grep "serving on" "$state/mosquitto.log"
echo "Mosquitto runs (pid $(cat "$pidfile"), log $state/mosquitto.log)."
echo "Try: curl -s http://127.0.0.1:8080/api/mqtt/connections | jq ."
echo "     cli/mosquitto-connections list"
echo "Stop it with: scripts/run-example.sh stop"
