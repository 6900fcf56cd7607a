#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Builds and runs every test, three times over:
#   build-release  RelWithDebInfo, warnings as errors: unit, fuzz-corpus replay, integration
#                  against every broker of the matrix (scripts/prepare-brokers.py: the system's
#                  2.0.11, Debian's 2.0.21, 2.1 built with make and with CMake, and 2.1
#                  without TLS and WebSockets for the client layout's suites), and the
#                  benchmarks' quick run (label bench: every tool runs, no timing asserted)
#   build-asan     ASan + UBSan: the same on the system broker (the broker runs with the ASan
#                  runtime preloaded)
#   build-tsan     TSan: unit tests, and integration with a TSan companion behind a plain plugin,
#                  on the system broker
# After each build, scripts/check-build-headers.py checks that every header it read from outside
# the repository comes from a package scripts/install-deps.sh installs.
# It first installs what is missing of the packages that build and test it (scripts/install-deps.sh:
# both lists, the test tools included). What runs side by side, and why: below, and
# docs/building.md, "How long the test command takes".
# Usage: scripts/test.sh [release|asan|tsan ...]   (default: all three)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
# The plain integration.<suite> tests follow MQC_BROKER (integration/CMakeLists.txt): here they
# are the system broker's.
unset MQC_BROKER
# Every broker the release build's integration suites run against.
matrix="system;2.0.21-debian;2.1-make;2.1-cmake;2.1-bare"
jobs=$(nproc)
variants=("$@")
[ ${#variants[@]} -gt 0 ] || variants=(release asan tsan)
wants() { [[ " ${variants[*]} " == *" $1 "* ]]; }

configure() {  # name, cmake options...
  local name=$1
  shift
  cmake -S . -B "build-$name" -DMQC_WERROR=ON "$@" > "build-$name.configure.log" 2>&1 ||
    { cat "build-$name.configure.log"; return 1; }
}

build() {  # name, make jobs, cmake options...   (at the nice level $build_nice, 0 if unset)
  local name=$1 build_jobs=$2
  shift 2
  configure "$name" "$@" || return 1
  nice -n "${build_nice:-0}" cmake --build "build-$name" -j "$build_jobs"
  scripts/check-build-headers.py "build-$name"
}

# Jobs that run in the background, each in its own process group (set -m), stopped whole if this
# script ends first; each job's output goes to build-<name>.log and is printed when the script
# waits for it (finish_job), so that the output of jobs running side by side is not interleaved.
declare -A job_pids=()
stop_jobs() { for pid in "${job_pids[@]}"; do kill -- "-$pid" 2> /dev/null || true; done; }
trap stop_jobs EXIT
start_job() {  # name, nice level, command...
  local name=$1 level=$2
  shift 2
  set -m
  ( renice -n "$level" -p "$BASHPID" > /dev/null; "$@" ) > "build-$name.log" 2>&1 &
  job_pids[$name]=$!
  set +m
}
finish_job() {  # name
  local name=$1 status=0
  wait "${job_pids[$name]}" || status=$?
  unset "job_pids[$name]"
  cat "build-$name.log"
  [ "$status" -eq 0 ] || { echo "$name failed ($status)" >&2; return 1; }
}

release_options=(-DCMAKE_BUILD_TYPE=RelWithDebInfo "-DMQC_BROKERS=$matrix")
# asan and tsan stay on the system broker (MQC_BROKERS' default), for time: the matrix checks
# what each broker build exports and does, which a sanitizer on our side does not change.
# Both sanitized builds keep line tables only (-g1): a sanitizer's report still names each
# frame's function, file and line, and the compiler writes about a sixth less per file
# (docs/building.md).
debug_lines=(-DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG=-g1 -DCMAKE_C_FLAGS_DEBUG=-g1)
asan_options=("${debug_lines[@]}" -DMQC_SANITIZE=address,undefined)
# TSan must own a process from its start, so it cannot ride in the plain broker: the companion
# (where the threads are) is the TSan build, the plugin a plain one (build-release's).
tsan_options=("${debug_lines[@]}" -DMQC_SANITIZE=thread
  "-DMQC_INTEGRATION_PLUGIN=$PWD/build-release/mosquitto_connections.so")

for variant in "${variants[@]}"; do
  case "$variant" in release | asan | tsan) ;; *)
    echo "unknown variant $variant (release, asan or tsan)" >&2
    exit 2
  esac
done
# ctest, with its output also kept in build-<variant>/ctest-<label>.log; afterwards the ten
# slowest tests of that run are printed, so that a test's cost stays visible.
run_ctest() {  # variant, label, ctest arguments...
  local variant=$1 label=$2 status=0
  shift 2
  ctest --test-dir "build-$variant" --output-on-failure "$@" 2>&1 |
    tee "build-$variant/ctest-$label.log" || status=$?
  echo "--- the ten slowest of $variant $label ---"
  # awk, not head: head stops reading after ten lines, and sort, still writing (820 unit tests
  # are more than a pipe holds), then dies of SIGPIPE, which pipefail makes the script's exit.
  sed -nE 's/^ *[0-9]+\/[0-9]+ Test +#[0-9]+: ([^ ]+) [ .*]*[A-Za-z* ]+ +([0-9.]+) sec$/\2 \1/p' \
    "build-$variant/ctest-$label.log" | sort -rn | awk 'NR <= 10'
  return "$status"
}

# A sanitizer variant, whole, in the background: its build at a low CPU priority (the release
# build and tests run meanwhile), its unit tests, then, once the release integration suites have
# ended, its integration suites. ASan's build is the larger, so it builds at nice 17, ahead of
# TSan's at 19 (about 1.5 times the share of what the release work leaves): at 19 and 19 ASan's
# path ended 2 to 3 minutes after TSan's, at 16 and 19 TSan's 1:44 after ASan's.
declare -A sanitizer_build_nice=([asan]=17 [tsan]=19)
sanitizer_variant() {  # variant, make jobs, cmake options...
  local variant=$1
  build_nice=${sanitizer_build_nice[$variant]} build "$@"
  echo "=== $variant unit ==="
  if [ "$variant" = asan ]; then
    ASAN_OPTIONS=detect_leaks=1 run_ctest "$variant" unit -j "$jobs" -LE 'integration|bench'
  else
    run_ctest "$variant" unit -j "$jobs" -LE 'integration|bench'
  fi
  # Bounded: the release suites' own timeouts end them well within two hours.
  local waited=0
  while [ -e "$release_integration_running" ] && [ "$waited" -lt 7200 ]; do
    sleep 1
    waited=$((waited + 1))
  done
  echo "=== $variant integration ==="
  run_ctest "$variant" integration -j "$jobs" -L integration
}
# While this file exists the release integration suites run; the sanitizer variants start
# theirs after it is gone.
release_integration_running=$PWD/build-release/integration-running
rm -f "$release_integration_running"
release_integration() {
  local status=0
  run_ctest release integration -j $((jobs + 1)) -L integration \
    -E '^integration\.deb_package$' || status=$?
  rm -f "$release_integration_running"
  return "$status"
}

# The order (docs/building.md, "How long the test command takes"): the release build without
# the unit tests' binary, while the other brokers are prepared; then, side by side, the release
# integration suites (they mostly wait on brokers, sockets and clocks), the unit tests' binary
# and the release unit tests, and the sanitizer builds at the lowest priority, each followed by
# its unit tests; the benchmarks' quick run after the release suites; the ASan and TSan
# integration suites side by side once the release ones have ended (integration/run_alone.py
# keeps the suites that must run alone alone across the two).
if wants release || wants tsan; then
  echo "=== build release ==="
  configure release "${release_options[@]}"
  # The other brokers, downloaded and built once into build-release/brokers (cached);
  # unit.broker_symbols needs their manifest.
  if wants release; then start_job brokers 0 scripts/prepare-brokers.py build-release; fi
  cmake --build build-release -j "$jobs" --target mqc_all_but_unit_tests
fi
if wants release; then
  finish_job brokers
  # One suite more than cores: a release pass at two at a time kept a third of one core busy.
  # integration.deb_package waits for the whole build: cpack builds every target first.
  touch "$release_integration_running"
  start_job release-integration 0 release_integration
fi
# The sanitizer builds share what CPU the release work leaves.
for variant in asan tsan; do
  options="${variant}_options[@]"
  if wants "$variant"; then
    start_job "$variant" 0 sanitizer_variant "$variant" "$jobs" "${!options}"
  fi
done
if wants release || wants tsan; then
  nice -n 10 cmake --build build-release -j "$jobs"
  scripts/check-build-headers.py build-release
fi
if wants release; then
  echo "=== release unit ==="
  run_ctest release unit -j "$jobs" -LE 'integration|bench'
  run_ctest release package -R '^integration\.deb_package$'
  echo "=== release integration ==="
  finish_job release-integration
  echo "=== release bench ==="
  run_ctest release bench -L bench
fi
for variant in asan tsan; do
  if wants "$variant"; then
    echo "=== $variant ==="
    finish_job "$variant"
  fi
done
