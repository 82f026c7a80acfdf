#!/usr/bin/env bash
# Sets everything up and runs the whole test suite (CTest).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
build_dir=${ACC_BUILD_DIR:-build}
ctest --test-dir "$build_dir" --output-on-failure -j 2 "$@"
