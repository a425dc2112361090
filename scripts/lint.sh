#!/usr/bin/env bash
# Style and static checks with the checked-in .clang-format and .clang-tidy.
#   scripts/lint.sh          check formatting of every C++ file (fast)
#   scripts/lint.sh --tidy   also run clang-tidy over the library and CLI sources in src/
#                            and ttft's headers (the checks .clang-tidy keeps, as errors;
#                            needs build/compile_commands.json, made by configuring build/)
# scripts/test.sh runs it with --tidy; any finding fails the test command.
set -euo pipefail
cd "$(dirname "$0")/.."
files=$(git ls-files '*.cc' '*.h')
clang-format --dry-run --Werror $files
echo "clang-format: clean"
if [ "${1:-}" = "--tidy" ]; then
  [ -f build/compile_commands.json ] || cmake -S . -B build -G Ninja > /dev/null
  # The translation units of the library modules (ttft_<module>) and the CLI (ttft), as
  # the build compiles them: with unity builds (CMakeLists.txt) one file per batch of 8
  # sources, so clang-tidy parses the third-party headers and matches over their code
  # once per batch, not once per source (it took 9 minutes of CI file by file). Findings
  # in the batch's sources and in ttft's own headers are reported (--header-filter).
  # --config-file: a batch file lies in the build folder, where clang-tidy would not find
  # .clang-tidy; bugprone-suspicious-include is off because a batch includes .cc files.
  # Tests and fuzz targets are left out (GoogleTest's macros trip bugprone checks).
  # -Wno-unknown-warning-option: the compile commands carry GCC-only flags.
  units=$(jq -r '.[] | select(.command | test(" -o CMakeFiles/ttft(_[a-z]+)?[.]dir/")) | .file' \
    build/compile_commands.json)
  [ -n "$units" ] || { echo "clang-tidy: no library sources in build/compile_commands.json"; exit 1; }
  echo "$units" | xargs -P "$(nproc)" -n 1 clang-tidy -p build --quiet \
      --config-file=.clang-tidy --checks=-bugprone-suspicious-include \
      --header-filter='/(src|ttft-headers)/' \
      --extra-arg=-Wno-unknown-warning-option 2> /tmp/ttft-clang-tidy.$$.log ||
    { grep -E "(warning|error):" /tmp/ttft-clang-tidy.$$.log | sort -u; rm -f /tmp/ttft-clang-tidy.$$.log
      echo "clang-tidy: findings above"; exit 1; }
  rm -f /tmp/ttft-clang-tidy.$$.log
  echo "clang-tidy: clean"
fi
