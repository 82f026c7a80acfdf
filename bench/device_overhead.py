#!/usr/bin/env python3
"""Recording overhead of the accelerator path against the CPU path.

Runs bench/overhead.py on tests/scripts/device_train.py (an MLP, 8 layers of
512, batch 256, SGD with momentum) twice: on the CPU and on the test
accelerator (tests/accelerator, a PrivateUse1 device whose kernels are the
CPU's), each unrecorded and at each level, and prints both tables' ratios
side by side. On the test device every statistic is computed by ATen
reductions into a device buffer, copied without blocking and completed on
the writer thread when the device's event fires; on the CPU by the fused
pass. Same model, same kernels: the difference between the two ratios is
the cost of the device path.

  /usr/bin/python3 bench/device_overhead.py --repeats 3 --levels 0,1,2

  /usr/bin/python3 bench/device_overhead.py --accelerator cuda   # on a GPU machine

--accelerator testdev|cuda (default testdev) picks the device compared with
the CPU; other options go to overhead.py.
"""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


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
        rows[device] = {r["config"]: r for r in json.loads(proc.stdout)["rows"]}
    print(f"{'configuration':<14} {'cpu s/step':>11} {'cpu ratio':>10} {accelerator + ' s/step':>15} "
          f"{accelerator + ' ratio':>14}")
    for name in rows["cpu"]:
        c, d = rows["cpu"][name], rows[accelerator][name]
        print(f"{name:<14} {c['median']:>11.4f} {c['ratio']:>9.2f}x {d['median']:>15.4f} {d['ratio']:>13.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
