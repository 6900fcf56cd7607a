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
# both lists, the test tools included). The release build comes first; the sanitizer builds then
# run in the background, niced, while the release tests run (docs/building.md, "How long the test
# command takes").
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

build() {  # name, make jobs, cmake options...
  local name=$1 build_jobs=$2
  shift 2
  cmake -S . -B "build-$name" -DMQC_WERROR=ON "$@" > "build-$name.configure.log" 2>&1 ||
    { cat "build-$name.configure.log"; return 1; }
  cmake --build "build-$name" -j "$build_jobs"
  scripts/check-build-headers.py "build-$name"
}

# The sanitizer builds go on in the background, at the lowest CPU priority (nice 19), while the
# release tests run: those mostly wait on brokers, sockets and clocks, and a niced compiler takes
# only the CPU they leave. Each build's output goes to build-<name>.log and is printed when the
# variant's tests are about to start (finish_build waits for it; a failed build fails the run).
# Each runs in its own process group (set -m), stopped whole if this script ends first.
declare -A build_pids=()
stop_builds() { for pid in "${build_pids[@]}"; do kill -- "-$pid" 2> /dev/null || true; done; }
trap stop_builds EXIT
start_build() {  # name, make jobs, cmake options...
  local name=$1
  set -m
  ( renice -n 19 -p "$BASHPID" > /dev/null; build "$@" ) > "build-$name.log" 2>&1 &
  build_pids[$name]=$!
  set +m
}
finish_build() {  # name
  local name=$1 status=0
  wait "${build_pids[$name]}" || status=$?
  unset "build_pids[$name]"
  cat "build-$name.log"
  [ "$status" -eq 0 ] || { echo "build-$name failed ($status)" >&2; return 1; }
}

release_options=(-DCMAKE_BUILD_TYPE=RelWithDebInfo "-DMQC_BROKERS=$matrix")
# asan and tsan stay on the system broker (MQC_BROKERS' default), for time: the matrix checks
# what each broker build exports and does, which a sanitizer on our side does not change.
asan_options=(-DCMAKE_BUILD_TYPE=Debug -DMQC_SANITIZE=address,undefined)
# TSan must own a process from its start, so it cannot ride in the plain broker: the companion
# (where the threads are) is the TSan build, the plugin a plain one (build-release's).
tsan_options=(-DCMAKE_BUILD_TYPE=Debug -DMQC_SANITIZE=thread
  "-DMQC_INTEGRATION_PLUGIN=$PWD/build-release/mosquitto_connections.so")

for variant in "${variants[@]}"; do
  case "$variant" in release | asan | tsan) ;; *)
    echo "unknown variant $variant (release, asan or tsan)" >&2
    exit 2
  esac
done
if wants release || wants tsan; then
  echo "=== build release ==="
  build release "$jobs" "${release_options[@]}"
fi
if wants release; then
  # The other brokers, downloaded and built once into build-release/brokers (cached);
  # unit.broker_symbols needs their manifest.
  scripts/prepare-brokers.py build-release
fi
# The sanitizer builds share the CPU between them.
sanitizers=0
wants asan && sanitizers=$((sanitizers + 1))
wants tsan && sanitizers=$((sanitizers + 1))
if [ "$sanitizers" -gt 0 ]; then
  sanitizer_jobs=$(( jobs / sanitizers > 0 ? jobs / sanitizers : 1 ))
  wants asan && start_build asan "$sanitizer_jobs" "${asan_options[@]}"
  wants tsan && start_build tsan "$sanitizer_jobs" "${tsan_options[@]}"
fi

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

# Integration suites run $jobs at a time (integration/CMakeLists.txt says which take turns or
# run alone; integration/harness.py keeps their ports apart).
if wants release; then
  echo "=== release ==="
  run_ctest release unit -j "$jobs" -LE 'integration|bench'
  run_ctest release integration -j "$jobs" -L integration
  run_ctest release bench -L bench
fi
if wants asan; then
  echo "=== asan ==="
  finish_build asan
  ASAN_OPTIONS=detect_leaks=1 run_ctest asan unit -j "$jobs" -LE 'integration|bench'
  run_ctest asan integration -j "$jobs" -L integration
fi
if wants tsan; then
  echo "=== tsan ==="
  finish_build tsan
  run_ctest tsan unit -j "$jobs" -LE 'integration|bench'
  run_ctest tsan integration -j "$jobs" -L integration
fi
