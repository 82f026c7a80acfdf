#!/usr/bin/env bash
# Instructions per training step, counted by callgrind, on the threads that
# run the program's ops ("op threads": Python's, the autograd engine's) and
# on all others ("others": acc's writer, mostly). Each figure is the
# difference between a run of LONG steps and one of SHORT, over LONG -
# SHORT: start-up and import cancel. Unlike the timings of overhead.py and
# per_op.py, which spread by a fifth and more on a shared VM, counts repeat
# to within about 30,000 a step, so a change of 1% of acc's cost shows.
# The writer compresses a frame every 100 ms or 1 MiB, so its count varies
# by the frames a run happened to write: read it over 5 steps or more.
# Keep SHORT at 2 or more: early steps do more (the test device's MLP ran
# 12.73 M on the op threads in step 1, 12.61 M a step in steps 2 and 3).
# Workloads and configurations are allocations.sh's (bench/workloads.sh):
# the transformer LM (CPU) and the test accelerator's MLP.
#   bench/instructions.sh [BUILD_LIB_DIR]     default build/lib
# Environment: ACC_PYTHON (scripts/find-python.sh), CONFIGS (default
# "unrecorded floor 0 1"), WORKLOADS (default "lm"), SHORT and LONG (default
# 3 and 6), KEEP=DIR to keep callgrind's files (one per thread) for
# callgrind_annotate. A configuration takes about 5 minutes on the LM on a
# 2-core VM.
#
# Counts are not times: acc's code runs at a few instructions a nanosecond,
# torch's vector kernels at several times that, and what one thread hands
# another costs cache misses that no count shows. A change that moves work
# off the op thread must also be timed (per_op.py, overhead.py).
# Threads run under valgrind's fair scheduling (--fair-sched=yes): by
# default the writer ran far behind the op thread, so records it hands back
# for reuse came late and the op thread allocated new ones, which no
# unvalgrinded run does.
set -euo pipefail
tool=instructions
source "$(dirname "$0")/workloads.sh"
bench_setup "${1:-}"
command -v valgrind >/dev/null || { echo "instructions: needs valgrind (apt-get install valgrind)" >&2; exit 2; }
short=${SHORT:-3}
long=${LONG:-6}
[[ $short =~ ^[0-9]+$ && $long =~ ^[0-9]+$ && $long -gt $short ]] ||
  { echo "instructions: SHORT and LONG must be step counts with LONG > SHORT (got '$short' and '$long')" >&2; exit 2; }
out=${KEEP:-$(mktemp -d)}
mkdir -p "$out"
[[ -n ${KEEP:-} ]] || trap 'rm -rf "$out"' EXIT

# sums TAG: "OPS OTHERS", the instructions of one run's op threads (those
# that ran Python or the autograd engine) and of its other threads, from
# callgrind's per-thread files.
sums() {
  local ops=0 others=0 f n
  for f in "$out/$1".out-*; do
    n=$(awk '/^summary:/ { print $2; exit }' "$f")
    if grep -q -e 'Py_RunMain' -e 'Engine::thread_main' -e 'Engine::thread_init' "$f"; then
      ops=$((ops + n))
    else
      others=$((others + n))
    fi
  done
  echo "$ops $others"
}

# run TAG VAR=VALUE...: the workload's program under callgrind, with that
# environment, into $out/TAG.out-NN (one file per thread).
run() {
  local tag=$1
  shift
  rm -rf "$out/rec" "$out/$tag".out*
  env "$@" valgrind --tool=callgrind --separate-threads=yes --fair-sched=yes \
    --callgrind-out-file="$out/$tag.out" "${program[@]}" >"$out/$tag.log" 2>&1 ||
    { echo "instructions: the run $tag failed; its output:" >&2; tail -20 "$out/$tag.log" >&2; exit 1; }
}

# the difference of this row's count from an earlier row's, or "-"
above() { if [[ -n $1 ]]; then awk -v a="$ops" -v b="$1" 'BEGIN { printf "%+.2f", (a - b) / 1e6 }'; else echo -; fi; }

bench_names lm
echo "instructions per step, millions (runs of $long and $short steps under callgrind; $python)"
printf '%-7s %-11s %10s %10s %16s %12s\n' workload config "op threads" "others" "above unrecorded" "above floor"
for workload in "${workloads[@]}"; do
  bench_workload "$workload"
  unrecorded="" floor=""
  for config in "${configs[@]}"; do
    bench_config "$config" "$out"
    run "$workload-$config-$short" "${base[@]}" "${extra[@]}" "$steps_var=$short"
    run "$workload-$config-$long" "${base[@]}" "${extra[@]}" "$steps_var=$long"
    read -r ops_s others_s < <(sums "$workload-$config-$short")
    read -r ops_l others_l < <(sums "$workload-$config-$long")
    ops=$(((ops_l - ops_s) / (long - short)))
    others=$(((others_l - others_s) / (long - short)))
    [[ $config == unrecorded ]] && unrecorded=$ops
    [[ $config == floor ]] && floor=$ops
    vs_unrecorded=- vs_floor=-
    [[ $config != unrecorded ]] && vs_unrecorded=$(above "$unrecorded")
    [[ $config != unrecorded && $config != floor ]] && vs_floor=$(above "$floor")
    printf '%-7s %-11s %10.2f %10.2f %16s %12s\n' "$workload" "$config" \
      "$(awk -v n="$ops" 'BEGIN { print n / 1e6 }')" "$(awk -v n="$others" 'BEGIN { print n / 1e6 }')" \
      "$vs_unrecorded" "$vs_floor"
  done
done
