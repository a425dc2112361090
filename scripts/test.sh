#!/usr/bin/env bash
# Builds ttft and runs the whole test suite: unit and integration tests (Release, g++),
# the same again under AddressSanitizer + UBSan (clang), then every fuzz target for a
# bounded time on its seed corpus. Between the release build and its tests,
# scripts/lint.sh --tidy (formatting and clang-tidy, findings as errors). This is what
# CI runs (.ci/run).
#   FUZZ_SECONDS=N   seconds per fuzz target (default 30, two targets at a time on two
#                    cores: 18 targets take about 5 minutes; 0 skips fuzzing)
#   SKIP_SANITIZE=1  skip the sanitizer pass (local iteration only)
# In the sanitizer build (about ten times slower) the statistical suites run a few seeds
# through the same code (TTFT_SANITIZED_BUILD, set by CMake); the release run measures
# their rates. Each step prints its time, so a slow CI run shows where the time went.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
JOBS=$(nproc)
step_start=$SECONDS
step() {
  echo "== ($((SECONDS - step_start)) s) $*"
  step_start=$SECONDS
}

step "install done; build (release)"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release > /dev/null
cmake --build build -j "$JOBS"
step "build done; lint (clang-format, clang-tidy)"
scripts/lint.sh --tidy
step "lint done; tests (release)"
ctest --test-dir build --output-on-failure -j "$JOBS" --timeout 900

# One clang build serves the sanitizer tests and the fuzz targets (TTFT_BUILD_FUZZ adds
# libFuzzer's coverage instrumentation): a second build of the library for fuzzing
# cost about 8 minutes of CI on two cores.
fuzz_build=""
if [ "${SKIP_SANITIZE:-0}" != "1" ]; then
  step "tests done; build (clang, asan+ubsan, tests and fuzz targets)"
  # Line tables only (-gline-tables-only): the sanitizers' reports keep file:line, and
  # the build skips full debug information.
  cmake -S . -B build-san -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=Debug \
    -DTTFT_SANITIZE=ON -DTTFT_BUILD_FUZZ=ON -DTTFT_BUILD_BENCH=OFF -DCMAKE_CXX_FLAGS=-O1 \
    -DCMAKE_CXX_FLAGS_DEBUG=-gline-tables-only > /dev/null
  cmake --build build-san -j "$JOBS"
  fuzz_build=build-san
  step "build done; tests (asan+ubsan)"
  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
    ctest --test-dir build-san --output-on-failure -j "$JOBS" --timeout 1800
fi

if [ "${FUZZ_SECONDS:-30}" != "0" ] && ls src/*/*_fuzz.cc > /dev/null 2>&1; then
  step "fuzz (${FUZZ_SECONDS:-30}s per target)"
  FUZZ_BUILD_DIR=$fuzz_build scripts/fuzz.sh "${FUZZ_SECONDS:-30}"
fi
step "all tests passed in $SECONDS s"
