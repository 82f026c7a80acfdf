#!/usr/bin/env python3
"""What the recorder adds to one op, in nanoseconds.

Times a loop of one tiny op (torch.add of two 16-element float tensors: two
inputs, one output, one scalar argument) so that the op's own work is small
and the recorder's per-op path shows: the RecordFunction callback, naming,
the selector, capturing metadata (and at level 1 statistics of 16
elements), encoding and the hand-over to the writer thread. Configurations,
run round-robin in fresh processes, --repeats times each:

  unrecorded   no LD_PRELOAD
  floor        no LD_PRELOAD; bench/callback_floor.cpp loaded: a dispatcher
               callback that boxes each op's inputs and outputs and does
               nothing, the floor of any observer (build/lib/
               libacc_callback_floor.so)
  observer     LD_PRELOAD with ACC_STEPS=999: the callback runs for every
               op, nothing is recorded (the loop never reaches step 999)
  level N      every op recorded at ACC_LEVEL=N

Each run times --ops calls five times and keeps the fastest; the table
shows the median over runs of ns per op and what each configuration adds
to the unrecorded median. With --lib given twice (an older build first),
both builds are measured in the same rounds:

  /usr/bin/python3 bench/per_op.py
  /usr/bin/python3 bench/per_op.py --lib /tmp/old/lib/libacc.so --lib build/lib/libacc.so

The loop runs under the Python that can import torch (as overhead.py finds
it); this file needs only the standard library. Exit status 0, 2 on a usage
error, 1 when a run fails.
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from overhead import REPO, DEFAULT_LIB, find_python, clean_env, log  # noqa: E402

LOOP = r"""
import sys, time, torch
torch.set_num_threads(1)
n = int(sys.argv[1])
if len(sys.argv) > 2:
    torch.ops.load_library(sys.argv[2])  # the floor's callback
x, y = torch.zeros(16), torch.ones(16)
for _ in range(1000):
    torch.add(x, y)
best = float("inf")
for _ in range(5):
    start = time.perf_counter()
    for _ in range(n):
        torch.add(x, y)
    best = min(best, time.perf_counter() - start)
print(best / n * 1e9)
"""


def run(python, ops, lib, settings, out_dir):
    env = clean_env()
    env["OMP_NUM_THREADS"] = "1"
    extra = []
    if settings.get("floor"):
        extra = [settings["floor"]]
    elif lib is not None:
        env.update(LD_PRELOAD=lib, ACC_QUIET="1", ACC_OUTPUT_DIR=out_dir, **settings)
    done = subprocess.run([python, "-c", LOOP, str(ops)] + extra, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        log(done.stderr[-4000:])
        raise SystemExit(f"per_op: a run failed (exit {done.returncode}): {settings or 'unrecorded'}")
    return float(done.stdout.split()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lib", action="append", help=f"libacc.so to measure (default {DEFAULT_LIB}); twice to compare two builds")
    parser.add_argument("--levels", default="0,1,2", help="recording levels (default 0,1,2)")
    parser.add_argument("--ops", type=int, default=100000, help="ops per timed loop (default 100000)")
    parser.add_argument("--repeats", type=int, default=5, help="runs per configuration (default 5)")
    args = parser.parse_args()
    libs = [os.path.abspath(l) for l in (args.lib or [os.path.join(REPO, DEFAULT_LIB)])]
    for lib in libs:
        if not os.path.exists(lib):
            parser.error(f"--lib {lib}: no such file (build first: cmake --build build)")
    try:
        levels = [int(l) for l in args.levels.split(",")]
    except ValueError:
        parser.error(f"--levels {args.levels!r}: expected comma-separated levels among 0, 1, 2")
    if any(l not in (0, 1, 2) for l in levels) or args.ops < 1 or args.repeats < 1:
        parser.error("--levels takes 0, 1 and 2; --ops and --repeats are at least 1")
    python = find_python()
    if python is None:
        parser.error("no Python can import torch: install python3-torch or set ACC_PYTHON")

    configs = [("unrecorded", None, {})]
    floor = os.path.join(os.path.dirname(libs[-1]), "libacc_callback_floor.so")
    if os.path.exists(floor):
        configs.append(("floor", None, {"floor": floor}))
    else:
        log(f"per_op: {floor} not found (build bench/): no floor row")
    for i, lib in enumerate(libs):
        tag = f" [lib {i + 1}]" if len(libs) > 1 else ""
        configs.append((f"observer{tag}", lib, {"ACC_STEPS": "999"}))
        configs += [(f"level {l}{tag}", lib, {"ACC_LEVEL": str(l)}) for l in levels]
    samples = {name: [] for name, _, _ in configs}
    with tempfile.TemporaryDirectory(prefix="acc-per-op-") as tmp:
        for r in range(args.repeats):
            log(f"round {r + 1}/{args.repeats}")
            for name, lib, settings in configs:
                samples[name].append(run(python, args.ops, lib, settings, os.path.join(tmp, "rec")))
    base = statistics.median(samples["unrecorded"])
    for i, lib in enumerate(libs):
        print(f"lib {i + 1}: {lib}")
    floor_ns = statistics.median(samples["floor"]) if "floor" in samples else None
    print(f"{'configuration':<22} {'ns/op':>8} {'min':>8} {'max':>8} {'added ns':>9} {'above floor ns':>15}")
    for name, _, _ in configs:
        s = samples[name]
        median = statistics.median(s)
        added = "-" if name == "unrecorded" else f"{median - base:.0f}"
        above = "-" if floor_ns is None or name in ("unrecorded", "floor") else f"{median - floor_ns:.0f}"
        print(f"{name:<22} {median:8.0f} {min(s):8.0f} {max(s):8.0f} {added:>9} {above:>15}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
