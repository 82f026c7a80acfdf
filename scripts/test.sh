#!/usr/bin/env bash
# Sets everything up and runs the whole test suite (CTest).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
# msprobe's released package, for the tests that run msprobe itself
# (MsprobeRelease); test-torch.sh leaves them to the host suite.
if [[ ${MSPROBE_SETUP:-1} == 1 ]]; then
  if MSPROBE_PYTHON=$(scripts/msprobe-env.sh); then
    export MSPROBE_PYTHON
  else
    echo "test: msprobe's package could not be installed (scripts/msprobe-env.sh); the MsprobeRelease tests fail" >&2
  fi
fi
build_dir=${ACC_BUILD_DIR:-build}
ctest --test-dir "$build_dir" --output-on-failure -j 2 "$@"
