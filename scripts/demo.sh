#!/usr/bin/env bash
# Sets everything up, then does acc's main job on a bundled example: records
# the same unmodified training script twice — once as the reference, once on
# a "device" whose aten::gelu kernel is slightly wrong (a test library loaded
# by the script stands in for a new accelerator) — and lets acc-analyzer
# name the op where the two runs start to drift.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
build_dir=$(realpath "${ACC_BUILD_DIR:-build}")
python=$(scripts/find-python.sh)
out=${DEMO_OUT:-demo_record}
rm -rf "$out"
script=tests/scripts/gelu_mlp.py
wrong_gelu=$build_dir/tests/compare/libacc_test_wrong_gelu.so
record() {
  LD_PRELOAD="$build_dir/lib/libacc.so" ACC_LEVEL=2 ACC_STACK=python ACC_OUTPUT_DIR="$1" "$python" "$script"
}

echo "== reference run: LD_PRELOAD=$build_dir/lib/libacc.so ACC_LEVEL=2 ACC_STACK=python $python $script"
record "$out/reference"
echo "== device under test: the same, with aten::gelu's CPU kernel made slightly wrong"
WRONG_GELU_LIB=$wrong_gelu record "$out/device"
echo "== acc-analyzer compare $out/reference $out/device -o $out/compare"
status=0
"$build_dir/bin/acc-analyzer" compare "$out/reference" "$out/device" -o "$out/compare" || status=$?
if [[ $status -ne 1 ]]; then
  echo "demo: expected compare to find the divergence (exit 1), got exit $status" >&2
  exit 1
fi
echo "== demo done: open $out/compare/report.html"
