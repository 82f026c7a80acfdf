#!/usr/bin/env python3
"""End-to-end recording overhead of acc on a bundled training script.

Runs the script in fresh subprocesses, first unrecorded, then under
LD_PRELOAD=libacc.so at each ACC_LEVEL, each configuration --repeats times,
and prints one row per configuration: median seconds per training step,
ratio to the unrecorded median and the records the recorder wrote.

Only the training steps are timed, not process start-up or `import torch`:
examples/resnet_train.py prints `step N loss X time T` for every step; T is
parsed and step 0 (warm-up) is skipped. A script that prints no step times
(examples/mlp_train.py) is timed as a whole subprocess instead, and the
output says so. A step line that ends `time T kernel K` (the test
accelerator's device_train.py: K seconds of its kernels ran on the host's
threads) adds the host's columns: each step's T - K, what the host spends
where a device runs the kernels.

  /usr/bin/python3 bench/overhead.py
  /usr/bin/python3 bench/overhead.py --script examples/mlp_train.py --levels 1
  /usr/bin/python3 bench/overhead.py --levels watch     # ACC_WATCH=naninf
  /usr/bin/python3 bench/overhead.py --levels 1,1+grads # ACC_GRADS=1 at level 1
  /usr/bin/python3 bench/overhead.py --levels floor,0,1 # and the floor: what any observer costs
  /usr/bin/python3 bench/overhead.py --script examples/transformer_train.py --levels 1,reference
                                                        # ACC_REFERENCE at level 1 (judged against
                                                        # a level-1 recording of the same run)

"floor" runs the script unrecorded with bench/callback_floor.cpp loaded (a
dispatcher callback that boxes every op's inputs and outputs and does
nothing); the table then says what each level costs above it, in
microseconds per op the script runs (the ops the recorder saw).
  /usr/bin/python3 bench/overhead.py --json --keep /tmp/acc-bench

This file needs only the standard library: it may run under any Python 3.
The training script runs under the Python that can import torch (ACC_PYTHON,
else the first of python3 on PATH, /usr/bin/python3, /usr/local/bin/python3
that can; as scripts/find-python.sh). ACC_* variables in the environment
(ACC_OP_LIST, ACC_PASSES, ...) apply to the recorded runs, except those the
runner sets itself (ACC_ENABLE, ACC_LEVEL, ACC_OUTPUT_DIR, ACC_QUIET).

Exit status: 0 on success, 2 on a usage error, 1 when a run fails (its
stderr is shown).
"""
import argparse
import json
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_SCRIPT = "examples/resnet_train.py"
DEFAULT_LIB = os.path.join("build", "lib", "libacc.so")
# "kernel K" (the test accelerator's): seconds its kernels ran on the host's
# threads within the step, work a real device does while its host goes on.
STEP_LINE = re.compile(r"^step\s+(\d+)\b.*\btime\s+([0-9.eE+-]+)(?:\s+kernel\s+([0-9.eE+-]+))?\s*$")
RUNNER_VARIABLES = ("ACC_ENABLE", "ACC_LEVEL", "ACC_OUTPUT_DIR", "ACC_QUIET")
STDERR_TAIL = 60  # lines of a failed run's stderr to show
# Runs the training script as its only child and prints that child's peak
# resident memory (KiB) last on stderr: the script's own peak, however it
# was started.
PEAK_WRAPPER = ("import resource, subprocess, sys; r = subprocess.run(sys.argv[1:]); "
                "print('acc-bench-maxrss-kib', resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, "
                "file=sys.stderr); sys.exit(r.returncode)")
PEAK_LINE = re.compile(r"^acc-bench-maxrss-kib (\d+)$")
COUNTERS_LINE = re.compile(r"^counters (\{.*\})$")


class RunFailed(Exception):
    pass


def usage_error(parser, message):
    parser.print_usage(sys.stderr)
    print(f"{parser.prog}: error: {message}", file=sys.stderr)
    sys.exit(2)


def log(message):
    print(message, file=sys.stderr, flush=True)


def find_python():
    """scripts/find-python.sh: ACC_PYTHON, then the usual names."""
    candidates = [os.environ.get("ACC_PYTHON", ""), shutil.which("python3") or "",
                  "/usr/bin/python3", "/usr/local/bin/python3"]
    for candidate in candidates:
        if not candidate or not os.access(candidate, os.X_OK):
            continue
        probe = subprocess.run([candidate, "-c", "import torch"], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
        if probe.returncode == 0:
            return candidate
    return None


def torch_info(python):
    code = ("import json, torch; print(json.dumps({'version': torch.__version__, "
            "'threads': torch.get_num_threads(), 'interop_threads': torch.get_num_interop_threads()}))")
    out = subprocess.run([python, "-c", code], capture_output=True, text=True, env=clean_env())
    if out.returncode != 0:
        raise RunFailed(f"{python} could not report torch's version:\n{out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def without_acc_preload(value):
    kept = [p for p in re.split(r"[:\s]+", value or "") if p and os.path.basename(p) != "libacc.so"]
    return ":".join(kept)


def clean_env():
    """The environment of an unrecorded run: no libacc.so preloaded."""
    env = dict(os.environ)
    preload = without_acc_preload(env.get("LD_PRELOAD"))
    if preload:
        env["LD_PRELOAD"] = preload
    else:
        env.pop("LD_PRELOAD", None)
    return env


LEVEL_TOKENS = ("0", "1", "2", "watch", "0+grads", "1+grads", "2+grads", "floor", "reference")
# Runs a script with the floor's callback loaded: argv = library, script.
# The script's folder first on sys.path, as `python script.py` puts it
# (device_train.py imports its neighbours).
FLOOR_RUNNER = ("import os, runpy, sys, torch; torch.ops.load_library(sys.argv[1]); sys.argv = sys.argv[2:]; "
                "sys.path.insert(0, os.path.dirname(os.path.abspath(sys.argv[0]))); "
                "runpy.run_path(sys.argv[0], run_name='__main__')")


def parse_levels(text):
    """ACC_LEVEL values, "watch" (a run under ACC_WATCH=naninf), LEVEL+grads
    (ACC_LEVEL=LEVEL with ACC_GRADS=1) and "reference" (level 1 under
    ACC_REFERENCE, against a level-1 recording made first)."""
    levels = []
    for part in text.split(","):
        part = part.strip()
        if part not in LEVEL_TOKENS:
            raise ValueError(part)
        level = int(part) if part.isdigit() else part
        if level not in levels:
            levels.append(level)
    return levels


def read_manifest(out_dir):
    path = os.path.join(out_dir, "rank0", "manifest.json")
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f)


def workload_env(args, script_path):
    """The bundled scripts' options (both sets for a script of another name)."""
    resnet = {"RESNET_STEPS": str(args.steps), "RESNET_BATCH": str(args.batch), "RESNET_SIZE": str(args.size),
              "RESNET_OPTIM": args.optim}
    mlp = {"MLP_STEPS": str(args.steps)}
    lm = {"LM_STEPS": str(args.steps)}
    threads = {"OMP_NUM_THREADS": str(args.threads)} if args.threads else {}
    return {**threads, **script_env(args, script_path, resnet, mlp, lm)}


def script_env(args, script_path, resnet, mlp, lm):
    name = os.path.basename(script_path)
    if name == "device_train.py":
        layers, width, batch = args.mlp
        return {"STEPS": str(args.steps), "LAYERS": str(layers), "WIDTH": str(width), "BATCH": str(batch),
                **device_env(args)}
    if name == "decoder_train.py":
        return {"STEPS": str(args.steps), **device_env(args)}
    if name == "resnet_train.py":
        return resnet
    if name == "mlp_train.py":
        return mlp
    if name == "transformer_train.py":
        return lm
    return {**resnet, **mlp, **lm}


def device_env(args):
    """The device of tests/scripts/device_train.py and decoder_train.py: the CPU, CUDA (its kernels counted
    under --count-kernels) or the test accelerator (with its launch and kernel costs)."""
    if args.device in ("cpu", "cuda"):
        counting = {"COUNT_KERNELS": "1"} if args.count_kernels else {}
        return {"DEVICE": args.device, **counting}
    lib = os.path.join(os.path.dirname(os.path.abspath(args.lib)), "libacc_testdev.so")
    env = {"DEVICE": "testdev", "TESTDEV_LIB": lib}
    # What a real device's launches cost (tests/accelerator/testdev.cpp).
    if args.launch_us:
        env["TESTDEV_LAUNCH_US"] = str(args.launch_us)
    if args.kernel_us:
        env["TESTDEV_KERNEL_US"] = str(args.kernel_us)
    return env


def run_once(args, python, script_path, config, run_index, out_root, keep_recording=False):
    """Runs the script once; returns (step seconds list or None, wall seconds, manifest, extras): extras
    holds the peak resident memory (peak_rss_mb) and, on the test accelerator, its counters."""
    env = clean_env()
    workload = workload_env(args, script_path)
    env.update(workload)
    env["PYTHONUNBUFFERED"] = "1"
    shown_env = [f"{k}={v}" for k, v in workload.items()]
    out_dir = None
    command = [python, script_path]
    if config["level"] == "floor":
        command = [python, "-c", FLOOR_RUNNER, floor_lib(args), script_path]
    elif config["level"] is not None:
        out_dir = os.path.join(out_root, f"{config['name'].replace(' ', '')}-run{run_index}")
        preload = ":".join(p for p in (config.get("lib", args.lib), env.get("LD_PRELOAD", "")) if p)
        acc = {"LD_PRELOAD": preload, "ACC_ENABLE": "1", "ACC_OUTPUT_DIR": out_dir, "ACC_QUIET": "1"}
        if config["level"] == "watch":
            acc["ACC_WATCH"] = "naninf"
        elif config["level"] == "reference":
            # Judged against the same program's level-1 recording: the cost
            # of judging every record while nothing is found.
            acc["ACC_LEVEL"] = "1"
            acc["ACC_REFERENCE"] = os.path.join(out_root, "reference-source")
        elif str(config["level"]).endswith("+grads"):
            acc["ACC_LEVEL"] = str(config["level"]).split("+")[0]
            acc["ACC_GRADS"] = "1"
        else:
            acc["ACC_LEVEL"] = str(config["level"])
        env.update(acc)
        shown_env += [f"{k}={v}" for k, v in acc.items()]
    label = f"{config['name']} run {run_index + 1}"
    config["command"] = " ".join(shlex.quote(x) for x in shown_env + command)
    start = time.perf_counter()
    try:
        proc = subprocess.run([sys.executable, "-c", PEAK_WRAPPER] + command, capture_output=True, text=True,
                              env=env, cwd=REPO, timeout=args.timeout)
    except subprocess.TimeoutExpired as e:
        stderr = e.stderr.decode(errors="replace") if isinstance(e.stderr, bytes) else (e.stderr or "")
        raise RunFailed(f"{label} timed out after {args.timeout} s\n"
                        f"command: {config['command']}\n{tail(stderr)}")
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise RunFailed(f"{label} exited with status {proc.returncode}\n"
                        f"command: {config['command']}\n--- stderr (last {STDERR_TAIL} lines):\n"
                        f"{tail(proc.stderr)}")
    steps = {}
    kernels = {}
    extras = {}
    for line in proc.stdout.splitlines():
        m = STEP_LINE.match(line.strip())
        if m:
            steps[int(m.group(1))] = float(m.group(2))
            if m.group(3) is not None:
                kernels[int(m.group(1))] = float(m.group(3))
        m = COUNTERS_LINE.match(line.strip())
        if m:
            extras["counters"] = json.loads(m.group(1))
    for line in proc.stderr.splitlines():
        m = PEAK_LINE.match(line.strip())
        if m:
            extras["peak_rss_mb"] = int(m.group(1)) / 1024
    step_times = [t for n, t in sorted(steps.items()) if n != 0] if steps else None
    if step_times and len(kernels) == len(steps):
        # The host's share of each step: its time less the device's kernels.
        extras["host_step_times"] = [t - kernels[n] for n, t in sorted(steps.items()) if n != 0]
    if steps and not step_times:
        raise RunFailed(f"{label}: only the warm-up step printed a time; "
                        f"use --steps 2 or more")
    manifest = None
    if out_dir is not None and config["level"] != "floor":
        manifest = read_manifest(out_dir)
        if manifest is None:
            raise RunFailed(f"{label}: the recording has no "
                            f"rank0/manifest.json (did the recorder start?)\n"
                            f"command: {config['command']}\n--- stderr:\n{tail(proc.stderr)}")
        if manifest.get("status") != "complete":
            raise RunFailed(f"{label}: recording status is "
                            f"{manifest.get('status')!r}, not 'complete'\n{tail(proc.stderr)}")
        # A run whose writer could not write (a full disk) timed something
        # else than recording: its figures would mislead.
        lost_io = manifest.get("counts", {}).get("lost_io", 0)
        if manifest.get("io_error") or lost_io:
            raise RunFailed(f"{label}: the recorder lost {lost_io} records "
                            f"to I/O ({manifest.get('io_error') or 'no error text'}) in {out_dir}: "
                            f"is the disk full? Level 2 writes gigabytes per run\n{tail(proc.stderr)}")
        # Each run's recording goes once read (level 2 on resnet18 writes
        # about 3 GB a run: a sitting of several runs filled a disk).
        if not args.keep and not keep_recording:
            shutil.rmtree(out_dir, ignore_errors=True)
    return step_times, wall, manifest, extras


def tail(text):
    lines = (text or "").rstrip().splitlines()
    return "\n".join(lines[-STDERR_TAIL:]) if lines else "(empty)"


def display_path(path):
    rel = os.path.relpath(path, REPO)
    return path if rel.startswith("..") else rel


def paired_ratio(row, base, medians="run_medians"):
    """Median over rounds of row's run median over base's in the same round
    (`medians`: the rows' run medians of step times, or of host_step_times)."""
    ratios = [a / b for a, b in zip(row[medians], base[medians]) if b > 0]
    return statistics.median(ratios) if ratios else None


def summarize(config, runs, per_step):
    row = {"config": config["name"], "level": config["level"], "command": config["command"],
           "repeats": len(runs)}
    if per_step:
        samples = [t for r in runs for t in r["step_times"]]
        row["metric"] = "seconds_per_step"
        row["run_medians"] = [statistics.median(r["step_times"]) for r in runs]
        # The sustained pace: the second half of each run's steps, once a
        # queue or the page cache no longer absorbs what recording writes.
        row["late_mean"] = statistics.median(
            statistics.mean(r["step_times"][len(r["step_times"]) // 2:]) for r in runs if r["step_times"])
    else:
        samples = [r["wall"] for r in runs]
        row["metric"] = "seconds_per_process"
    row["samples"] = samples
    row["median"] = statistics.median(samples)
    row["min"] = min(samples)
    row["max"] = max(samples)
    row["process_seconds"] = [r["wall"] for r in runs]
    if per_step and all(r["extras"].get("host_step_times") for r in runs):
        row["host_run_medians"] = [statistics.median(r["extras"]["host_step_times"]) for r in runs]
        row["host_median"] = statistics.median(t for r in runs for t in r["extras"]["host_step_times"])
    peaks = [r["extras"].get("peak_rss_mb") for r in runs if r["extras"].get("peak_rss_mb") is not None]
    row["peak_rss_mb"] = statistics.median(peaks) if peaks else None
    counters = [r["extras"]["counters"] for r in runs if "counters" in r["extras"]]
    if counters:
        # Kernels are the same in every run; the device's memory peak too.
        row["device_kernels"] = counters[-1].get("kernels")
        row["device_syncs"] = counters[-1].get("synchronizations", 0) + counters[-1].get("scalar_reads", 0) + \
            counters[-1].get("blocking_copies", 0)
        if "memory_peak" in counters[-1]:
            row["device_peak_mb"] = statistics.median(c["memory_peak"] for c in counters) / 2**20
    if config["level"] is not None and config["level"] != "floor":
        counts = [r["manifest"].get("counts", {}) for r in runs]
        written = [c.get("written") for c in counts]
        row["records_written"] = written[-1]
        row["records_written_all_runs"] = written
        for key in ("dropped", "capture_errors", "bytes", "ops_seen", "recorded"):
            row[key] = counts[-1].get(key)
        device_stats = runs[-1]["manifest"].get("device_stats", {})
        row["device_tensors"] = device_stats.get("tensors")
        row["device_stats_bytes"] = device_stats.get("bytes")
    else:
        row["records_written"] = None
    return row


def format_table(rows, per_step):
    metric = "median s/step" if per_step else "median s/run"
    header = ["configuration", metric, "min", "max", "ratio", "per-op ns", "MB/step", "peak MB"]
    floor = any(r["level"] == "floor" for r in rows)
    if floor:
        header.append("above floor us/op")
    host = all(r.get("host_median") is not None for r in rows)
    if host:
        header += ["host s/step", "host ratio"]
    device = any(r.get("device_kernels") is not None or r.get("device_peak_mb") is not None for r in rows)
    if device:
        header += ["device peak MB", "kernels", "+/op", "+/tensor", "syncs", "stats read MB/step"]
    header.append("records written")
    lines = []
    for r in rows:
        written = "-" if r["records_written"] is None else str(r["records_written"])
        if r["level"] not in (None, "floor") and len(set(r["records_written_all_runs"])) > 1:
            written += " (varied: " + ",".join(str(w) for w in r["records_written_all_runs"]) + ")"
        per_op = "-" if r.get("per_op_ns") is None else f"{r['per_op_ns']:.0f}"
        per_step_mb = "-" if r.get("bytes_per_step") is None else f"{r['bytes_per_step'] / 1e6:.2f}"
        peak = "-" if r.get("peak_rss_mb") is None else f"{r['peak_rss_mb']:.0f}"
        cells = [r["config"], f"{r['median']:.4f}", f"{r['min']:.4f}", f"{r['max']:.4f}",
                 f"{r['ratio']:.2f}x", per_op, per_step_mb, peak]
        if floor:
            cells.append(device_cell(r.get("above_floor_us_per_op"), ".2f"))
        if host:
            cells += [f"{r['host_median']:.4f}", f"{r['host_ratio']:.2f}x"]
        if device:
            cells += [device_cell(r.get("device_peak_mb"), ".1f"), device_cell(r.get("device_kernels"), "d"),
                      device_cell(r.get("kernels_per_op"), ".2f"), device_cell(r.get("kernels_per_tensor"), ".2f"),
                      device_cell(r.get("device_syncs"), "d"), device_cell(r.get("stats_read_per_step_mb"), ".1f")]
        lines.append(cells + [written])
    widths = [max(len(h), *(len(l[i]) for l in lines)) for i, h in enumerate(header)]
    out = []
    def fmt(cells):
        # Names left-aligned, numbers right-aligned, no trailing blanks.
        text = "  ".join(c.ljust(w) if i in (0, len(cells) - 1) else c.rjust(w)
                         for i, (c, w) in enumerate(zip(cells, widths)))
        return text.rstrip()
    out.append(fmt(header))
    out.append("  ".join("-" * w for w in widths))
    out.extend(fmt(l) for l in lines)
    return "\n".join(out)


def floor_lib(args):
    return os.path.join(os.path.dirname(os.path.abspath(args.lib)), "libacc_callback_floor.so")


def device_cell(value, spec):
    return "-" if value is None else format(value, spec)


def main(argv):
    parser = argparse.ArgumentParser(
        prog="overhead.py",
        description="Measure acc's recording overhead on a bundled training script.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Example: /usr/bin/python3 bench/overhead.py --levels 0,1 --repeats 5")
    parser.add_argument("--script", default=DEFAULT_SCRIPT,
                        help=f"training script, relative to the repo root or absolute (default {DEFAULT_SCRIPT}; "
                             "or examples/transformer_train.py, examples/mlp_train.py)")
    parser.add_argument("--levels", default="0,1,2",
                        help="ACC_LEVEL values to record at, 'watch' for ACC_WATCH=naninf and LEVEL+grads "
                             "(e.g. 1+grads) for ACC_GRADS=1 at that level (default 0,1,2)")
    parser.add_argument("--repeats", type=int, default=3, help="runs per configuration (default 3)")
    parser.add_argument("--steps", type=int, default=4,
                        help="training steps per run, RESNET_STEPS / MLP_STEPS (default 4; step 0 is not timed)")
    parser.add_argument("--optim", choices=("adamw", "sgd"), default="adamw",
                        help="resnet_train.py's optimizer, RESNET_OPTIM (default adamw)")
    parser.add_argument("--threads", type=int, default=1,
                        help="intra-op threads of the training script, OMP_NUM_THREADS (default 1; 0: torch's "
                             "default)")
    parser.add_argument("--batch", type=int, default=8, help="RESNET_BATCH (default 8)")
    parser.add_argument("--size", type=int, default=112, help="RESNET_SIZE, image side (default 112)")
    parser.add_argument("--lib", action="append",
                        help="libacc.so to preload (default ./build/lib/libacc.so in the repo); twice to time two "
                             "builds in the same rounds (their rows end in [lib 1] and [lib 2])")
    parser.add_argument("--keep", metavar="DIR", help="keep the recordings in DIR (new or empty) "
                                                      "instead of a temporary directory")
    parser.add_argument("--interleave", action="store_true",
                        help="run the configurations round-robin (unrecorded, level 0, ..., unrecorded, ...) "
                             "instead of each one's repeats back to back; steadier ratios on a busy machine")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds allowed per run (default 1800)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    parser.add_argument("--mlp", default="8,512,256", metavar="LAYERS,WIDTH,BATCH",
                        help="tests/scripts/device_train.py's model: hidden layers, width and batch rows "
                             "(default 8,512,256)")
    parser.add_argument("--launch-us", type=int, default=0,
                        help="--device testdev: host microseconds each kernel launch costs (TESTDEV_LAUNCH_US; "
                             "a GPU's are a few, an NPU's more)")
    parser.add_argument("--kernel-us", type=int, default=0,
                        help="--device testdev: device microseconds each kernel takes on the device's own "
                             "timeline, which .item() waits for (TESTDEV_KERNEL_US)")
    parser.add_argument("--device", choices=("cpu", "testdev", "cuda"), default="cpu",
                        help="for tests/scripts/device_train.py: train on the CPU, on the test accelerator "
                             "(build/lib/libacc_testdev.so) or on CUDA; see bench/device_overhead.py")
    parser.add_argument("--count-kernels", action="store_true",
                        help="--device cuda: count the device's kernels under torch.profiler (COUNT_KERNELS=1; "
                             "the profiler slows every run, so time without it)")
    args = parser.parse_args(argv)

    try:
        levels = parse_levels(args.levels)
    except ValueError as e:
        usage_error(parser, f"--levels: {e} is not one of {', '.join(LEVEL_TOKENS)} (give a comma-separated list)")
    if args.repeats < 1:
        usage_error(parser, "--repeats must be at least 1")
    try:
        args.mlp = tuple(int(x) for x in args.mlp.split(","))
        if len(args.mlp) != 3 or min(args.mlp) < 1:
            raise ValueError
    except ValueError:
        usage_error(parser, f"--mlp: {args.mlp} is not three positive integers LAYERS,WIDTH,BATCH (e.g. 4,64,32)")
    if args.steps < 1 or args.batch < 1 or args.size < 1:
        usage_error(parser, "--steps, --batch and --size must be at least 1")
    script_path = args.script if os.path.isabs(args.script) else os.path.join(REPO, args.script)
    if not os.path.isfile(script_path):
        usage_error(parser, f"--script: {script_path} does not exist")
    libs = [os.path.abspath(lib) for lib in args.lib] if args.lib else [os.path.join(REPO, DEFAULT_LIB)]
    if len(libs) > 2:
        usage_error(parser, "--lib: at most two builds")
    for lib in libs if levels else []:
        if not os.path.isfile(lib):
            usage_error(parser, f"libacc.so not found at {lib}; build acc (scripts/setup.sh) or pass --lib")
    # The first build's: the floor, the test device and the reference source.
    args.lib = libs[0]
    if args.device == "testdev" and not os.path.isfile(device_env(args)["TESTDEV_LIB"]):
        usage_error(parser, f"--device testdev: {device_env(args)['TESTDEV_LIB']} not found; build the tests")
    if args.keep and os.path.exists(args.keep) and (not os.path.isdir(args.keep) or os.listdir(args.keep)):
        usage_error(parser, f"--keep: {args.keep} exists and is not an empty directory")

    python = find_python()
    if python is None:
        log("overhead.py: no Python interpreter can import torch (install python3-torch or set ACC_PYTHON)")
        return 1

    if "floor" in levels and not os.path.isfile(floor_lib(args)):
        usage_error(parser, f"--levels floor: {floor_lib(args)} not found; build bench/ (cmake --build build)")
    names = {"watch": "watch naninf", "reference": "ACC_REFERENCE"}
    configs = [{"name": "unrecorded", "level": None}]
    configs += [{"name": "floor", "level": lv} for lv in levels if lv == "floor"]
    for k, lib in enumerate(libs):
        suffix = f" [lib {k + 1}]" if len(libs) > 1 else ""
        configs += [{"name": names.get(lv, f"level {lv}") + suffix, "level": lv, "lib": lib}
                    for lv in levels if lv != "floor"]
    passed_acc = sorted(f"{k}={v}" for k, v in os.environ.items()
                        if k.startswith("ACC_") and k not in RUNNER_VARIABLES and k != "ACC_PYTHON")
    command_line = " ".join(shlex.quote(x) for x in [sys.executable, os.path.abspath(__file__)] + argv)

    if args.keep:
        out_root = os.path.abspath(args.keep)
        os.makedirs(out_root, exist_ok=True)
    else:
        out_root = tempfile.mkdtemp(prefix="acc-overhead-")
    try:
        try:
            info = torch_info(python)
        except RunFailed as e:
            log(f"overhead.py: {e}")
            return 1
        load_start = os.getloadavg()[0]
        log(f"overhead.py: torch {info['version']} ({python}), {info['threads']} threads; "
            f"{display_path(script_path)}, {args.repeats} runs per configuration")
        if "reference" in levels:
            # The reference the "reference" runs are judged against (untimed).
            try:
                run_once(args, python, script_path, {"name": "reference-source", "level": 1}, 0, out_root,
                         keep_recording=True)
            except RunFailed as e:
                log(f"overhead.py: {e}")
                return 1
            os.rename(os.path.join(out_root, "reference-source-run0"), os.path.join(out_root, "reference-source"))
        results = {c["name"]: [] for c in configs}
        if args.interleave:
            order = [(c, i) for i in range(args.repeats) for c in configs]
        else:
            order = [(c, i) for c in configs for i in range(args.repeats)]
        for config, i in order:
            try:
                step_times, wall, manifest, extras = run_once(args, python, script_path, config, i, out_root)
            except RunFailed as e:
                log(f"overhead.py: {e}")
                return 1
            results[config["name"]].append({"step_times": step_times, "wall": wall, "manifest": manifest,
                                            "extras": extras})
            timing = (f"steps {' '.join(f'{t:.3f}' for t in step_times)} s" if step_times
                      else f"process {wall:.2f} s")
            written = "" if manifest is None else f", {manifest['counts'].get('written')} records"
            log(f"  {config['name']:<10} run {i + 1}/{args.repeats}: {timing}{written}")

        load_end = os.getloadavg()[0]
        per_step = all(r["step_times"] for runs in results.values() for r in runs)
        rows = [summarize(c, results[c["name"]], per_step) for c in configs]
        for r, c in zip(rows, configs):
            r["lib"] = c.get("lib")
        base = rows[0]["median"]
        for r in rows:
            level1 = next((l1 for l1 in rows if l1["level"] == 1 and l1["lib"] == r["lib"]), None)
            r["ratio"] = r["median"] / base if base > 0 else float("nan")
            if r.get("host_median") is not None and rows[0].get("host_median"):
                r["host_ratio"] = r["host_median"] / rows[0]["host_median"]
            # Interleaved: each round's run against the same round's
            # unrecorded (and, for ACC_REFERENCE, level-1) run, the median
            # over rounds. Rounds a minute apart share the machine's mood, so
            # this is steadier on a noisy VM than a ratio of medians.
            if args.interleave and per_step and r is not rows[0]:
                r["paired_ratio"] = paired_ratio(r, rows[0])
                if r.get("host_run_medians") and rows[0].get("host_run_medians"):
                    r["host_paired_ratio"] = paired_ratio(r, rows[0], "host_run_medians")
                if r["level"] == "reference" and level1 is not None:
                    r["paired_over_level1"] = paired_ratio(r, level1)
            # What the recorder costs per op the script runs, and writes per
            # step (every step recorded; step 0's ops counted too).
            if r["level"] not in (None, "floor") and r.get("ops_seen"):
                ops_per_step = r["ops_seen"] / args.steps
                r["ops_per_step"] = ops_per_step
                r["per_op_ns"] = (r["median"] - base) / ops_per_step * 1e9 if per_step else None
                r["bytes_per_step"] = (r.get("bytes") or 0) / args.steps
                if r.get("device_stats_bytes") is not None:
                    # What the statistics read on the device: on a GPU, level
                    # 1's device time is at least this over the kernel's rate.
                    r["stats_read_per_step_mb"] = r["device_stats_bytes"] / args.steps / 1e6
                floor = next((f for f in rows if f["level"] == "floor"), None)
                if floor is not None and per_step:
                    r["above_floor_us_per_op"] = (r["median"] - floor["median"]) / ops_per_step * 1e6
            # Device kernels acc adds, per record and per device tensor it summarised.
            if r["level"] not in (None, "floor") and r.get("device_kernels") is not None and \
                    rows[0].get("device_kernels") is not None:
                added = r["device_kernels"] - rows[0]["device_kernels"]
                r["kernels_added"] = added
                if r.get("recorded"):
                    r["kernels_per_op"] = added / r["recorded"]
                if r.get("device_tensors"):
                    r["kernels_per_tensor"] = added / r["device_tensors"]

        timing_note = ("time per training step, parsed from the script's `step N ... time T` lines "
                       "(step 0, the warm-up, is skipped); process start-up and `import torch` excluded"
                       if per_step else
                       "the script prints no step times: each run is timed as a whole subprocess "
                       "(process start-up, `import torch` and recorder start-up included)")
        report = {
            "command": command_line,
            "script": display_path(script_path),
            "python": python,
            "torch_version": info["version"],
            "torch_threads": info["threads"],
            "torch_interop_threads": info["interop_threads"],
            "lib": args.lib if levels else None,
            "libs": libs if levels else [],
            "steps": args.steps,
            "threads": args.threads,
            "optim": args.optim,
            "batch": args.batch,
            "size": args.size,
            "repeats": args.repeats,
            "interleaved": args.interleave,
            "timing": "per_step" if per_step else "whole_process",
            "timing_note": timing_note,
            "acc_environment": passed_acc,
            "cpus": os.cpu_count(),
            "load_average_start": load_start,
            "load_average_end": load_end,
            "recordings": out_root if args.keep else None,
            "rows": rows,
        }
        if args.json:
            print(json.dumps(report, indent=2))
        else:
            print(f"command:    {command_line}")
            print(f"torch:      {info['version']} ({python}), {info['threads']} threads (torch default), "
                  f"{info['interop_threads']} inter-op; runs use "
                  + (f"OMP_NUM_THREADS={args.threads}" if args.threads else "torch's default"))
            is_resnet = os.path.basename(script_path) == "resnet_train.py"
            workload = (f"steps={args.steps} batch={args.batch} size={args.size}" if is_resnet
                        else f"steps={args.steps}")
            print(f"workload:   {report['script']} {workload}, {args.repeats} runs per configuration"
                  + (" (interleaved)" if args.interleave else ""))
            if levels:
                print("recorder:   " + ", ".join(f"LD_PRELOAD={lib}" + (f" [lib {k + 1}]" if len(libs) > 1 else "")
                                             for k, lib in enumerate(libs))
                      + (f" with {' '.join(passed_acc)}" if passed_acc else ""))
            print(f"timing:     {timing_note}")
            print(f"each run:   {rows[-1]['command']}")
            print(f"machine:    {os.cpu_count()} CPUs, 1-minute load average {load_start:.2f} at start, "
                  f"{load_end:.2f} at end (which includes these runs; other processes skew the numbers)")
            if load_start > 1.0:
                print("warning:    the machine was busy (1-minute load average above 1 at start): the training uses "
                      "1-2 cores, so other processes make the medians and ratios unreliable; rerun when idle "
                      "or use --interleave and more --repeats")
            if args.keep:
                print(f"recordings: {out_root}")
            print()
            print(format_table(rows, per_step))
            paired = [r for r in rows if r.get("paired_ratio") is not None]
            if paired:
                print()
                print("paired:     median over rounds of each run against the same round's unrecorded run: "
                      + ", ".join(f"{r['config']} {r['paired_ratio']:.2f}x" for r in paired)
                      + "".join(f"; {r['config']} against level 1 {r['paired_over_level1']:.2f}x"
                                for r in paired if r.get("paired_over_level1") is not None))
                if all(r.get("host_paired_ratio") is not None for r in paired):
                    print("host:       the same, of each step's time less the test device's kernels (run on the "
                          "host's threads here, on the device's own on real hardware): "
                          + ", ".join(f"{r['config']} {r['host_paired_ratio']:.2f}x" for r in paired))
            if per_step and rows[0].get("late_mean") and len(rows) > 1:
                print("late:       mean of each run's second half of steps (median over runs) against the "
                      "unrecorded run's, the pace once nothing absorbs what recording writes: "
                      + ", ".join(f"{r['config']} {r['late_mean'] / rows[0]['late_mean']:.2f}x" for r in rows[1:]
                                  if r.get("late_mean")))
        return 0
    finally:
        if not args.keep:
            shutil.rmtree(out_root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
