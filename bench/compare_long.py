"""`acc-analyzer compare` on long level-1 recordings: records per second and
peak memory at 100k and 1M records (issue 12: a million records each in at
most 60 s on 2 cores, memory bounded).

Writes two synthetic recordings of each size with acc-synthetic-recording
(no torch: a chain of forward ops and their backward records, 2,000 records
a step, a tensor read again recorded as a reference to the content that
produced it, as the recorder writes them; in the second run forward op 500
is off by 1e-3 from the middle step on, so the runs part half-way and every
later record fails, as two devices' runs do), compares them with the default reports (summary.json, report.csv,
report.xlsx, report.html) and prints one row per size: wall and CPU time,
records per second (of one side), peak memory (summary.json's
peak_memory_bytes: the analyzer process at its largest, reports included)
and the reports' sizes.

  /usr/bin/python3 bench/compare_long.py [--build build] [--records 100000,1000000]
      [--ops-per-step 2000] [--memory-mb 512] [--keep DIR]

Any Python 3 runs it: it needs no torch.
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile

from analyzer_run import timed_analyzer


def size_mb(path):
    if os.path.isdir(path):
        return sum(size_mb(os.path.join(path, f)) for f in os.listdir(path))
    return os.path.getsize(path) / 1e6 if os.path.exists(path) else 0.0


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", default=os.path.join(root, "build"))
    p.add_argument("--records", default="100000,1000000", help="sizes to measure, comma-separated")
    p.add_argument("--ops-per-step", type=int, default=2000)
    p.add_argument("--memory-mb", type=int, default=512)
    p.add_argument("--keep", help="keep the recordings and reports in this directory (recordings reused)")
    args = p.parse_args()
    try:
        sizes = [int(s) for s in args.records.split(",")]
    except ValueError:
        sys.exit(f"--records: '{args.records}' is not a comma-separated list of whole numbers")
    if any(n < args.ops_per_step for n in sizes):
        sys.exit(f"--records: every size must be at least --ops-per-step ({args.ops_per_step})")
    generator = os.path.join(args.build, "bin", "acc-synthetic-recording")
    analyzer = os.path.join(args.build, "bin", "acc-analyzer")
    for f in (generator, analyzer):
        if not os.path.exists(f):
            sys.exit(f"{f} is missing: build first (scripts/setup.sh, or cmake --build build)")
    work = args.keep or tempfile.mkdtemp(prefix="acc-compare-long-")
    os.makedirs(work, exist_ok=True)
    print(f"{'records':>9} {'wall s':>7} {'CPU s':>7} {'records/s':>10} {'peak MB':>8} "
          f"{'csv MB':>7} {'xlsx MB':>8} {'html MB':>8} {'rows MB':>8}  verdict")
    for n in sizes:
        steps = n // args.ops_per_step
        dirs = []
        for name, wrong in (("dir0", []), ("dir1", ["--wrong-op", "500", "--wrong-from-step", str(steps // 2)])):
            out = os.path.join(work, f"{n}-{name}")
            dirs.append(out)
            if os.path.exists(os.path.join(out, "rank0", "manifest.json")):
                continue
            subprocess.run([generator, out, "--records", str(n), "--ops-per-step", str(args.ops_per_step)] + wrong,
                           check=True, stdout=subprocess.DEVNULL)
        report = os.path.join(work, f"{n}-report")
        shutil.rmtree(report, ignore_errors=True)
        cmd = [analyzer, "compare", dirs[0], dirs[1], "-o", report, "--json", "--memory-mb", str(args.memory_mb)]
        summary, _, wall, cpu, _ = timed_analyzer(cmd, "compare")
        peak = summary["counts"].get("peak_memory_bytes", 0) / 1e6
        first = summary.get("first_divergence") or {}
        verdict = f"{summary['ending']}: {first.get('name')} step {first.get('step')}"
        print(f"{n:>9} {wall:>7.1f} {cpu:>7.1f} {n / wall:>10.0f} {peak:>8.0f} "
              f"{size_mb(os.path.join(report, 'report.csv')):>7.0f} "
              f"{size_mb(os.path.join(report, 'report.xlsx')):>8.1f} "
              f"{size_mb(os.path.join(report, 'report.html')):>8.1f} "
              f"{size_mb(os.path.join(report, 'report_rows')):>8.1f}  {verdict}", flush=True)
    print(f"cores: {os.cpu_count()}; target: 1M records in at most 60 s, peak memory under --memory-mb "
          f"({args.memory_mb} MB)")
    if not args.keep:
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
