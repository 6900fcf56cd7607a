#!/usr/bin/env bash
# Installs what is missing, builds, installs the plugin into /usr/local/lib/mosquitto and starts
# Mosquitto in the background on conf/mosquitto.conf (MQTT on 127.0.0.1:1883, HTTP on :8080).
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

if [ "${1:-start}" = stop ]; then
  stop
  exit 0
fi

scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo > /dev/null
cmake --build build -j "$(nproc)" --target mosquitto_connections mosquitto_connections_companion
cmake --install build --prefix /usr/local > /dev/null

stop
# The broker drops to user mosquitto before the plugin starts, and the plugin reads the
# broker's configuration file then: keep it where that user can read it.
mkdir -p "$state" /usr/local/etc/mosquitto_connections
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
echo "Stop it with: scripts/run-example.sh stop"
