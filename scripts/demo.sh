#!/usr/bin/env bash
# Sets everything up and records the bundled MLP example without changing it,
# then lists what was recorded.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
build_dir=$(realpath "${ACC_BUILD_DIR:-build}")
python=$(scripts/find-python.sh)
out=${DEMO_OUT:-demo_record}
rm -rf "$out"

echo "== unrecorded run"
"$python" examples/mlp_train.py
echo "== recorded run: LD_PRELOAD=$build_dir/lib/libacc.so ACC_OUTPUT_DIR=$out"
LD_PRELOAD="$build_dir/lib/libacc.so" ACC_OUTPUT_DIR="$out" ACC_STACK=python \
  "$python" examples/mlp_train.py
echo "== acc-analyzer list $out (first step's training ops)"
"$build_dir/bin/acc-analyzer" list "$out" --stacks | sed -n '/aten::linear\.[0-9]*\.fwd/,$p' | head -40
