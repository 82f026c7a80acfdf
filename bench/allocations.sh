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
tool=allocations
source "$(dirname "$0")/workloads.sh"
bench_setup "${1:-}"
command -v perf >/dev/null || { echo "allocations: needs perf (apt-get install linux-perf)" >&2; exit 2; }
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
bench_names "lm device"
echo "allocations per step (runs of 60 and 20 steps; $python)"
for workload in "${workloads[@]}"; do
  bench_workload "$workload"
  for config in "${configs[@]}"; do
    bench_config "$config" "$out"
    short=$(count "${base[@]}" "${extra[@]}" "$steps_var=20" "${program[@]}")
    long=$(count "${base[@]}" "${extra[@]}" "$steps_var=60" "${program[@]}")
    printf '%-7s %-11s %8d\n' "$workload" "$config" $(((long - short) / 40))
  done
done
