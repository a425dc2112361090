#!/usr/bin/env bash
# Builds the libFuzzer targets (src/*/*_fuzz.cc) with clang and runs each for N
# seconds on its seed corpus (fuzz/<target>/). Any crash or sanitizer report fails.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_PER_TARGET=${1:-60}
cmake -S . -B build-fuzz -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=Debug \
  -DCMAKE_CXX_FLAGS=-O1 -DTTFT_BUILD_FUZZ=ON -DTTFT_BUILD_TESTS=OFF -DTTFT_BUILD_BENCH=OFF > /dev/null
cmake --build build-fuzz -j "$(nproc)"
for src in src/*/*_fuzz.cc; do
  name=$(basename "$src" .cc)
  corpus=fuzz/$name
  work=$(mktemp -d)
  [ -d "$corpus" ] && cp -r "$corpus"/. "$work"/
  echo "-- $name"
  ./build-fuzz/"$name" -max_total_time="$SECONDS_PER_TARGET" -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 "$work" 2>&1 | tail -n 12
  rm -rf "$work"
done
