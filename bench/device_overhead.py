#!/usr/bin/env python3
"""Recording overhead of the accelerator path against the CPU path.

Runs bench/overhead.py on tests/scripts/device_train.py (an MLP, by default
8 layers of 512, batch 256, SGD with momentum) twice: on the CPU and on the
test accelerator (tests/accelerator, a PrivateUse1 device whose kernels are
the CPU's), each unrecorded and at each level, and prints both ratios side
by side with what recording costs the device: the kernels acc adds (each a
launch on a real device), per record and per device tensor summarised, the
host synchronisations (none may be added), the peaks of host memory and
of the device's own memory, and the megabytes a step the statistics read on
the device (manifest device_stats.bytes: on a GPU, level 1's device time is
at least that over the statistics kernel's read rate).

On a real device a launch costs the host microseconds; the test device can
charge it (--launch-us N, spent on the calling thread as a driver does) and
run its kernels on a timeline of its own (--kernel-us N per kernel, which
.item() and events wait for):

  /usr/bin/python3 bench/device_overhead.py --repeats 3 --levels 0,1,2
  /usr/bin/python3 bench/device_overhead.py --mlp 4,64,32 --launch-us 5 --levels 1,watch --steps 20
  /usr/bin/python3 bench/device_overhead.py --accelerator cuda   # on a GPU machine

--accelerator testdev|cuda (default testdev) picks the device compared with
the CPU; other options go to overhead.py (--mlp, --launch-us, --kernel-us,
--steps, --repeats, --levels, --interleave ...).
"""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def cell(value, spec):
    return "-" if value is None else format(value, spec)


def main(argv):
    if any(a in ("-h", "--help") for a in argv):
        print(__doc__)
        return 0
    accelerator = "testdev"
    if "--accelerator" in argv:
        at = argv.index("--accelerator")
        if at + 1 >= len(argv) or argv[at + 1] not in ("testdev", "cuda"):
            print("device_overhead.py: --accelerator takes testdev or cuda", file=sys.stderr)
            return 2
        accelerator = argv[at + 1]
        argv = argv[:at] + argv[at + 2:]
    rows = {}
    for device in ("cpu", accelerator):
        command = [sys.executable, os.path.join(HERE, "overhead.py"), "--script", "tests/scripts/device_train.py",
                   "--device", device, "--interleave", "--json"] + argv
        print(f"device_overhead.py: {device}: {' '.join(command[1:])}", file=sys.stderr, flush=True)
        proc = subprocess.run(command, capture_output=True, text=True)
        if proc.returncode != 0:
            sys.stderr.write(proc.stderr)
            return proc.returncode
        report = json.loads(proc.stdout)
        rows[device] = {r["config"]: r for r in report["rows"]}
        print(f"device_overhead.py: {device}: each run: {report['rows'][-1]['command']}", file=sys.stderr)
    a = accelerator
    # The test device's kernels run on the host's threads; "host" is each
    # step less their time: what the host spends where a device runs them.
    host = all(r.get("host_median") is not None for r in rows[accelerator].values())
    header = (f"{'configuration':<14} {'cpu s/step':>11} {'cpu ratio':>10} {a + ' s/step':>15} {a + ' ratio':>14} "
              + (f"{'host s/step':>12} {'host ratio':>11} " if host else "")
              + f"{'kernels':>8} {'+/op':>6} {'+/tensor':>9} {'syncs':>6} {'host MB cpu':>12} {'host MB ' + a:>15} "
              f"{a + ' MB':>11} {'stats MB/step':>14}")
    print(header)
    for name in rows["cpu"]:
        c, d = rows["cpu"][name], rows[accelerator][name]
        print(f"{name:<14} {c['median']:>11.4f} {c['ratio']:>9.2f}x {d['median']:>15.4f} {d['ratio']:>13.2f}x "
              + (f"{d['host_median']:>12.4f} {d['host_ratio']:>10.2f}x " if host else "")
              + f"{cell(d.get('device_kernels'), 'd'):>8} {cell(d.get('kernels_per_op'), '.2f'):>6} "
              f"{cell(d.get('kernels_per_tensor'), '.2f'):>9} {cell(d.get('device_syncs'), 'd'):>6} "
              f"{cell(c.get('peak_rss_mb'), '.0f'):>12} {cell(d.get('peak_rss_mb'), '.0f'):>15} "
              f"{cell(d.get('device_peak_mb'), '.1f'):>11} {cell(d.get('stats_read_per_step_mb'), '.1f'):>14}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
