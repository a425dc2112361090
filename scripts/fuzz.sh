#!/usr/bin/env bash
# Builds the libFuzzer targets (src/*/*_fuzz.cc) with clang and runs each for N
# seconds on its seed corpus (fuzz/<target>/). Every target runs; any crash or
# sanitizer report fails the script at the end (inputs kept in build-fuzz/crashes/).
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_PER_TARGET=${1:-60}
cmake -S . -B build-fuzz -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=Debug \
  -DCMAKE_CXX_FLAGS=-O1 -DTTFT_BUILD_FUZZ=ON -DTTFT_BUILD_TESTS=OFF -DTTFT_BUILD_BENCH=OFF > /dev/null
targets=()
for src in src/*/*_fuzz.cc; do targets+=("$(basename "$src" .cc)"); done
cmake --build build-fuzz -j "$(nproc)" --target "${targets[@]}"
failed=()
for name in "${targets[@]}"; do
  corpus=fuzz/$name
  work=$(mktemp -d)
  [ -d "$corpus" ] && cp -r "$corpus"/. "$work"/
  echo "-- $name"
  if ./build-fuzz/"$name" -max_total_time="$SECONDS_PER_TARGET" -timeout=10 -rss_limit_mb=2048 \
      -print_final_stats=1 -artifact_prefix="$work/" "$work" > "$work.log" 2>&1; then
    tail -n 6 "$work.log"
  else
    failed+=("$name")
    tail -n 40 "$work.log"
    mkdir -p build-fuzz/crashes
    cp "$work"/crash-* "$work"/leak-* "$work"/timeout-* build-fuzz/crashes/ 2>/dev/null || true
  fi
  rm -rf "$work" "$work.log"
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: crashes in ${failed[*]} (inputs in build-fuzz/crashes/)"
  exit 1
fi
echo "fuzz: no crashes in ${#targets[@]} targets"
