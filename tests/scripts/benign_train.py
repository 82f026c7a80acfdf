"""A small model trained a few steps, in variants that differ only by
rounding (thread count, float64 against float32, summation order, the
optimizer) or by one
wrong kernel on the test accelerator: the replay tests' model
(tests/compare/replay_test.cpp).

Options (environment, so the script never changes between runs):
  THREADS    intra-op threads (default 1)
  DTYPE      float32 (default) or float64
  OPTIM      adamw (default) or sgd
  DEVICE     cpu (default) or testdev (the test accelerator, TESTDEV_LIB;
             TESTDEV_SUM_ORDER=reverse changes its summation order,
             TESTDEV_WRONG_OP=op makes one kernel wrong)
  STEPS      training steps (default 3)
  MATMUL_PRECISION  torch.set_float32_matmul_precision(value) ("high" lets
             a device's float32 matmuls use TF32; testdev does with
             TESTDEV_MATMUL=tf32)
  MATMUL_PRECISION_LATER  the same, set after the first step
  DETERMINISTIC=1   torch.use_deterministic_algorithms(True)
  LOSS       mse (default) or cross_entropy (a composite op: its backward
             is two autograd nodes)
  AUTOCAST   a dtype (e.g. bfloat16): the head runs under torch.autocast
             on the model's device type
Prints "step N loss X" per step.
"""
import os
import sys

import torch

from engine_backward import engine_backward

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "accelerator"))


def main():
    torch.set_num_threads(int(os.environ.get("THREADS", "1")))
    dtype = getattr(torch, os.environ.get("DTYPE", "float32"))
    steps = int(os.environ.get("STEPS", "3"))
    device = os.environ.get("DEVICE", "cpu")
    if device == "testdev":
        import testdev
        device = testdev.load(os.environ["TESTDEV_LIB"])
    if "MATMUL_PRECISION" in os.environ:
        torch.set_float32_matmul_precision(os.environ["MATMUL_PRECISION"])
    if os.environ.get("DETERMINISTIC") == "1":
        torch.use_deterministic_algorithms(True)
    torch.manual_seed(0)
    # The first Linear's bias feeds a BatchNorm, which removes it again: its
    # true gradient is 0 and its computed one pure rounding noise, which
    # Adam turns into lr-sized steps of either sign (conv + bias + BatchNorm
    # is common in real models).
    # The second Linear's output goes through tanh_ in place: the model has
    # an in-place kernel of its own.
    model = torch.nn.Sequential(
        torch.nn.Linear(64, 256), torch.nn.BatchNorm1d(256), torch.nn.GELU(), torch.nn.LayerNorm(256),
        torch.nn.Linear(256, 256))
    head = torch.nn.Linear(256, 8)
    x = torch.randn(128, 64)
    y = torch.randn(128, 8)
    model = model.to(device=device, dtype=dtype)
    head = head.to(device=device, dtype=dtype)
    x, y = x.to(device=device, dtype=dtype), y.to(device=device, dtype=dtype)
    params = list(model.parameters()) + list(head.parameters())
    if os.environ.get("OPTIM", "adamw") == "sgd":
        opt = torch.optim.SGD(params, lr=0.05, momentum=0.9, foreach=False)
    else:
        # One op per parameter on every device and torch version (torch 2.x
        # would pick foreach ops on an accelerator only).
        opt = torch.optim.AdamW(params, lr=1e-3, foreach=False)
    autocast = os.environ.get("AUTOCAST")
    for step in range(steps):
        if step == 1 and "MATMUL_PRECISION_LATER" in os.environ:
            torch.set_float32_matmul_precision(os.environ["MATMUL_PRECISION_LATER"])
        opt.zero_grad()
        hidden = torch.tanh_(model(x))
        if autocast:
            with torch.autocast(x.device.type, dtype=getattr(torch, autocast)):
                out = head(hidden).float()
        else:
            out = head(hidden)
        # torch.sum: TESTDEV_SUM_ORDER=reverse makes the test accelerator's
        # kernel add in another order.
        if os.environ.get("LOSS") == "cross_entropy":
            loss = torch.nn.functional.cross_entropy(out, y.argmax(1))
        else:
            loss = ((out - y) ** 2).sum() / out.numel()
        engine_backward(loss)  # loss.backward(), see engine_backward.py
        opt.step()
        print(f"step {step} loss {loss.item():.9g}", flush=True)


if __name__ == "__main__":
    main()
