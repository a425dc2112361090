#!/usr/bin/env bash
# One command from a fresh Debian 12 machine to the main job: installs what ttft
# needs, builds it, and runs `ttft drill` on the built-in seed scenario.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DTTFT_BUILD_TESTS=OFF > /dev/null
cmake --build build --target ttft
./build/ttft drill "$@"
