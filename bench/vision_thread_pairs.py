#!/usr/bin/env python3
"""Benign pairs on real architectures: each torchvision classifier trained
twice (tests/scripts/vision_train.py: random 64x64 images, batch 4, AdamW, 2
steps), once with 1 and once with 2 intra-op threads, recorded at one level
and compared. A thread count changes only summation orders, so every
comparison must exit 0 without an origin; the table says how each ended.

  /usr/bin/python3 bench/vision_thread_pairs.py                 # level 1, 14 models
  /usr/bin/python3 bench/vision_thread_pairs.py --level 2 --models resnet18,vgg11_bn

Exit status 0 when every pair ends without an origin, 1 otherwise, 2 on a
usage error. Needs torchvision; this file needs only the standard library.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from overhead import REPO, clean_env, find_python, log  # noqa: E402

MODELS = ("mobilenet_v2,efficientnet_b0,shufflenet_v2_x1_0,mnasnet0_5,regnet_x_400mf,resnet50,vgg11_bn,"
          "googlenet,resnet18,densenet121,squeezenet1_1,mobilenet_v3_small,alexnet,resnext50_32x4d")


def main(argv):
    parser = argparse.ArgumentParser(prog="vision_thread_pairs.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default=MODELS, help="comma-separated torchvision model names")
    parser.add_argument("--level", default="1", choices=("1", "2"), help="ACC_LEVEL (default 1)")
    parser.add_argument("--build", default=os.path.join(REPO, "build"), help="acc's build directory")
    args = parser.parse_args(argv)
    lib = os.path.join(args.build, "lib", "libacc.so")
    analyzer = os.path.join(args.build, "bin", "acc-analyzer")
    for path in (lib, analyzer):
        if not os.path.exists(path):
            parser.error(f"{path} not found: build acc first (scripts/setup.sh) or pass --build")
    python = find_python()
    if python is None:
        parser.error("no Python can import torch: install python3-torch or set ACC_PYTHON")
    script = os.path.join(REPO, "tests", "scripts", "vision_train.py")
    failed = 0
    print(f"{'model':<20} {'exit':>4} {'ending':<8} {'origins':>7} {'records pass/warn/fail':>24}")
    with tempfile.TemporaryDirectory(prefix="acc-thread-pairs-") as tmp:
        for model in [m for m in args.models.split(",") if m]:
            dirs = []
            for threads in ("1", "2"):
                out = os.path.join(tmp, f"{model}-{threads}")
                env = clean_env()
                env.update(VISION_MODEL=model, VISION_THREADS=threads, LD_PRELOAD=lib, ACC_QUIET="1",
                           ACC_LEVEL=args.level, ACC_OUTPUT_DIR=out)
                run = subprocess.run([python, script], env=env, capture_output=True, text=True)
                if run.returncode != 0:
                    log(f"{model}, {threads} thread(s): training failed\n{run.stderr[-2000:]}")
                    return 1
                dirs.append(out)
            report = os.path.join(tmp, f"{model}-compare")
            done = subprocess.run([analyzer, "compare", *dirs, "-o", report, "--json"], capture_output=True, text=True)
            try:
                summary = json.loads(done.stdout)
            except json.JSONDecodeError:
                log(f"{model}: compare printed no summary (exit {done.returncode})\n{done.stderr[-2000:]}")
                return 1
            records = summary["counts"].get("records", {})
            origins = summary["counts"]["origins"]
            failed += done.returncode != 0 or origins != 0
            print(f"{model:<20} {done.returncode:>4} {summary.get('ending', '?'):<8} {origins:>7} "
                  f"{records.get('pass', 0):>10}/{records.get('warn', 0)}/{records.get('fail', 0)}", flush=True)
            for d in dirs + [report]:
                shutil.rmtree(d, ignore_errors=True)
    print(f"{failed} pair(s) with an origin or a non-zero exit")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
