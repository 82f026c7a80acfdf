#!/usr/bin/env bash
# Installs the Debian packages acc needs (when missing) and builds it.
#   scripts/setup.sh              build into ./build
#   ACC_BUILD_DIR=dir scripts/setup.sh
#   ACC_BUILD_TARGETS="acc acc-analyzer ..." scripts/setup.sh   only those targets
#   ACC_DEBUG_INFO=0 scripts/setup.sh   without debug information (CI)
#   ACC_UNITY_BUILD=1 scripts/setup.sh  the analyzer 8 files to a unit: half its build time (CI)
#   ACC_CMAKE_ARGS="-DVAR=value ..."    more CMake options
#   scripts/setup.sh --print-packages   the Debian packages it may install
#   scripts/setup.sh --packages-only    install what is missing, build nothing
#   scripts/setup.sh --install PKG...   install those packages when missing (other scripts' needs)
# acc builds against the torch of the Python that scripts/find-python.sh
# finds (ACC_PYTHON, then probing): a pip, venv or conda torch works as it is.
# Debian's torch is installed only when no Python can import torch.
set -euo pipefail
cd "$(dirname "$0")/.."

# minizip: the .pt files of msprobe dumps, and libxlsxwriter's own zip
# library (trixie's libxlsxwriter-dev names it without pulling it in).
# file: cpack's Debian package reads its libraries' dependencies with it.
build_packages=(
  build-essential cmake pkg-config binutils file
  libunwind-dev libzstd-dev nlohmann-json3-dev libgtest-dev libbenchmark-dev libxlsxwriter-dev libminizip-dev zlib1g-dev libcli11-dev
)
torch_packages=(libtorch-dev python3-torch python3-torchvision)
# The tests read xlsx reports with openpyxl and screenshot HTML reports;
# torch.compile's CPU backend (inductor) builds C++ with setuptools and
# Python's headers.
# python3-venv: the environment of msprobe's released package
# (scripts/msprobe-env.sh). gdb: a test whose program hangs prints its
# threads' stacks (tests/README.md).
test_packages=(python3-numpy python3-openpyxl chromium python3-setuptools python3-dev python3-venv gdb)

# Installs those of the packages given that are missing (needs root).
install_missing() {
  local missing=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  ((${#missing[@]})) || return 0
  echo "setup: installing ${missing[*]}"
  if [[ $(id -u) -ne 0 ]]; then
    echo "setup: not root; run: sudo apt-get install ${missing[*]}" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q --no-install-recommends "${missing[@]}"
}

packages_only=0
case "${1:-}" in
  --packages-only) packages_only=1 ;;
  --print-packages)
    printf '%s\n' "${build_packages[@]}" "${torch_packages[@]}" "${test_packages[@]}"
    exit 0
    ;;
  --install)
    shift
    install_missing "$@"
    exit 0
    ;;
esac

packages=("${build_packages[@]}" "${test_packages[@]}")
if ! python=$(scripts/find-python.sh 2>/dev/null); then
  echo "setup: no Python can import torch; installing Debian's torch"
  packages+=("${torch_packages[@]}")
else
  echo "setup: building against the torch of $python"
fi
install_missing "${packages[@]}"

((packages_only)) && exit 0
build_dir=${ACC_BUILD_DIR:-build}
# ACC_DEBUG_INFO=0 leaves out debug information (-g), which takes a quarter
# of the build's time; CI builds so (.ci/run). The flags are given either
# way, so that a build folder follows the variable at its next configure.
case ${ACC_DEBUG_INFO:-1} in
  1) flags="-O2 -g -DNDEBUG" ;;
  0) flags="-O2 -DNDEBUG" ;;
  *) echo "setup: ACC_DEBUG_INFO='${ACC_DEBUG_INFO}' is not allowed: 1 (the default, with debug information) or 0 (without)" >&2
     exit 2 ;;
esac
case ${ACC_UNITY_BUILD:-0} in
  0) unity=OFF ;;
  1) unity=ON ;;
  *) echo "setup: ACC_UNITY_BUILD='${ACC_UNITY_BUILD}' is not allowed: 0 (the default, one unit per file) or 1 (the analyzer 8 files to a unit)" >&2
     exit 2 ;;
esac
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=$flags" \
  "-DCMAKE_C_FLAGS_RELWITHDEBINFO=$flags" "-DACC_UNITY_BUILD=$unity" ${ACC_CMAKE_ARGS:-}
# ACC_BUILD_TARGETS: only those targets (CI's suites that run a few test
# groups build only those groups' programs; .ci/run).
targets=()
[[ -n ${ACC_BUILD_TARGETS:-} ]] && targets=(--target ${ACC_BUILD_TARGETS})
cmake --build "$build_dir" -j "$(nproc)" "${targets[@]}"
echo "setup: built $build_dir/lib/libacc.so and $build_dir/bin/acc-analyzer"
