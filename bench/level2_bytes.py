"""Level-2 bytes: what a level-2 recording of resnet18 + AdamW takes on disk,
and how long `acc-analyzer compare` takes on two of them, for one or more
builds measured in the same sitting.

    /usr/bin/python3 bench/level2_bytes.py                       # this build
    /usr/bin/python3 bench/level2_bytes.py --build OLD/build --build build

Each build records examples/resnet_train.py twice (one intra-op thread, so
that the two runs compute the same bits) with its own libacc.so, then its
own acc-analyzer compares the two `--repeats` times, builds interleaved.
Prints MB per step (records.acc over the steps, initialisation included)
and the median compare time and peak memory.
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def record(build, out, steps, python):
    env = dict(os.environ, OMP_NUM_THREADS="1", RESNET_STEPS=str(steps), RESNET_BATCH="8", RESNET_SIZE="112",
               RESNET_OPTIM="adamw", ACC_LEVEL="2", ACC_OUTPUT_DIR=out,
               LD_PRELOAD=os.path.join(build, "lib", "libacc.so"))
    subprocess.run([python, os.path.join(ROOT, "examples", "resnet_train.py")], env=env, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return os.path.getsize(os.path.join(out, "rank0", "records.acc"))


def compare(build, a, b, out):
    shutil.rmtree(out, ignore_errors=True)
    r = subprocess.run(["/usr/bin/time", "-f", "%e %M", os.path.join(build, "bin", "acc-analyzer"), "compare", a, b,
                        "-o", out], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        sys.exit(f"compare with {build} failed (exit {r.returncode}): {r.stderr.strip()[-500:]}")
    seconds, kb = r.stderr.strip().splitlines()[-1].split()
    return float(seconds), int(kb) / 1024


def main(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", action="append", help="a build directory (default: build); repeat to compare builds")
    p.add_argument("--steps", type=int, default=4)
    p.add_argument("--repeats", type=int, default=2, help="compare runs per build (default 2)")
    p.add_argument("--python", default=os.environ.get("ACC_PYTHON", "/usr/bin/python3"))
    args = p.parse_args(argv)
    builds = [os.path.abspath(b) for b in (args.build or [os.path.join(ROOT, "build")])]
    work = tempfile.mkdtemp(prefix="acc-level2-bytes-")
    try:
        sizes, times = {}, {b: [] for b in builds}
        for i, build in enumerate(builds):
            sizes[build] = record(build, os.path.join(work, f"{i}a"), args.steps, args.python)
            record(build, os.path.join(work, f"{i}b"), args.steps, args.python)
        for _ in range(args.repeats):
            for i, build in enumerate(builds):
                times[build].append(compare(build, os.path.join(work, f"{i}a"), os.path.join(work, f"{i}b"),
                                            os.path.join(work, f"cmp{i}")))
        print(f"{'build':40s} {'MB/step':>8s} {'compare s':>10s} {'peak MB':>8s}")
        for build in builds:
            print(f"{build[-40:]:40s} {sizes[build] / 1e6 / args.steps:8.1f} "
                  f"{statistics.median(t for t, _ in times[build]):10.2f} "
                  f"{statistics.median(m for _, m in times[build]):8.0f}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
