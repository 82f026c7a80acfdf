"""Throughput of `acc-analyzer check` on a level-2 resnet18 recording.

Records examples/resnet_train.py at ACC_LEVEL=2 (--steps steps, batch 8,
112x112), then times `acc-analyzer check` on it: every op replayed on the CPU
in the recorded dtypes and in float64 by the acc-replay workers (one per
core, --threads) and compared with what was recorded. Prints the records and
tensor data per second, the CPU time, the peak memory, and the time of the
recorded training steps for scale.

  /usr/bin/python3 bench/check_throughput.py [--build build] [--steps 2] [--threads 0] [--keep DIR]

--keep DIR keeps (and reuses) the recording.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

from analyzer_run import timed_analyzer


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", default=os.path.join(root, "build"))
    p.add_argument("--steps", type=int, default=2, help="training steps recorded (default 2)")
    p.add_argument("--threads", type=int, default=0, help="replay workers (default: one per core)")
    p.add_argument("--keep", help="keep the recording in this directory (reused when present)")
    args = p.parse_args()
    lib = os.path.join(args.build, "lib", "libacc.so")
    analyzer = os.path.join(args.build, "bin", "acc-analyzer")
    for f in (lib, analyzer, os.path.join(args.build, "bin", "acc-replay")):
        if not os.path.exists(f):
            sys.exit(f"{f} is missing: build first")
    work = args.keep or tempfile.mkdtemp(prefix="acc-check-bench-")
    os.makedirs(work, exist_ok=True)
    recording = os.path.join(work, "resnet_l2")
    steps_file = os.path.join(work, "train_seconds.json")
    if not os.path.exists(os.path.join(recording, "rank0", "records.acc")):
        env = dict(os.environ, LD_PRELOAD=lib, ACC_LEVEL="2", ACC_QUIET="1", ACC_OUTPUT_DIR=recording,
                   RESNET_STEPS=str(args.steps), RESNET_BATCH="8", RESNET_SIZE="112")
        r = subprocess.run([sys.executable, os.path.join(root, "examples", "resnet_train.py")], env=env,
                           check=True, capture_output=True, text=True)
        seconds = [float(t) for t in re.findall(r"time ([0-9.]+)", r.stdout)]
        with open(steps_file, "w") as f:
            json.dump(seconds, f)
    with open(steps_file) as f:
        train = sum(json.load(f))
    cmd = [analyzer, "check", recording, "-o", os.path.join(work, "report"), "--json"]
    if args.threads:
        cmd += ["--threads", str(args.threads)]
    summary, returncode, wall, cpu, peak_mb = timed_analyzer(cmd, "check")
    records = summary["counts"]["records0"]
    not_replayable = sum(summary["not_replayable"].values())
    data = summary["counts"]["bytes_compared"]
    size = os.path.getsize(os.path.join(recording, "rank0", "records.acc"))
    print(f"recording: {records} records of {args.steps} resnet18 steps (batch 8, 112x112), "
          f"{size / 1e9:.2f} GB compressed; {records - not_replayable} replayed, {not_replayable} not replayable")
    print(f"check: wall {wall:.1f} s -> {records / wall:.0f} records/s, {size / wall / 1e6:.0f} MB/s of the "
          f"recording ({data / wall / 1e6:.0f} MB/s of produced tensors compared); CPU {cpu:.1f} s "
          f"({cpu / wall:.2f} cores busy, {os.cpu_count()} cores)")
    print(f"peak memory of one process {peak_mb:.0f} MB; the recorded steps trained in {train:.2f} s "
          f"(check takes {wall / train:.0f}x that)" if train > 0 else "")
    print(f"verdict: exit {returncode}, {summary['counts']['origins']} deviating op(s)")
    if not args.keep:
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
