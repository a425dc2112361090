#!/usr/bin/env bash
# Builds the libFuzzer targets (src/*/*_fuzz.cc) with clang and runs each for N
# seconds on its seed corpus (fuzz/<target>/), as many at once as there are cores
# (each libFuzzer run is one process on one core). Every target runs; any crash or
# sanitizer report fails the script at the end (inputs kept in the build folder's crashes/).
set -euo pipefail
cd "$(dirname "$0")/.."
#   FUZZ_BUILD_DIR=DIR  an existing clang build configured with -DTTFT_BUILD_FUZZ=ON
#                       (scripts/test.sh passes its sanitizer build); default: build-fuzz,
#                       configured here with the fuzz targets only
SECONDS_PER_TARGET=${1:-60}
JOBS=$(nproc)
BUILD=${FUZZ_BUILD_DIR:-build-fuzz}
if [ "$BUILD" = build-fuzz ]; then
  cmake -S . -B build-fuzz -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=Debug \
    -DCMAKE_CXX_FLAGS=-O1 -DTTFT_BUILD_FUZZ=ON -DTTFT_BUILD_TESTS=OFF -DTTFT_BUILD_BENCH=OFF > /dev/null
fi
targets=()
for src in src/*/*_fuzz.cc; do targets+=("$(basename "$src" .cc)"); done
cmake --build "$BUILD" -j "$JOBS" --target "${targets[@]}"

# Runs one target; its log goes to $2.log and its status to $2.rc.
run_target() {
  local name=$1 work=$2
  local corpus=fuzz/$name
  mkdir -p "$work"
  [ -d "$corpus" ] && cp -r "$corpus"/. "$work"/
  # Real files from ../shared/data seed the readers when it is there (never copied into
  # the repository: the checked-in seeds are written by the project).
  local shared=../shared/data/real-telemetry
  if [ -d "$shared" ]; then
    case $name in
      exposition_fuzz) cp "$shared"/*.prom "$work"/ 2> /dev/null || true ;;
      span_otlp_fuzz) cp "$shared"/*otlp*.json* "$shared"/*sink*.jsonl "$work"/ 2> /dev/null || true ;;
    esac
  fi
  # -max_total_time bounds the run; the outer timeout bounds a hung process.
  if timeout $((SECONDS_PER_TARGET + 120)) ./"$BUILD"/"$name" \
      -max_total_time="$SECONDS_PER_TARGET" -timeout=10 -rss_limit_mb=2048 \
      -print_final_stats=1 -artifact_prefix="$work/" "$work" > "$work.log" 2>&1; then
    echo 0 > "$work.rc"
  else
    echo 1 > "$work.rc"
  fi
}

scratch=$(mktemp -d)
running=0
for name in "${targets[@]}"; do
  run_target "$name" "$scratch/$name" &
  running=$((running + 1))
  if [ "$running" -ge "$JOBS" ]; then
    wait -n || true
    running=$((running - 1))
  fi
done
wait

failed=()
for name in "${targets[@]}"; do
  work=$scratch/$name
  echo "-- $name"
  if [ "$(cat "$work.rc" 2>/dev/null)" = 0 ]; then
    tail -n 6 "$work.log"
  else
    failed+=("$name")
    tail -n 40 "$work.log"
    mkdir -p "$BUILD"/crashes
    cp "$work"/crash-* "$work"/leak-* "$work"/timeout-* "$BUILD"/crashes/ 2>/dev/null || true
  fi
done
rm -rf "$scratch"
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: crashes in ${failed[*]} (inputs in $BUILD/crashes/)"
  exit 1
fi
echo "fuzz: no crashes in ${#targets[@]} targets (${SECONDS_PER_TARGET} s each, ${JOBS} at a time)"
