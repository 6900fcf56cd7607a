#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The README's first command on a bare Debian, and the .deb there: in a debootstrap chroot of
# Debian 12 (bookworm) or 13 (trixie). As root, on a Debian host, from a clone of this repository:
#   scripts/fresh-machine.sh [bookworm|trixie] [--no-test-tools] [--operator-only]
# (default: bookworm; --operator-only runs bare, chroot and the operator-* steps alone)
# Each step is timed and ends PASS, FAIL or SKIP; a failed step does not stop the later ones that
# can still run, and the exit status is 1 when any failed. docs/fresh-machine.md has the results.
#   bare          debootstrap --variant=minbase, once: packed into $cache/SUITE-bare.tar
#   chroot        a fresh copy of that, Debian's archive in sources.list, /proc, /sys, /dev/pts,
#                 /dev/shm, /run mounted, and a fresh clone of this repository's HEAD in /root
#   example       scripts/run-example.sh, as a newcomer runs it: installs, builds, starts Mosquitto
#   example-api   a real mosquitto_sub is listed by curl /api/mqtt/connections, counted by /metrics
#   example-stop  scripts/run-example.sh stop
#   headers       scripts/check-build-headers.py build --example: that list brings every header
#   deb-build     cpack -G DEB in the example's build tree (the file name carries the release)
#   deb-install   apt-get install ./mosquitto-connections_*.deb
#   deb-broker    the release's own /usr/sbin/mosquitto with the `plugin` line for the installed
#                 .so: a real client is listed by curl; stopped
#   operator-root      the README's first screen, "Add it to an existing Mosquitto", in a fresh
#                      copy of the bare root (the same mounts, a fresh clone)
#   operator-mosquitto the existing broker: `apt-get install mosquitto`, started as its systemd
#                      unit starts it (a chroot has no systemd): the unit file's ExecStartPre and
#                      ExecStart commands, read from the installed package, with a NOTIFY_SOCKET
#                      that waits for the broker's READY=1 as Type=notify does
#   operator-readme    the shell block of that README section, read from README.md itself, line
#                      by line in the clone; `systemctl restart mosquitto` alone is replaced, by
#                      TERM to the broker's PID, then the unit's start as above
#   operator-client    a real mosquitto_sub (Debian's mosquitto-clients), then the README's
#                      `mosquitto-connections list` line must show it; everything stopped
#   test-tools    scripts/install-deps.sh (the test tools too), and what paho-mqtt it brings
# Ports: the chroot shares the host's network, and the example listens on 127.0.0.1:1883 and
# :8080. When either is taken on the host, the steps that listen run in their own network
# namespace (unshare -n, loopback only), and the example's packages are installed before it, from
# outside that namespace (it has no route to the archive). MQC_FRESH_NETNS=1 asks for that always
# (two runs at once, one per release, cannot both have the host's 1883). Everything started in the chroot is
# stopped by PID, and the mounts are undone, on every way out.
# Cache (outside the repository): $MQC_CHROOT_CACHE, default /var/cache/mosquitto-connections-chroots:
# SUITE-bare.tar, SUITE-apt (downloaded .debs, so that a second run downloads nothing), SUITE-root
# (the chroot of the last run, replaced by the next), SUITE-out (logs, summary, the .deb).
set -euo pipefail

suite=bookworm
test_tools=true
example=true
for argument in "$@"; do
  case "$argument" in
    bookworm | trixie) suite=$argument ;;
    --no-test-tools) test_tools=false ;;
    --operator-only) example=false; test_tools=false ;;
    *) echo "usage: $0 [bookworm|trixie] [--no-test-tools] [--operator-only]" >&2; exit 2 ;;
  esac
done
[ "$(id -u)" = 0 ] || { echo "$0: run as root (debootstrap, chroot, mount)" >&2; exit 2; }
repository=$(cd "$(dirname "$0")/.." && pwd)
mirror=${MQC_DEBIAN_MIRROR:-http://deb.debian.org/debian}
cache=${MQC_CHROOT_CACHE:-/var/cache/mosquitto-connections-chroots}
bare=$cache/$suite-bare.tar
archives=$cache/$suite-apt
root=$cache/$suite-root
out=$cache/$suite-out
clone=/root/mosquitto-connections
mkdir -p "$cache" "$archives/partial"
rm -rf "$out"
mkdir -p "$out/pids"

# --- clean-up: processes by PID, then mounts --------------------------------------------------
mounted=()
netns_pid=
under_root() {  # the PIDs of the processes whose root directory is the chroot
  find /proc -mindepth 2 -maxdepth 2 -name root -lname "$root" 2> /dev/null |
    sed 's|^/proc/\([0-9]*\)/root$|\1|'
}
stop_pid() {  # PID: TERM, then KILL after 5 s
  local pid=$1
  kill -0 "$pid" 2>/dev/null || return 0
  kill "$pid" 2>/dev/null || true
  for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null || true
}
cleanup() {
  local rc=$? pid left
  trap - EXIT INT TERM
  set +e
  for f in "$out"/pids/*; do [ -f "$f" ] && stop_pid "$(cat "$f")" && rm -f "$f"; done
  if [ -f "$root/run/mosquitto-connections-example/mosquitto.pid" ] && mountpoint -q "$root/proc"; then
    in_chroot "$clone/scripts/run-example.sh" stop > /dev/null 2>&1 || true
  fi
  left=$(under_root)
  if [ -n "$left" ]; then
    echo "fresh-machine: still running in the chroot, stopped now:" $left >&2
    for pid in $left; do stop_pid "$pid"; done
  fi
  [ -n "$netns_pid" ] && stop_pid "$netns_pid"
  local i
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
    umount "${mounted[i]}" 2>/dev/null || umount -l "${mounted[i]}" || true
  done
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

mount_in_root() {  # TYPE OPTIONS PATH-IN-ROOT [SOURCE]
  mount -t "$1" -o "$2" "${4:-$1}" "$root$3"
  mounted+=("$root$3")
}

# --- running in the chroot ---------------------------------------------------------------------
# A login-like, empty environment: what a newcomer's root shell has, not this script's. Arrays,
# not functions, so that `"${loopback[@]}" program &` gives the program's own PID (each of
# nsenter, chroot and env execs the next).
chroot_command=(chroot "$root" /usr/bin/env -i HOME=/root LANG=C.UTF-8 TERM=dumb
  PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin)
# The steps that listen on 127.0.0.1 run so: on the host's network, or in a namespace of their
# own (set below).
loopback=("${chroot_command[@]}")
in_chroot() { "${chroot_command[@]}" "$@"; }
on_loopback() { "${loopback[@]}" "$@"; }
# The line of a broker log that says why it stopped: the loader's, else the first error.
why_stopped() {  # LOG
  grep -m 1 -E 'Load error|undefined symbol' "$1" || grep -m 1 -i -E 'error|unable' "$1" ||
    echo "no error line in $1"
}
package_count() { in_chroot dpkg-query -W -f '${db:Status-Abbrev}\n' | grep -c '^ii'; }

# --- steps -------------------------------------------------------------------------------------
results=()
failed=0
seconds_text() {  # 64.3 -> "1 min 4 s"
  local s
  s=$(printf '%.0f' "$1")
  if [ "$s" -ge 60 ]; then echo "$((s / 60)) min $((s % 60)) s"; else echo "$s s"; fi
}
# step NAME FUNCTION: runs it with errexit on, its output in $out/NAME.log, and records the result.
step() {
  local name=$1 start end rc
  shift
  echo "== $name"
  start=$(date +%s.%N)
  set +e
  (set -e; "$@") > "$out/$name.log" 2>&1
  rc=$?
  set -e
  end=$(date +%s.%N)
  local took
  took=$(seconds_text "$(awk -v a="$start" -v b="$end" 'BEGIN { print b - a }')")
  local note=""
  [ -f "$out/$name.note" ] && note=$(cat "$out/$name.note")
  if [ "$rc" = 0 ]; then
    results+=("PASS  $name  ($took)  $note")
  else
    results+=("FAIL  $name  ($took, exit $rc)  $note")
    failed=1
    echo "-- $name failed (exit $rc); the end of $out/$name.log:"
    tail -n 15 "$out/$name.log" | sed 's/^/   /'
  fi
  echo "   ${results[-1]}"
  return "$rc"
}
skip() {  # NAME REASON
  results+=("SKIP  $1  ($2)")
  echo "== $1"
  echo "   ${results[-1]}"
}
# Steps that each need the one before: NAME FUNCTION REASON triples, run in order. Once one
# fails, each later one is skipped with that step's REASON (the last step's REASON is never
# shown: write "-"). Returns 0: a failure is already in the results.
step_chain() {
  local reason=""
  while [ "$#" -ge 3 ]; do
    if [ -n "$reason" ]; then
      skip "$1" "$reason"
    elif ! step "$1" "$2"; then
      reason=$3
    fi
    shift 3
  done
}
note() {  # appends to a step's note (shown in the summary): NAME TEXT...
  printf '%s ' "${@:2}" >> "$out/$1.note"
}

make_bare() {
  if [ -f "$bare" ]; then
    note bare "cached: $bare"
    return 0
  fi
  command -v debootstrap > /dev/null || {
    apt-get update
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends debootstrap
  }
  rm -rf "$bare.tmp-root"
  debootstrap --variant=minbase "$suite" "$bare.tmp-root" "$mirror"
  tar -C "$bare.tmp-root" --numeric-owner -cf "$bare.tmp" .
  rm -rf "$bare.tmp-root"
  mv "$bare.tmp" "$bare"
  note bare "debootstrap --variant=minbase $suite"
}

make_chroot() {
  # A mount left by a run that was killed hard: this script's own, under its own folder.
  local m
  for m in $(awk -v r="$root" 'index($2, r "/") == 1 {print $2}' /proc/self/mounts | sort -r); do
    umount "$m" || umount -l "$m"
  done
  rm -rf --one-file-system "$root"
  mkdir -p "$root"
  tar -C "$root" --numeric-owner -xf "$bare"
  cat > "$root/etc/apt/sources.list" << EOF
deb $mirror $suite main
deb $mirror $suite-updates main
deb http://deb.debian.org/debian-security $suite-security main
EOF
  rm -f "$root/etc/apt/sources.list.d/debian.sources"
  cp /etc/resolv.conf "$root/etc/resolv.conf"
  # A chroot has no service manager: no package may start its daemon in it (on a real machine
  # Debian's mosquitto starts on :1883, and scripts/run-example.sh stops it while it runs).
  printf '#!/bin/sh\nexit 101\n' > "$root/usr/sbin/policy-rc.d"
  chmod 0755 "$root/usr/sbin/policy-rc.d"
  note chroot "$(package_count) packages"
  git clone --quiet "$repository" "$root$clone"
  note chroot "clone of $(git -C "$repository" rev-parse --short HEAD)"
}

mount_chroot() {
  mount_in_root proc nosuid,nodev,noexec /proc
  mount_in_root sysfs ro,nosuid,nodev,noexec /sys
  mount_in_root devpts newinstance,ptmxmode=0666,mode=0620,gid=5 /dev/pts
  mount_in_root tmpfs mode=1777,nosuid,nodev /dev/shm
  mount_in_root tmpfs mode=0755,nosuid,nodev /run
  mount --bind "$archives" "$root/var/cache/apt/archives"
  mounted+=("$root/var/cache/apt/archives")
}

port_taken() { (exec 3<> "/dev/tcp/127.0.0.1/$1") 2> /dev/null; }

run_example() {
  local before
  before=$(package_count)
  if [ -n "$netns_pid" ]; then
    # Its install step needs the archive, which the namespace cannot reach: done first, here.
    in_chroot "$clone/scripts/install-deps.sh" --example
  fi
  set +e
  on_loopback bash -c "cd $clone && scripts/run-example.sh"
  local rc=$?
  set -e
  note example "$(($(package_count) - before)) packages installed ($(package_count) in all)"
  if [ "$rc" != 0 ]; then
    local log=$root/run/mosquitto-connections-example/mosquitto.log
    if [ -f "$log" ]; then
      note example "broker did not start: $(why_stopped "$log")"
    fi
  fi
  return "$rc"
}

# A real mosquitto_sub, listed by the API and counted by /metrics. CLIENT_ID
client_is_listed() {
  local id=$1 listed=false
  "${loopback[@]}" mosquitto_sub -h 127.0.0.1 -p 1883 -i "$id" -t 'events/site1/#' -q 1 -V mqttv5 \
    > "$out/$id.sub.log" 2>&1 &
  echo $! > "$out/pids/$id"
  for _ in $(seq 50); do
    if on_loopback curl -s http://127.0.0.1:8080/api/mqtt/connections > "$out/$id.json" 2>&1 &&
      on_loopback jq -e --arg id "$id" \
        '.data.connections[] | select(.client_id == $id) | .subscriptions[0].channel' \
        < "$out/$id.json"; then
      listed=true
      break
    fi
    sleep 0.2
  done
  cat "$out/$id.json"
  echo
  on_loopback curl -s http://127.0.0.1:8080/metrics | grep '^kubemq_mqtt_connections' || true
  stop_pid "$(cat "$out/pids/$id")"
  rm -f "$out/pids/$id"
  $listed
}

example_api() {
  client_is_listed fresh-example-sub
  note example-api "fresh-example-sub listed by curl /api/mqtt/connections"
}

example_stop() {
  in_chroot "$clone/scripts/run-example.sh" stop
  nothing_left_running
}

nothing_left_running() {  # fails, naming them, when processes still run in the chroot
  local left
  left=$(under_root)
  [ -z "$left" ] || { echo "still running in the chroot:"; ps -o pid,args -p "${left//$'\n'/,}"; return 1; }
}

check_headers() {
  set +e
  in_chroot python3 "$clone/scripts/check-build-headers.py" "$clone/build" --example \
    > "$out/headers.out" 2>&1
  local rc=$?
  set -e
  cat "$out/headers.out"
  note headers "$(grep -o '[0-9]* headers from outside the repository, from [0-9]* packages' \
    "$out/headers.out")"
  return "$rc"
}

deb_build() {
  in_chroot bash -c "cd $clone/build && cpack -G DEB"
  local deb
  deb=$(cd "$root$clone/build" && ls mosquitto-connections_*.deb)
  cp "$root$clone/build/$deb" "$out/"
  in_chroot dpkg-deb --field "$clone/build/$deb" Version Depends
  note deb-build "$deb"
}

deb_install() {
  local before
  before=$(package_count)
  in_chroot bash -c "cd $clone/build && DEBIAN_FRONTEND=noninteractive apt-get install -y ./mosquitto-connections_*.deb"
  in_chroot dpkg-query -W mosquitto mosquitto-connections
  note deb-install "$(($(package_count) - before)) packages installed with it;" \
    "mosquitto $(in_chroot dpkg-query -W -f '${Version}' mosquitto)"
}

deb_broker() {
  local plugin
  plugin=$(in_chroot dpkg -L mosquitto-connections | grep '/mosquitto_connections\.so$')
  # The broker drops to user mosquitto, which reads this file when the plugin starts.
  mkdir -p "$root/etc/mosquitto-connections-check"
  cat > "$root/etc/mosquitto-connections-check/mosquitto.conf" << EOF
listener 1883 127.0.0.1
allow_anonymous true
plugin $plugin
plugin_opt_http_port 8080
plugin_opt_http_bind 127.0.0.1
log_dest stderr
EOF
  cat "$root/etc/mosquitto-connections-check/mosquitto.conf"
  "${loopback[@]}" /usr/sbin/mosquitto -c /etc/mosquitto-connections-check/mosquitto.conf \
    > "$out/deb-broker.mosquitto.log" 2>&1 &
  local pid=$!
  echo "$pid" > "$out/pids/deb-broker"
  local serving=false
  for _ in $(seq 100); do
    grep -q "serving on" "$out/deb-broker.mosquitto.log" && { serving=true; break; }
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  cat "$out/deb-broker.mosquitto.log"
  if ! $serving; then
    note deb-broker "$(in_chroot /usr/sbin/mosquitto -h 2>&1 | head -n 1 || true):" \
      "$(why_stopped "$out/deb-broker.mosquitto.log")"
    stop_pid "$pid"
    rm -f "$out/pids/deb-broker"
    return 1
  fi
  set +e
  client_is_listed fresh-deb-sub
  local rc=$?
  set -e
  stop_pid "$pid"
  rm -f "$out/pids/deb-broker"
  note deb-broker "$(grep -m 1 -o 'mosquitto version [0-9.]*' "$out/deb-broker.mosquitto.log");" \
    "fresh-deb-sub listed: $([ "$rc" = 0 ] && echo yes || echo no)"
  [ "$rc" = 0 ] && nothing_left_running
}

test_tools_step() {
  local before
  before=$(package_count)
  in_chroot "$clone/scripts/install-deps.sh"
  note test-tools "$(($(package_count) - before)) packages installed ($(package_count) in all);"
  note test-tools "paho-mqtt $(in_chroot python3 -c 'import paho.mqtt; print(paho.mqtt.__version__)')"
  note test-tools "node $(in_chroot node --version);"
  # The integration tests' harness makes its clients so (paho-mqtt 1.6's API): does this paho?
  note test-tools "the harness's mqtt.Client(client_id=, protocol=): $(in_chroot python3 -c '
import paho.mqtt.client as mqtt
try:
    mqtt.Client(client_id="x", protocol=mqtt.MQTTv311)
    print("works")
except Exception as error:
    print("fails:", type(error).__name__, error)')"
}

# --- the README's first screen: an existing Debian broker, then the README's block ----------
# A fresh root for it: everything in the last one stopped, its mounts undone, a new copy.
fresh_root() {
  nothing_left_running || { local pid; for pid in $(under_root); do stop_pid "$pid"; done; }
  local i
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
    umount "${mounted[i]}" || umount -l "${mounted[i]}"
  done
  mounted=()
  make_chroot
  mount_chroot
}

# The unit's commands, from the installed package's mosquitto.service: KEY (ExecStartPre or
# ExecStart), one command a line, without systemd's prefixes (- @ : + !).
unit_commands() {
  local unit
  unit=$(in_chroot dpkg -L mosquitto | grep -m 1 '/systemd/system/mosquitto\.service$')
  sed -n "s/^$1=[-@:+!]*//p" "$root$unit"
}

# Starts the broker as systemd does for Type=notify: ExecStartPre, then ExecStart with
# NOTIFY_SOCKET, done when the broker sends READY=1 (what `systemctl start` waits for).
start_unit() {
  local command words notify=/run/mqc-systemd-notify
  echo "unit: $(in_chroot dpkg -L mosquitto | grep -m 1 '/systemd/system/mosquitto\.service$')"
  while IFS= read -r command; do
    echo "ExecStartPre: $command"
    read -ra words <<< "$command"
    in_chroot "${words[@]}"
  done < <(unit_commands ExecStartPre)
  command=$(unit_commands ExecStart)
  [ -n "$command" ] && [ "$(wc -l <<< "$command")" = 1 ]
  echo "ExecStart: $command"
  read -ra words <<< "$command"
  rm -f "$root$notify"
  python3 - "$root$notify" > "$out/operator-notify.log" 2>&1 << 'PYTHON' &
import os, socket, sys, time
path = sys.argv[1]
listener = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
listener.bind(path)
os.chmod(path, 0o777)  # the broker may send it after dropping to its user
listener.settimeout(1)
end = time.monotonic() + 60
while time.monotonic() < end:
    try:
        message = listener.recv(4096).decode(errors="replace")
    except socket.timeout:
        continue
    print("notify:", message.replace("\n", " "), flush=True)
    if "READY=1" in message.split("\n"):
        sys.exit(0)
sys.exit(1)
PYTHON
  local listener=$!
  echo "$listener" > "$out/pids/notify"
  for _ in $(seq 50); do [ -S "$root$notify" ] && break; sleep 0.1; done
  "${loopback[@]}" NOTIFY_SOCKET=$notify "${words[@]}" >> "$out/operator-broker.out" 2>&1 &
  local pid=$!
  echo "$pid" > "$out/pids/operator-broker"
  local ready=false
  for _ in $(seq 600); do
    if ! kill -0 "$listener" 2> /dev/null; then
      wait "$listener" && ready=true
      break
    fi
    kill -0 "$pid" 2> /dev/null || break
    sleep 0.1
  done
  stop_pid "$listener"
  rm -f "$out/pids/notify"
  cat "$out/operator-notify.log"
  $ready || { echo "no READY=1 from the broker (pid $pid)"; tail -n 20 "$root/var/log/mosquitto/mosquitto.log" 2> /dev/null; return 1; }
  echo "broker pid $pid ready"
}

stop_unit() {  # systemd's stop: TERM to the main PID, waiting for it
  local pid
  pid=$(cat "$out/pids/operator-broker")
  echo "stop: TERM to $pid"
  stop_pid "$pid"
  rm -f "$out/pids/operator-broker"
}

operator_root() {
  fresh_root
  note operator-root "$(package_count) packages; clone of $(git -C "$repository" rev-parse --short HEAD)"
}

operator_mosquitto() {
  local before
  before=$(package_count)
  in_chroot bash -c 'export DEBIAN_FRONTEND=noninteractive; apt-get update && apt-get install -y mosquitto'
  note operator-mosquitto "apt-get install mosquitto: $(($(package_count) - before)) packages" \
    "($(package_count) in all), mosquitto $(in_chroot dpkg-query -W -f '${Version}' mosquitto);"
  start_unit
  note operator-mosquitto "started as its unit:$(unit_commands ExecStart)"
}

# The README's block: the first ```sh block of its section "Add it to an existing Mosquitto".
readme_block() {
  awk '/^## / { in_section = ($0 == "## Add it to an existing Mosquitto") }
       in_section && /^```sh$/ && !done { in_block = 1; next }
       in_block && /^```$/ { in_block = 0; done = 1 }
       in_block' "$root$clone/README.md"
}

operator_readme() {
  local block line restarted=false count=0 before output
  block=$(readme_block)
  printf '%s\n' "$block" > "$out/operator-readme.block"
  [ "$(grep -c '^systemctl restart mosquitto\( \|$\)' <<< "$block")" = 1 ] ||
    { echo "README.md: no single 'systemctl restart mosquitto' line in the block:"; echo "$block"; return 1; }
  before=$(package_count)
  while IFS= read -r line; do
    [ -n "$line" ] || continue
    count=$((count + 1))
    echo "## README line $count: $line"
    if [ "$line" = "systemctl restart mosquitto" ] || [[ "$line" == "systemctl restart mosquitto "* ]]; then
      # The one substitution: no systemd in a chroot.
      local restart_started=$SECONDS
      stop_unit
      start_unit
      echo "line $count (stop, then the unit's start): $((SECONDS - restart_started)) s" >> "$out/operator-readme.times"
      restarted=true
      continue
    fi
    # The lines before the restart need the archive; from the restart on they talk to the broker
    # (in the namespace, when there is one).
    local rc=0 log=$out/operator-readme.line$count started=$SECONDS
    if $restarted; then
      on_loopback bash -e -c "cd $clone && $line" < /dev/null > "$log" 2>&1 || rc=$?
    else
      in_chroot bash -e -c "cd $clone && $line" < /dev/null > "$log" 2>&1 || rc=$?
    fi
    cat "$log"
    echo "## line $count took $((SECONDS - started)) s, exit $rc"
    echo "line $count: $((SECONDS - started)) s" >> "$out/operator-readme.times"
    output=$(cat "$log")
    if [ "$rc" != 0 ]; then
      echo "## README line $count failed (exit $rc): $line"
      note operator-readme "line $count failed (exit $rc): $line"
      return 1
    fi
    if [[ "$line" == *"/healthz"* ]] && [ "$output" != ok ]; then
      echo "## README line $count printed '$output', not ok"
      note operator-readme "/healthz said '$output'"
      return 1
    fi
  done <<< "$block"
  note operator-readme "$count lines of README.md, $(($(package_count) - before)) packages installed" \
    "($(package_count) in all);"
  note operator-readme "$(grep -m 1 -o 'mosquitto_connections: version [^(]*' "$root/var/log/mosquitto/mosquitto.log")"
}

operator_client() {
  local list_line output listed=false
  list_line=$(readme_block | grep -m 1 '^mosquitto-connections list')
  list_line=${list_line%%#*}
  list_line=${list_line%"${list_line##*[! ]}"}  # without the spaces before the comment
  in_chroot dpkg-query -W mosquitto-clients > /dev/null 2>&1 ||
    in_chroot bash -c 'DEBIAN_FRONTEND=noninteractive apt-get install -y mosquitto-clients'
  "${loopback[@]}" mosquitto_sub -h 127.0.0.1 -p 1883 -i newcomer-sub -t 'events/site1/#' -q 1 \
    > "$out/newcomer-sub.sub.log" 2>&1 &
  echo $! > "$out/pids/newcomer-sub"
  for _ in $(seq 50); do
    output=$(on_loopback bash -c "$list_line" 2>&1) || true
    if grep -q '^newcomer-sub ' <<< "$output"; then listed=true; break; fi
    sleep 0.2
  done
  echo "\$ $list_line"
  echo "$output"
  stop_pid "$(cat "$out/pids/newcomer-sub")"
  rm -f "$out/pids/newcomer-sub"
  stop_unit
  note operator-client "newcomer-sub listed by '$list_line': $($listed && echo yes || echo no)"
  $listed && nothing_left_running
}

# --- the run -----------------------------------------------------------------------------------
echo "fresh-machine: Debian $suite, cache $cache, logs $out"
step bare make_bare || exit 1
step chroot make_chroot || exit 1
mount_chroot
if [ "${MQC_FRESH_NETNS:-0}" = 1 ] || port_taken 1883 || port_taken 8080; then
  command -v nsenter unshare ip > /dev/null
  unshare -n sleep 86400 &
  netns_pid=$!
  sleep 0.2
  nsenter -t "$netns_pid" -n ip link set lo up
  loopback=(nsenter -t "$netns_pid" -n "${chroot_command[@]}")
  echo "   the listening steps run in a network namespace of their own (loopback only):" \
    "MQC_FRESH_NETNS=1, or 127.0.0.1:1883 or :8080 is taken on this host"
fi
if $example; then
  step_chain example run_example "the example did not start" example-api example_api -
  step example-stop example_stop || true
  step headers check_headers || true
  step_chain deb-build deb_build "no .deb" deb-install deb_install "not installed" \
    deb-broker deb_broker -
fi
if step operator-root operator_root; then
  step_chain operator-mosquitto operator_mosquitto "Debian's broker did not start" \
    operator-readme operator_readme "the README's block failed" \
    operator-client operator_client -
fi
if $test_tools; then
  step test-tools test_tools_step || true
fi

{
  echo "fresh-machine: Debian $suite ($(cat "$root/etc/debian_version")), $(date -u +%Y-%m-%d)"
  printf '%s\n' "${results[@]}"
} | tee "$out/summary.txt"
exit "$failed"
