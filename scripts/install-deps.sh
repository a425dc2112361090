#!/usr/bin/env bash
# Installs every package ttft needs to build, test and benchmark, from Debian 12's
# archive. Idempotent: packages already present are skipped quickly.
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build g++ clang clang-format clang-tidy libclang-rt-14-dev
  libcli11-dev libfmt-dev libsimdjson-dev nlohmann-json3-dev libyaml-cpp-dev
  libcpp-httplib-dev libssl-dev libbrotli-dev libxxhash-dev zlib1g-dev libabsl-dev libpcre2-dev libre2-dev
  libnlopt-dev libgtest-dev libgmock-dev libbenchmark-dev
  prometheus victoria-metrics chromium jq python3-pandas python3-jinja2
)
# node and npm run the browser tests (tests/browser) and the tokenizer's reference
# implementation; a node from elsewhere (NodeSource bundles npm) is used as it is.
if ! command -v node > /dev/null || ! command -v npm > /dev/null; then
  PACKAGES+=(nodejs npm)
fi

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#PACKAGES[@]} packages present"
  exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "install-deps: installing ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
