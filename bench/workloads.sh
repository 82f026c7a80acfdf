# Sourced by bench/allocations.sh and bench/instructions.sh, which count
# (heap allocations, instructions) over the same runs: the build checked,
# the two training workloads and the configurations. `tool` names the
# caller in messages.

# bench_setup [DIR]: the repository as working directory; lib, the build's
# lib directory (DIR, default build/lib), checked; python, the interpreter
# that imports torch.
bench_setup() {
  cd "$(dirname "${BASH_SOURCE[0]}")/.."
  lib=$(realpath "${1:-build/lib}")
  local f
  for f in libacc.so libacc_callback_floor.so libacc_testdev.so; do
    [[ -f $lib/$f ]] || { echo "$tool: $lib/$f not found (build first, or name the build's lib directory)" >&2; exit 2; }
  done
  python=$(scripts/find-python.sh)
}

# bench_names DEFAULT_WORKLOADS: workloads and configs, the names WORKLOADS
# and CONFIGS give (defaults DEFAULT_WORKLOADS and "unrecorded floor 0 1"),
# each checked before any run.
bench_names() {
  read -r -a workloads <<<"${WORKLOADS:-$1}"
  read -r -a configs <<<"${CONFIGS:-unrecorded floor 0 1}"
  local name
  for name in "${workloads[@]}"; do bench_workload "$name"; done
  for name in "${configs[@]}"; do bench_config "$name" ""; done
}

# bench_workload NAME: base, its environment; steps_var, the variable that
# sets its step count; program, its command. The transformer LM (CPU,
# examples/transformer_train.py) or the test accelerator's MLP
# (tests/scripts/device_train.py, 4 layers of 64, batch 32, no launch cost).
bench_workload() {
  case $1 in
    lm)
      base=(OMP_NUM_THREADS=1 PYTHONHASHSEED=0); steps_var=LM_STEPS; program=("$python" examples/transformer_train.py) ;;
    device)
      base=(OMP_NUM_THREADS=1 PYTHONHASHSEED=0 DEVICE=testdev TESTDEV_LIB="$lib/libacc_testdev.so" TESTDEV_LAUNCH_US=0
            LAYERS=4 WIDTH=64 BATCH=32)
      steps_var=STEPS; program=("$python" tests/scripts/device_train.py) ;;
    *) echo "$tool: unknown workload '$1' (allowed: lm, device)" >&2; exit 2 ;;
  esac
}

# bench_config NAME OUT: extra, the environment of one configuration:
# unrecorded, the callback floor, an ACC_LEVEL recording into OUT/rec, or
# the NaN/Inf watch (ACC_WATCH=naninf, as overhead.py's --levels watch).
bench_config() {
  case $1 in
    unrecorded) extra=() ;;
    floor) extra=(LD_PRELOAD="$lib/libacc_callback_floor.so") ;;
    0|1|2) extra=(LD_PRELOAD="$lib/libacc.so" ACC_ENABLE=1 ACC_QUIET=1 ACC_OUTPUT_DIR="$2/rec" ACC_LEVEL="$1") ;;
    watch) extra=(LD_PRELOAD="$lib/libacc.so" ACC_ENABLE=1 ACC_QUIET=1 ACC_OUTPUT_DIR="$2/rec" ACC_WATCH=naninf) ;;
    *) echo "$tool: unknown configuration '$1' (allowed: unrecorded, floor, 0, 1, 2, watch)" >&2; exit 2 ;;
  esac
}
