#!/usr/bin/env bash
# Style and static checks with the checked-in .clang-format and .clang-tidy.
#   scripts/lint.sh          check formatting of every C++ file (fast)
#   scripts/lint.sh --tidy   also run clang-tidy over the library and CLI sources in src/
#                            (the checks .clang-tidy keeps, as errors; needs
#                            build/compile_commands.json, made by configuring build/)
# scripts/test.sh runs it with --tidy; any finding fails the test command.
set -euo pipefail
cd "$(dirname "$0")/.."
files=$(git ls-files '*.cc' '*.h')
clang-format --dry-run --Werror $files
echo "clang-format: clean"
if [ "${1:-}" = "--tidy" ]; then
  [ -f build/compile_commands.json ] || cmake -S . -B build -G Ninja > /dev/null
  # Tests and fuzz targets are left out (GoogleTest's macros trip bugprone checks).
  # -Wno-unknown-warning-option: the compile commands carry GCC-only flags.
  git ls-files 'src/*.cc' | grep -v -e '_fuzz.cc$' -e '_test.cc$' |
    xargs -P "$(nproc)" -n 4 clang-tidy -p build --quiet \
      --extra-arg=-Wno-unknown-warning-option 2> /tmp/ttft-clang-tidy.$$.log ||
    { grep -E "(warning|error):" /tmp/ttft-clang-tidy.$$.log | sort -u; rm -f /tmp/ttft-clang-tidy.$$.log
      echo "clang-tidy: findings above"; exit 1; }
  rm -f /tmp/ttft-clang-tidy.$$.log
  echo "clang-tidy: clean"
fi
