"""Linear -> GELU -> Linear trained for a few SGD steps: the compare tests'
model (tests/compare).

Options (environment, so the script never changes between runs):
  GELU_STEPS      training steps (default 2)
  GELU_DTYPE      float32 or float64 (default float32); the parameters and
                  data are created in float32 and converted, so both dtypes
                  start from the same values
  WRONG_GELU_LIB  path of the test-only library (tests/compare/wrong_kernel)
                  to load with torch.ops.load_library before the model runs;
                  WRONG_GELU=fwd (default) replaces aten::gelu's CPU kernel,
                  WRONG_GELU=bwd aten::gelu_backward's
  GELU_EXTRA_OP   if 1, one extra op (x.clone()) runs before the first
                  forward pass: the op sequences of two runs then differ
"""
import os
import sys

import torch


def main():
    steps = int(os.environ.get("GELU_STEPS", "2"))
    dtype = getattr(torch, os.environ.get("GELU_DTYPE", "float32"))
    lib = os.environ.get("WRONG_GELU_LIB")
    if lib:
        torch.ops.load_library(lib)
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = torch.nn.Sequential(
        torch.nn.Linear(8, 32),
        torch.nn.GELU(),
        torch.nn.Linear(32, 4),
    ).to(dtype)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randn(16, 8).to(dtype)
    target = torch.randn(16, 4).to(dtype)
    if os.environ.get("GELU_EXTRA_OP") == "1":
        x = x.clone()
    for step in range(steps):
        optimizer.zero_grad()
        out = model(x)
        loss = torch.nn.functional.mse_loss(out, target)
        loss.backward()
        optimizer.step()
        print(f"step {step} loss {loss.item():.17g}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
