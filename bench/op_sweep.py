"""Recall and false alarms of `check` and `compare` over a broad op sweep.

Records bench/op_sweep_program.py (dozens of ops of every family, several
samples each, one sample per step) in each dtype: once with the real kernels
(the reference), once per fault magnitude with every kernel of the sample
made wrong by a relative `eps` (systematic scale), and once per benign
variant (computed in float64 and rounded; +-2 ulps of random noise). Then
`compare REF DUT` at each level and `check DUT` (level 2) name what they
name; a sample counts as named when a record of its step is an origin.
Recall is the share of faulty samples named; a false alarm is a benign
sample named. Level-1 "may amplify" records are counted apart: they are
neither.

  /usr/bin/python3 bench/op_sweep.py [--build build] [--dtypes float32,bfloat16,float16]
      [--levels 2,1] [--faults float32=1e-5,1e-3 --faults bfloat16=0.03] [--every N] [--json] [--work DIR]

--every N keeps every Nth sample (a quick run); --json prints the rows as JSON.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROGRAM = os.path.join(ROOT, "bench", "op_sweep_program.py")
# Systematic errors: float32 from ~17 units of roundoff (1e-6) up; bfloat16
# 0.01 (2.6 units) to 0.1; float16 1e-3 (2 units) to 1e-2 (20 units).
DEFAULT_FAULTS = {"float32": [1e-6, 1e-5, 1e-4, 1e-3], "bfloat16": [0.01, 0.02, 0.03, 0.1],
                  "float16": [1e-3, 2e-3, 4e-3, 1e-2]}
BENIGN = ["float64", "noise"]


def run(cmd, env=None, check=True):
    r = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if check and r.returncode != 0:
        sys.exit(f"op_sweep: {' '.join(cmd)} failed ({r.returncode}):\n{r.stderr[-3000:]}")
    return r


def record(args, lib, out, dtype, variant, eps, only, level):
    if os.path.exists(os.path.join(out, "rank0", "manifest.json")):
        return
    env = dict(os.environ, LD_PRELOAD=lib, ACC_LEVEL=str(level), ACC_QUIET="1", ACC_OUTPUT_DIR=out)
    run([sys.executable, PROGRAM, "--dtype", dtype, "--variant", variant, "--eps", str(eps), "--only", only], env)


def named_steps(summary):
    """Steps with an origin, and steps with a "may amplify" record."""
    origins = {o["step"] for o in summary.get("origins", [])}
    fd = summary.get("first_divergence")
    if fd and summary.get("ending") == "divergence" and not summary.get("origins"):
        origins.add(fd["step"])  # a divergence without origin (error from outside): named too
    may = {a["step"] for a in summary.get("amplifiers", []) if a.get("replay", {}).get("verdict") == "may amplify"}
    return origins, may - origins


def analyze(analyzer, command, dirs, out):
    r = run([analyzer, command, *dirs, "-o", out, "--json"], check=False)
    if r.returncode not in (0, 1):
        sys.exit(f"op_sweep: acc-analyzer {command} failed ({r.returncode}):\n{r.stderr[-3000:]}")
    return json.loads(r.stdout)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--dtypes", default="float32,bfloat16,float16")
    ap.add_argument("--levels", default="2,1")
    ap.add_argument("--faults", action="append", default=[], help="DTYPE=EPS[,EPS...]")
    ap.add_argument("--every", type=int, default=1)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--work", help="keep recordings here (reused when present)")
    args = ap.parse_args()
    faults = dict(DEFAULT_FAULTS)
    for f in args.faults:
        dtype, _, values = f.partition("=")
        if dtype not in faults or not values:
            sys.exit(f"op_sweep: --faults {f}: expected DTYPE=EPS[,EPS...] with DTYPE one of {', '.join(faults)}")
        faults[dtype] = [float(v) for v in values.split(",")]
    lib = os.path.join(args.build, "lib", "libacc.so")
    analyzer = os.path.join(args.build, "bin", "acc-analyzer")
    for f in (lib, analyzer, os.path.join(args.build, "bin", "acc-replay")):
        if not os.path.exists(f):
            sys.exit(f"op_sweep: {f} is missing: build first")
    work = args.work or tempfile.mkdtemp(prefix="acc-op-sweep-")
    os.makedirs(work, exist_ok=True)
    rows = []
    for dtype in args.dtypes.split(","):
        listed = json.loads(run([sys.executable, PROGRAM, "--list", "--dtype", dtype]).stdout)
        listed = [s for s in listed if s["sample"] % args.every == 0]
        op_of = {s["sample"] + 1: s["op"] for s in listed}  # sample k is step k + 1
        only = ",".join(str(s["sample"]) for s in listed)
        variants = [("scale", e) for e in faults[dtype]] + [(b, 0) for b in BENIGN]
        for level in [int(v) for v in args.levels.split(",")]:
            ref = os.path.join(work, f"{dtype}-l{level}-ref")
            record(args, lib, ref, dtype, "none", 0, only, level)
            for variant, eps in variants:
                dut = os.path.join(work, f"{dtype}-l{level}-{variant}{eps or ''}")
                record(args, lib, dut, dtype, variant, eps, only, level)
                judged = {"compare": analyze(analyzer, "compare", [ref, dut], dut + ".compare")}
                if level == 2:
                    judged["check"] = analyze(analyzer, "check", [dut], dut + ".check")
                for command, summary in judged.items():
                    origins, may = named_steps(summary)
                    named = sorted(op_of[s] for s in origins if s in op_of)
                    stray = sorted(s for s in origins if s not in op_of)
                    rows.append({"dtype": dtype, "level": level, "command": command, "variant": variant,
                                 "eps": eps, "samples": len(op_of), "named": len(named),
                                 "may_amplify": len([s for s in may if s in op_of]), "stray_origins": len(stray),
                                 "named_ops": sorted(set(named)) if variant in BENIGN else
                                 sorted({op for s, op in op_of.items() if s not in origins})})
    if args.json:
        json.dump(rows, sys.stdout, indent=1)
        print()
    else:
        print(f"{'dtype':9} {'level':5} {'command':8} {'variant':8} {'eps':>7} {'samples':>7} {'named':>6} "
              f"{'share':>6} {'may amp':>7}  ops missed (faults) / named (benign)")
        for r in rows:
            share = r["named"] / r["samples"] if r["samples"] else 0
            ops = ",".join(r["named_ops"][:8]) + (" ..." if len(r["named_ops"]) > 8 else "")
            print(f"{r['dtype']:9} {r['level']:5} {r['command']:8} {r['variant']:8} {r['eps']:7g} {r['samples']:7} "
                  f"{r['named']:6} {share:6.1%} {r['may_amplify']:7}  {ops}")
    if not args.work:
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
