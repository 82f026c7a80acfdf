"""Temporaries that a program frees together with their views, on a device.

Each of STEPS steps (default 3) makes ROUNDS (default 24) products of
BATCH x 512 float32 (default BATCH 512: 1 MiB), splits each into two views,
combines them and frees all three, under no_grad, so nothing but a recorder
could keep them: the temporaries of a training step's backward look like
this. Prints "step N sum S", then the test accelerator's counters as
device_train.py does (memory_peak: the device allocator's peak).
Environment: DEVICE (cpu, testdev), TESTDEV_LIB, STEPS, ROUNDS, BATCH.
"""
import json
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, "..", "accelerator")]


def main():
    device = os.environ.get("DEVICE", "cpu")
    testdev = None
    if device == "testdev":
        import testdev
        device = testdev.load(os.environ["TESTDEV_LIB"])
    torch.manual_seed(0)
    torch.set_num_threads(1)
    batch = int(os.environ.get("BATCH", "512"))
    x = torch.randn(batch, 64).to(device)
    w = torch.randn(64, 512).to(device)
    total = torch.zeros(batch, 256).to(device)
    with torch.no_grad():
        for step in range(int(os.environ.get("STEPS", "3"))):
            for _ in range(int(os.environ.get("ROUNDS", "24"))):
                y = x @ w
                a, b = y.chunk(2, 1)
                total += a * b
                del y, a, b
            print(f"step {step} sum {total.sum().item():.6e}", flush=True)
    if testdev is not None:
        print("counters " + json.dumps(testdev.counters()), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
