#!/usr/bin/env bash
# Heap allocations per training step, unrecorded, under the callback floor
# and at each level: on the transformer LM (CPU, examples/transformer_train.py)
# and on the test accelerator's MLP (tests/scripts/device_train.py, 4 layers
# of 64, batch 32). Each is the difference between a run of 60 steps and
# one of 20, over 40: start-up and import cancel. Counted by a uprobe on
# libc's malloc (perf; root), so the figures are exact, not timings.
#   bench/allocations.sh [BUILD_LIB_DIR]     default build/lib
# Environment: ACC_PYTHON (scripts/find-python.sh), CONFIGS (default
# "unrecorded floor 0 1"), WORKLOADS (default "lm device").
set -euo pipefail
cd "$(dirname "$0")/.."
lib=$(realpath "${1:-build/lib}")
for f in libacc.so libacc_callback_floor.so libacc_testdev.so; do
  [[ -f $lib/$f ]] || { echo "allocations: $lib/$f not found (build first, or name the build's lib directory)" >&2; exit 2; }
done
command -v perf >/dev/null || { echo "allocations: needs perf (apt-get install linux-perf)" >&2; exit 2; }
python=$(scripts/find-python.sh)
libc=$(ldd "$python" | awk '/libc\.so/ { print $3 }')
if ! perf probe -l 2>/dev/null | grep -q 'probe_libc:malloc'; then
  perf probe -q -x "$libc" malloc || { echo "allocations: could not put a probe on $libc's malloc (run as root)" >&2; exit 2; }
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# count VAR=VALUE... PROGRAM...: mallocs of one run.
count() {
  rm -rf "$out/rec"
  perf stat -x, -e probe_libc:malloc env "$@" 2>&1 >/dev/null | awk -F, '/probe_libc:malloc/ { print $1 }'
}
echo "allocations per step (runs of 60 and 20 steps; $python)"
for workload in ${WORKLOADS:-lm device}; do
  if [[ $workload == lm ]]; then
    base=(OMP_NUM_THREADS=1); steps=LM_STEPS; program=("$python" examples/transformer_train.py)
  else
    base=(OMP_NUM_THREADS=1 DEVICE=testdev TESTDEV_LIB="$lib/libacc_testdev.so" LAYERS=4 WIDTH=64 BATCH=32)
    steps=STEPS; program=("$python" tests/scripts/device_train.py)
  fi
  for config in ${CONFIGS:-unrecorded floor 0 1}; do
    case $config in
      unrecorded) extra=() ;;
      floor) extra=(LD_PRELOAD="$lib/libacc_callback_floor.so") ;;
      *) extra=(LD_PRELOAD="$lib/libacc.so" ACC_ENABLE=1 ACC_QUIET=1 ACC_OUTPUT_DIR="$out/rec" ACC_LEVEL="$config") ;;
    esac
    short=$(count "${base[@]}" "${extra[@]}" "$steps=20" "${program[@]}")
    long=$(count "${base[@]}" "${extra[@]}" "$steps=60" "${program[@]}")
    printf '%-7s %-11s %8d\n' "$workload" "$config" $(((long - short) / 40))
  done
done
