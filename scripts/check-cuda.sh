#!/usr/bin/env bash
# Checks acc on a CUDA GPU, which the test suite cannot assume (CI has none):
#   scripts/check-cuda.sh [BUILD_DIR]     (default: build)
# It checks that acc's statistics kernel (compiled by NVRTC) gives on the
# GPU what its CPU pass gives (tests/scripts/cuda_stats_check.py) and serves
# the level-1 recording; with tests/scripts/device_train.py on cuda:0, that
#  - recorded losses equal the unrecorded run's, bit for bit, at levels 0-2;
#  - compare of a CPU and a CUDA recording finds no divergence;
#  - check replays the CUDA recording's ops on the CPU without a deviation;
#  - recorded steps raise no more torch.cuda.set_sync_debug_mode("warn")
#    warnings than unrecorded ones;
# and prints the seconds of each run's last step. Exits 1 on the first
# check that fails, 2 when there is no Python with a CUDA torch.
set -uo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
python=$(scripts/find-python.sh) || exit 2
if ! "$python" -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)'; then
  echo "check-cuda: $python's torch sees no CUDA device" >&2
  exit 2
fi
lib=$build/lib/libacc.so analyzer=$build/bin/acc-analyzer replay=$build/bin/acc-replay
# check's replay stage runs in acc-replay: without it the last checks fail
# minutes in, after the recordings (as on an H100 with only acc, acc_core
# and acc-analyzer built).
for f in "$lib" "$analyzer" "$replay"; do
  [[ -e $f ]] || { echo "check-cuda: no $f: build first (scripts/setup.sh, or the targets acc acc-analyzer acc-replay)" >&2; exit 2; }
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export STEPS=3 LAYERS=4 WIDTH=256 BATCH=64 ACC_QUIET=1
script=tests/scripts/device_train.py
fail() { echo "check-cuda: FAILED: $*" >&2; exit 1; }
losses() { grep -o 'loss [^ ]*' "$1"; }
last_step() { grep '^step' "$1" | tail -1 | awk '{print $NF}'; }

LD_PRELOAD=$lib ACC_LEVEL=0 ACC_OUTPUT_DIR="$work/kernel" "$python" tests/scripts/cuda_stats_check.py ||
  fail "acc's CUDA statistics kernel differs from its CPU pass"
DEVICE=cuda "$python" $script >"$work/plain.txt" || fail "the unrecorded run"
echo "unrecorded: last step $(last_step "$work/plain.txt") s"
for level in 0 1 2; do
  DEVICE=cuda LD_PRELOAD=$lib ACC_LEVEL=$level ACC_OUTPUT_DIR="$work/cuda$level" "$python" $script \
    >"$work/level$level.txt" || fail "the level-$level run"
  cmp -s <(losses "$work/plain.txt") <(losses "$work/level$level.txt") || fail "level $level changed the losses"
  echo "level $level: losses bit-identical, last step $(last_step "$work/level$level.txt") s"
done
kernel=$("$python" -c 'import json, sys; print(json.load(open(sys.argv[1]))["device_stats"].get("cuda_kernel", "none"))' \
  "$work"/cuda1/rank0/manifest.json)
echo "level 1 statistics by: $kernel"
[[ $kernel == acc_tensor_stats* ]] || fail "level 1 did not use acc's statistics kernel ($kernel)"
DEVICE=cpu LD_PRELOAD=$lib ACC_LEVEL=2 ACC_OUTPUT_DIR="$work/cpu" "$python" $script >/dev/null || fail "the CPU run"
"$analyzer" compare "$work/cpu" "$work/cuda2" -o "$work/compare" >"$work/compare.txt" 2>&1 ||
  { cat "$work/compare.txt"; fail "compare of CPU and CUDA"; }
head -2 "$work/compare.txt"
"$analyzer" check "$work/cuda2" -o "$work/check" >"$work/check.txt" 2>&1 ||
  { cat "$work/check.txt"; fail "check of the CUDA recording"; }
head -2 "$work/check.txt"

cat >"$work/sync.py" <<'EOF'
import warnings
import torch
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.GELU(), torch.nn.Linear(64, 8)).cuda()
optimizer = torch.optim.AdamW(model.parameters())
x, y = torch.randn(32, 64, device="cuda"), torch.randn(32, 8, device="cuda")
torch.cuda.set_sync_debug_mode("warn")
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    for _ in range(3):
        optimizer.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        optimizer.step()
print(len(caught))
EOF
plain=$("$python" "$work/sync.py") || fail "the synchronisation probe"
for level in 1 2; do
  n=$(LD_PRELOAD=$lib ACC_LEVEL=$level ACC_OUTPUT_DIR="$work/sync$level" "$python" "$work/sync.py") ||
    fail "the synchronisation probe at level $level"
  [[ $n == "$plain" ]] || fail "level $level: $n synchronising-operation warnings, unrecorded $plain"
done
echo "synchronising operations in 3 AdamW steps: $plain unrecorded, the same at levels 1 and 2"
echo "check-cuda: all checks passed"
