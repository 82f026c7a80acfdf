#!/usr/bin/env bash
# Installs the Debian packages acc needs (when missing) and builds it.
#   scripts/setup.sh              build into ./build
#   ACC_BUILD_DIR=dir scripts/setup.sh
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  build-essential cmake pkg-config binutils
  libtorch-dev python3-torch python3-torchvision python3-numpy
  libunwind-dev libzstd-dev nlohmann-json3-dev libgtest-dev libbenchmark-dev
  python3-openpyxl chromium
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  if [[ $(id -u) -ne 0 ]]; then
    echo "setup: not root; run: sudo apt-get install ${missing[*]}" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

build_dir=${ACC_BUILD_DIR:-build}
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo ${ACC_CMAKE_ARGS:-}
cmake --build "$build_dir" -j "$(nproc)"
echo "setup: built $build_dir/lib/libacc.so and $build_dir/bin/acc-analyzer"
