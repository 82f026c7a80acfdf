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
# CACHE=1 also simulates the caches (callgrind --cache-sim=yes, 32 KiB
# 8-way L1 instruction and data caches of 64-byte lines, a 1 MiB last
# level: a core's L2 on this VM's EPYC) and adds the op threads' L1
# instruction and data misses per step, in millions, and the instruction
# misses above the floor. On the LM most of what level 0 costs beyond its
# instructions is there: torch's dispatcher and acc's per-record code do
# not fit the L1 instruction cache together (docs/guide/performance.md,
# "Per op"). About twice as slow again as counting alone.
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
cache=${CACHE:-0}
[[ $cache == 0 || $cache == 1 ]] || { echo "instructions: CACHE must be 0 or 1 (got '$cache')" >&2; exit 2; }
cache_args=()
[[ $cache == 1 ]] && cache_args=(--cache-sim=yes --I1=32768,8,64 --D1=32768,8,64 --LL=1048576,16,64)
out=${KEEP:-$(mktemp -d)}
mkdir -p "$out"
[[ -n ${KEEP:-} ]] || trap 'rm -rf "$out"' EXIT

# sums TAG: "OPS OTHERS I1 D1", the instructions of one run's op threads
# (those that ran Python or the autograd engine) and of its other threads,
# and the op threads' L1 instruction and data misses (0 without CACHE=1),
# from callgrind's per-thread files.
sums() {
  local ops=0 others=0 i1=0 d1=0 f n mi md
  for f in "$out/$1".out-*; do
    # The summary's columns are named by the events: line (Ir first).
    read -r n mi md < <(awk '/^events:/ { for (i = 2; i <= NF; i++) col[$i] = i }
      /^summary:/ { print $2, ("I1mr" in col ? $col["I1mr"] : 0), ("D1mr" in col ? $col["D1mr"] + $col["D1mw"] : 0); exit }' "$f")
    if grep -q -e 'Py_RunMain' -e 'Engine::thread_main' -e 'Engine::thread_init' "$f"; then
      ops=$((ops + n)) i1=$((i1 + mi)) d1=$((d1 + md))
    else
      others=$((others + n))
    fi
  done
  echo "$ops $others $i1 $d1"
}

# run TAG VAR=VALUE...: the workload's program under callgrind, with that
# environment, into $out/TAG.out-NN (one file per thread).
run() {
  local tag=$1
  shift
  rm -rf "$out/rec" "$out/$tag".out*
  env "$@" valgrind --tool=callgrind --separate-threads=yes --fair-sched=yes "${cache_args[@]}" \
    --callgrind-out-file="$out/$tag.out" "${program[@]}" >"$out/$tag.log" 2>&1 ||
    { echo "instructions: the run $tag failed; its output:" >&2; tail -20 "$out/$tag.log" >&2; exit 1; }
}

# above N BASE [DECIMALS]: N's difference from an earlier row's BASE, in
# millions, or "-"
above() { if [[ -n $2 ]]; then awk -v a="$1" -v b="$2" -v d="${3:-2}" 'BEGIN { printf "%+.*f", d, (a - b) / 1e6 }'; else echo -; fi; }
millions() { awk -v n="$1" 'BEGIN { printf "%.2f", n / 1e6 }'; }
# M misses: three decimals (level 0 adds a few tenths of a million)
misses() { awk -v n="$1" 'BEGIN { printf "%.3f", n / 1e6 }'; }

bench_names lm
echo "instructions per step, millions (runs of $long and $short steps under callgrind; $python)"
header=(workload config "op threads" "others" "above unrecorded" "above floor")
format='%-7s %-11s %10s %10s %16s %12s'
if [[ $cache == 1 ]]; then
  header+=("I1 misses" "D1 misses" "I1 above floor")
  format+=' %10s %10s %15s'
fi
printf "$format\n" "${header[@]}"
for workload in "${workloads[@]}"; do
  bench_workload "$workload"
  unrecorded="" floor="" floor_i1=""
  for config in "${configs[@]}"; do
    bench_config "$config" "$out"
    run "$workload-$config-$short" "${base[@]}" "${extra[@]}" "$steps_var=$short"
    run "$workload-$config-$long" "${base[@]}" "${extra[@]}" "$steps_var=$long"
    read -r ops_s others_s i1_s d1_s < <(sums "$workload-$config-$short")
    read -r ops_l others_l i1_l d1_l < <(sums "$workload-$config-$long")
    steps=$((long - short))
    ops=$(((ops_l - ops_s) / steps)) others=$(((others_l - others_s) / steps))
    i1=$(((i1_l - i1_s) / steps)) d1=$(((d1_l - d1_s) / steps))
    [[ $config == unrecorded ]] && unrecorded=$ops
    [[ $config == floor ]] && floor=$ops floor_i1=$i1
    vs_unrecorded=- vs_floor=- i1_vs_floor=-
    [[ $config != unrecorded ]] && vs_unrecorded=$(above "$ops" "$unrecorded")
    [[ $config != unrecorded && $config != floor ]] && vs_floor=$(above "$ops" "$floor") i1_vs_floor=$(above "$i1" "$floor_i1" 3)
    row=("$workload" "$config" "$(millions "$ops")" "$(millions "$others")" "$vs_unrecorded" "$vs_floor")
    [[ $cache == 1 ]] && row+=("$(misses "$i1")" "$(misses "$d1")" "$i1_vs_floor")
    printf "$format\n" "${row[@]}"
  done
done
