#!/usr/bin/env python3
"""Where a recorded program's host time goes inside acc, by sampling.

For machines without perf, where py-spy --native does not finish (a CUDA
process on the lent H200). It compiles bench/host_sampler.cpp (once, with
the C++ compiler of CXX or c++), runs the command with the sampler preloaded
before the LD_PRELOAD it already has, then names the frames of acc's
libraries (libacc.so and libacc_core.so, through addr2line: a build with -g gives inlined
functions and lines) and prints, of the samples of each busy thread:
the share with acc on the stack; acc's outermost frames (which callback);
acc's frames inclusive; acc's innermost frames (where acc spends it, its
calls into torch or the driver included); and the object each such sample
was in.

  python3 bench/host_profile.py --out prof.txt -- env DEVICE=cuda STEPS=400 \\
      LD_PRELOAD=build/lib/libacc.so ACC_LEVEL=1 python3 tests/scripts/device_train.py
  python3 bench/host_profile.py --report prof.txt          # again, from the file

--us N samples every N microseconds of the process's CPU time (default
1000; the kernel's tick is the shortest period, 4 ms at 250 Hz, so a run
needs seconds of steps); --skip-s S starts after S seconds of it (past the
import of torch and the device's start). Run it at two levels and compare
the shares: a sample is a thread's CPU time, so on a device the main
thread's share with acc on the stack is what recording adds to the host's
time per op.
"""
import argparse
import bisect
import collections
import glob
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def sampler_library():
    """bench/host_sampler.cpp compiled, kept beside the sources' mtime."""
    src = os.path.join(HERE, "host_sampler.cpp")
    cache = os.path.join(tempfile.gettempdir(), f"acc-host-sampler-{os.getuid()}")
    os.makedirs(cache, exist_ok=True)
    lib = os.path.join(cache, f"libhost_sampler-{int(os.path.getmtime(src))}.so")
    if not os.path.exists(lib):
        cxx = os.environ.get("CXX") or shutil.which("c++") or shutil.which("g++")
        if not cxx:
            sys.exit("host_profile: no C++ compiler (set CXX) to build bench/host_sampler.cpp")
        subprocess.run([cxx, "-O2", "-shared", "-fPIC", "-o", lib + ".tmp", src, "-lrt"], check=True)
        os.replace(lib + ".tmp", lib)
    return lib


def elf_is_executable(path):
    """ET_EXEC (not position-independent): its addresses are absolute."""
    try:
        with open(path, "rb") as f:
            head = f.read(18)
        return len(head) == 18 and head[:4] == b"\x7fELF" and int.from_bytes(head[16:18], "little") == 2
    except OSError:
        return False


class Maps:
    """The process's file mappings: which object holds an address, and where in it."""

    def __init__(self, lines):
        spans, bases = [], {}
        for line in lines:
            parts = line.split(None, 5)
            if len(parts) < 6 or not parts[5].startswith("/"):
                continue
            start, end = (int(x, 16) for x in parts[0].split("-"))
            path = parts[5].strip()
            if int(parts[2], 16) == 0:
                bases.setdefault(path, start)
            spans.append((start, end, path))
        spans.sort()
        self.starts = [s[0] for s in spans]
        self.spans = spans
        self.bases = {p: (0 if elf_is_executable(p) else b) for p, b in bases.items()}

    def place(self, pc):
        i = bisect.bisect_right(self.starts, pc) - 1
        if i < 0 or pc >= self.spans[i][1]:
            return None, pc
        path = self.spans[i][2]
        return path, pc - self.bases.get(path, 0)


def is_acc(path):
    """The recorder's libraries: not the test accelerator's or the callback
    floor's, which share the prefix."""
    return path is not None and os.path.basename(path) in ("libacc.so", "libacc_core.so")


def passes_through(name):
    """The preload shim's dlopen, which every library the program loads goes
    through: acc's frame, not acc's time."""
    return name == "dlopen" or "openFromCallerPath(" in name


def names_of(path, offsets):
    """addr2line's function names for `offsets` in `path`, inlined callers
    included, outermost last: {offset: [innermost, ..., outermost]}."""
    offsets = sorted(offsets)
    out = []
    for i in range(0, len(offsets), 4000):  # a command line of bounded length
        out += subprocess.run(["addr2line", "-a", "-f", "-C", "-i", "-e", path] + [hex(o) for o in offsets[i:i + 4000]],
                              capture_output=True, text=True).stdout.splitlines()
    names, current = {}, None
    i = 0
    while i < len(out):
        line = out[i]
        if line.startswith("0x") and all(c in "0123456789abcdefx" for c in line):
            current = int(line, 16)
            names[current] = []
            i += 1
            continue
        fn = line if line != "??" else f"{os.path.basename(path)}+{current:#x}"
        if current is not None:
            names[current].append(fn)
        i += 2  # the file:line that follows
    return names


def report(path, top):
    maps_lines, samples, dropped = [], [], 0
    with open(path) as f:
        for line in f:
            if line.startswith("map "):
                maps_lines.append(line[4:])
            elif line.startswith("sample "):
                parts = line.split()
                samples.append((int(parts[1]), [int(x, 16) for x in parts[2:]]))
            elif line.startswith("dropped "):
                dropped = int(line.split()[1])
    maps = Maps(maps_lines)
    # Every frame placed; acc's offsets named, one addr2line per object.
    placed, wanted = [], collections.defaultdict(set)
    for tid, pcs in samples:
        frames = []
        for k, pc in enumerate(pcs):
            obj, off = maps.place(pc if k == 0 else pc - 1)  # return addresses: inside the call
            frames.append((obj, off))
            if is_acc(obj):
                wanted[obj].add(off)
        placed.append((tid, frames))
    named = {obj: names_of(obj, offs) for obj, offs in wanted.items()}

    threads = collections.Counter(tid for tid, _ in placed)
    total = len(placed)
    print(f"{total} samples ({dropped} dropped), {len(threads)} threads; per thread, busiest first:")
    for tid, n in threads.most_common(8):
        print(f"  thread {tid}: {n} samples ({100 * n / total:.1f}%)")
    for tid, n in threads.most_common(3):
        if n < total / 20:
            break
        outer, inner, incl, leaf = (collections.Counter() for _ in range(4))
        with_acc = 0
        for t, frames in placed:
            if t != tid:
                continue
            acc_names = []  # innermost first, inlined callers after their callees
            for obj, off in frames:
                if is_acc(obj):
                    acc_names.extend(n for n in named[obj].get(off, [f"{os.path.basename(obj)}+{off:#x}"])
                                     if not passes_through(n))
            if not acc_names:
                continue
            with_acc += 1
            inner[acc_names[0]] += 1
            outer[acc_names[-1]] += 1
            for name in set(acc_names):
                incl[name] += 1
            leaf[os.path.basename(frames[0][0] or "?")] += 1
        print(f"\nthread {tid}: {n} samples, {with_acc} with acc on the stack ({100 * with_acc / n:.1f}%)")
        for title, c in (("acc's outermost frame", outer), ("acc inclusive", incl),
                         ("acc's innermost frame (with what it calls)", inner), ("object sampled in", leaf)):
            print(f"  -- {title}")
            for name, v in c.most_common(top):
                print(f"  {v:7d} {100 * v / n:5.1f}%  {name[:150]}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", help="where the samples go (run mode)")
    ap.add_argument("--report", help="a samples file to report on again")
    ap.add_argument("--us", type=int, default=1000,
                    help="microseconds of CPU time between samples (at least the kernel's tick: 4,000 at 250 Hz)")
    ap.add_argument("--skip-s", type=float, default=0,
                    help="seconds of the process's CPU time before the first sample (past importing torch)")
    ap.add_argument("--top", type=int, default=20, help="rows per table")
    ap.add_argument("command", nargs=argparse.REMAINDER, help="-- the command to run")
    args = ap.parse_args()
    if args.report:
        report(args.report, args.top)
        return 0
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not args.out or not command:
        ap.error("give --out FILE -- COMMAND..., or --report FILE")
    env = dict(os.environ, HOST_SAMPLER_OUT=os.path.abspath(args.out), HOST_SAMPLER_US=str(args.us),
               HOST_SAMPLER_SKIP_MS=str(int(args.skip_s * 1000)))
    # The sampler before what the program preloads. A command given through
    # env sets its own LD_PRELOAD, which replaces this one: it gets the
    # sampler too.
    sampler = sampler_library()
    env["LD_PRELOAD"] = ":".join(filter(None, [sampler, env.get("LD_PRELOAD")]))
    if command[0] == "env":
        command = [f"LD_PRELOAD={sampler}:{a[11:]}" if a.startswith("LD_PRELOAD=") else a for a in command]
    # Each process writes OUT.pid; an earlier run's would pass for this one's.
    for old in glob.glob(glob.escape(args.out) + ".*"):
        if old.rsplit(".", 1)[1].isdigit():
            os.remove(old)
    rc = subprocess.run(command, env=env).returncode
    if rc != 0:
        print(f"host_profile: the command exited with {rc}", file=sys.stderr)
    files = [f for f in glob.glob(glob.escape(args.out) + ".*") if f.rsplit(".", 1)[1].isdigit()]
    if not files:
        sys.exit("host_profile: no samples were written (did the program exit through os._exit?)")
    # The program's own process: the one with the most samples.
    counts = {}
    for f in files:
        with open(f) as fh:
            counts[f] = sum(1 for line in fh if line.startswith("sample "))
    main_file = max(files, key=lambda f: counts[f])
    os.replace(main_file, args.out)
    if len(files) > 1:
        others = ", ".join(f"{f} ({counts[f]})" for f in sorted(files) if f != main_file)
        print(f"host_profile: {len(files)} processes sampled; the one with the most samples is in {args.out}; "
              f"the others: {others}")
    report(args.out, args.top)
    return rc


if __name__ == "__main__":
    sys.exit(main())
