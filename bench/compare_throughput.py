"""Throughput of `acc-analyzer compare` on two level-2 recordings.

Records a synthetic workload twice under LD_PRELOAD=libacc.so (a chain of
element-wise ops on large float32 tensors; in the second run one op half-way
gets a scalar off by 1e-3, so its scalar input already differs and compare
reports it as the first failing record rather than as an origin), then times `acc-analyzer compare` and prints the tensor data
compared per second (both sides), its CPU time and peak memory.

  /usr/bin/python3 bench/compare_throughput.py [--build build] [--mb 16] [--ops 40]
      [--data chaotic|relu|resnet] [--memory-mb 512] [--threads 0] [--keep DIR]

--data relu adds a ReLU of every op's output: half of its output values are
zero, which zstd compresses, so decompression costs more than for the
default spread-out values (stored nearly as is at the default
ACC_DATA_ZSTD_LEVEL). --data resnet records examples/resnet_train.py instead
(4 steps, batch 8, 112x112: about 3 GB per run, many small tensors) twice,
unchanged: a real model, and two runs that must compare equal.

The issue's target: at least 1 GB/s of tensor data compared on a 2-core
machine (msprobe: 0.1-0.3 GB/s on 192 cores).
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile

from analyzer_run import timed_analyzer

WORKLOAD = r"""
import os, torch
torch.manual_seed(0)
torch.set_num_threads(1)
x = torch.randn(int(os.environ["BENCH_NUMEL"]))
ops = int(os.environ["BENCH_OPS"])
for i in range(ops):
    # A chaotic map: values stay spread like real activations (a contracting
    # one would converge and compress unrealistically well).
    scale = 2.0 * (1 + 1e-3) if os.environ.get("BENCH_WRONG") == "1" and i == ops // 2 else 2.0
    x = torch.cos(x * 3.1) * scale
    if os.environ["BENCH_DATA"] == "relu":
        torch.relu(x)  # recorded: its output is half zeros; the chain goes on from x
"""


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", default=os.path.join(root, "build"))
    p.add_argument("--mb", type=float, default=16, help="MB per tensor (float32)")
    p.add_argument("--ops", type=int, default=40, help="ops in the chain (2 records each)")
    p.add_argument("--data", choices=("chaotic", "relu", "resnet"), default="chaotic",
                   help="tensor values: spread out (default), half zeros, or a resnet18's")
    p.add_argument("--memory-mb", type=int, default=512)
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--keep", help="keep the recordings in this directory (reused when present)")
    args = p.parse_args()
    lib = os.path.join(args.build, "lib", "libacc.so")
    analyzer = os.path.join(args.build, "bin", "acc-analyzer")
    for f in (lib, analyzer):
        if not os.path.exists(f):
            sys.exit(f"{f} is missing: build first")
    work = args.keep or tempfile.mkdtemp(prefix="acc-compare-bench-")
    os.makedirs(work, exist_ok=True)
    script = os.path.join(work, "workload.py")
    with open(script, "w") as f:
        f.write(WORKLOAD)
    env = dict(os.environ, LD_PRELOAD=lib, ACC_LEVEL="2", ACC_QUIET="1",
               BENCH_NUMEL=str(int(args.mb * 1e6 / 4)), BENCH_OPS=str(args.ops), BENCH_DATA=args.data)
    if args.data == "resnet":
        script = os.path.join(root, "examples", "resnet_train.py")
        env.update(RESNET_STEPS="4", RESNET_BATCH="8", RESNET_SIZE="112")
    runs = {}
    for name, wrong in (("dir0", "0"), ("dir1", "1")):
        out = os.path.join(work, name)
        runs[name] = out
        if os.path.exists(os.path.join(out, "rank0", "records.acc")):
            continue
        subprocess.run([sys.executable, script], env=dict(env, ACC_OUTPUT_DIR=out, BENCH_WRONG=wrong), check=True,
                       stdout=subprocess.DEVNULL)
    cmd = [analyzer, "compare", runs["dir0"], runs["dir1"], "-o", os.path.join(work, "report"),
           "--json", "--memory-mb", str(args.memory_mb)]
    if args.threads:
        cmd += ["--threads", str(args.threads)]
    summary, _, wall, cpu, peak_mb = timed_analyzer(cmd, "compare")
    data = summary["counts"]["bytes_compared"]
    files = sum(os.path.getsize(os.path.join(runs[d], "rank0", "records.acc")) for d in runs)
    print(f"tensor data compared: {data / 1e9:.2f} GB (both sides; records files {files / 1e9:.2f} GB compressed)")
    print(f"wall {wall:.2f} s -> {data / wall / 1e9:.2f} GB/s; CPU {cpu:.2f} s ({cpu / wall:.2f} cores busy,"
          f" {data / cpu / 1e9:.2f} GB per CPU-second); cores: {os.cpu_count()}")
    # The analyzer's own peak: the children's ru_maxrss also counts the recording runs.
    peak_mb = summary["counts"].get("peak_memory_bytes", peak_mb * 1e6) / 1e6
    print(f"peak memory {peak_mb:.0f} MB (budget --memory-mb {args.memory_mb})")
    first = summary.get("first_divergence") or {}
    print(f"first divergence: {first.get('name')} (origin: {first.get('origin')})")
    if not args.keep:
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
