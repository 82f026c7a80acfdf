#!/usr/bin/env bash
# The readers of untrusted files under libFuzzer, and the analyzer's unit
# tests under AddressSanitizer and UndefinedBehaviorSanitizer:
#   scripts/fuzz.sh [SECONDS]    each fuzz target runs SECONDS (default 60)
# Builds the targets it needs into build-fuzz (ACC_FUZZ_BUILD_DIR) with
# clang, installed when missing. Each target starts from its seeds in
# fuzz/corpus/<target>/ and from what earlier runs found (kept in the build
# folder). A crash, a leak, a sanitizer report or an uncaught exception
# fails the run and leaves the input as build-fuzz/crash-* (replay it with
# build-fuzz/bin/<target> FILE).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
if ! [[ $seconds =~ ^[0-9]+$ ]] || ((seconds < 1)); then
  echo "fuzz: SECONDS must be a whole number >= 1 (got '$seconds')" >&2
  exit 2
fi
scripts/setup.sh --packages-only
# clang, and its libFuzzer runtime (a package of its own, named by clang's
# major version: libclang-rt-14-dev on bookworm).
scripts/setup.sh --install clang
scripts/setup.sh --install "libclang-rt-$(clang++ --version | sed -n 's/.*clang version \([0-9]*\).*/\1/p;q')-dev"

build=${ACC_FUZZ_BUILD_DIR:-build-fuzz}
root=$PWD
mkdir -p "$build"
# -O1 -g1: what ASan advises, line numbers in its reports, and a build
# about half as long as RelWithDebInfo's.
CC=clang CXX=clang++ cmake -S . -B "$build" -DCMAKE_BUILD_TYPE= -DCMAKE_CXX_FLAGS="-O1 -g1" -DCMAKE_C_FLAGS="-O1 -g1" \
  -DACC_FUZZ=ON -DACC_SANITIZE=ON \
  -DACC_BUILD_BENCH=OFF ${ACC_CMAKE_ARGS:-} >"$build/configure.log" 2>&1 || {
  tail -20 "$build/configure.log" >&2
  exit 1
}
fuzzers=(fuzz_records fuzz_record_body fuzz_manifest fuzz_msprobe_json fuzz_pt)
# Unit tests of what does not load torch (torch's own libraries are not
# instrumented): the format, the configuration, the queue, the analyzer.
units=(format_test config_test ring_buffer_test selector_test content_table_test compare_unit_test)
cmake --build "$build" -j "$(nproc)" --target "${fuzzers[@]}" "${units[@]}"

status=0
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
for t in "${units[@]}"; do
  if "$build/bin/$t" --gtest_brief=1 >"$build/$t.log" 2>&1; then
    echo "fuzz: $t passed under ASan and UBSan"
  else
    tail -40 "$build/$t.log" >&2
    echo "fuzz: $t FAILED under ASan and UBSan (log: $build/$t.log)" >&2
    status=1
  fi
done
for t in "${fuzzers[@]}"; do
  found=$build/corpus/$t
  mkdir -p "$found"
  # -timeout: one input taking longer is a finding too (a reader that hangs).
  if (cd "$build" && "bin/$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
        -print_final_stats=1 "corpus/$t" "$root/fuzz/corpus/$t" >"$t.log" 2>&1); then
    echo "fuzz: $t: $(grep -o 'stat::number_of_executed_units: [0-9]*' "$build/$t.log" | awk '{print $2}') inputs in ${seconds} s, no crash"
  else
    tail -60 "$build/$t.log" >&2
    echo "fuzz: $t FAILED (log: $build/$t.log; the input is in $build/crash-* or leak-*/timeout-*)" >&2
    status=1
  fi
done
exit $status
