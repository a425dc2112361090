#!/usr/bin/env bash
# Style and static checks with the checked-in .clang-format and .clang-tidy.
#   scripts/lint.sh          check formatting of every C++ file (fast)
#   scripts/lint.sh --tidy   also run clang-tidy over src/ (slow; needs build/compile_commands.json)
set -euo pipefail
cd "$(dirname "$0")/.."
files=$(git ls-files '*.cc' '*.h')
clang-format --dry-run --Werror $files
echo "clang-format: clean"
if [ "${1:-}" = "--tidy" ]; then
  [ -f build/compile_commands.json ] || cmake -S . -B build -G Ninja > /dev/null
  git ls-files 'src/*.cc' | grep -v '_fuzz.cc$' | xargs -P "$(nproc)" -n 4 clang-tidy -p build --quiet
fi
