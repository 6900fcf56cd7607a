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
# both lists, the test tools included).
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

build() {  # name, cmake options...
  local name=$1
  shift
  cmake -S . -B "build-$name" -DMQC_WERROR=ON "$@" > "build-$name.configure.log" 2>&1 ||
    { cat "build-$name.configure.log"; return 1; }
  cmake --build "build-$name" -j "$jobs"
  scripts/check-build-headers.py "build-$name"
}

for variant in "${variants[@]}"; do
  echo "=== $variant ==="
  case "$variant" in
    release)
      build release -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DMQC_BROKERS=$matrix"
      # The other brokers, downloaded and built once into build-release/brokers (cached);
      # unit.broker_symbols needs their manifest.
      scripts/prepare-brokers.py build-release
      ctest --test-dir build-release --output-on-failure -j "$jobs" -LE 'integration|bench'
      ctest --test-dir build-release --output-on-failure -L integration
      ctest --test-dir build-release --output-on-failure -L bench
      ;;
    asan)
      # asan and tsan stay on the system broker (MQC_BROKERS' default), for time: one
      # integration pass takes 6.5 minutes on 2 cores (release build), and the matrix checks
      # what each broker build exports and does, which a sanitizer on our side does not change.
      build asan -DCMAKE_BUILD_TYPE=Debug -DMQC_SANITIZE=address,undefined
      ASAN_OPTIONS=detect_leaks=1 ctest --test-dir build-asan --output-on-failure -j "$jobs" -LE 'integration|bench'
      ctest --test-dir build-asan --output-on-failure -L integration
      ;;
    tsan)
      # TSan must own a process from its start, so it cannot ride in the plain broker: the
      # companion (where the threads are) is the TSan build, the plugin a plain one.
      build release -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DMQC_BROKERS=$matrix"
      build tsan -DCMAKE_BUILD_TYPE=Debug -DMQC_SANITIZE=thread \
        "-DMQC_INTEGRATION_PLUGIN=$PWD/build-release/mosquitto_connections.so"
      ctest --test-dir build-tsan --output-on-failure -j "$jobs" -LE 'integration|bench'
      ctest --test-dir build-tsan --output-on-failure -L integration
      ;;
    *)
      echo "unknown variant $variant (release, asan or tsan)" >&2
      exit 2
      ;;
  esac
done
