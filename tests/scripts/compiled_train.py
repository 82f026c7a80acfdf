"""A small MLP compiled with torch.compile and trained for a few SGD steps:
the torch.compile tests' model (torch 2.x only).

Options (environment):
  STEPS            training steps (default 2)
  COMPILE_BACKEND  torch.compile's backend (default inductor)
Prints one line per step with the loss, then "compiled_ops N": how many ops
torch's own dispatcher profiler saw in the last step (for the tests).
"""
import os
import sys

import torch


def main():
    steps = int(os.environ.get("STEPS", "2"))
    backend = os.environ.get("COMPILE_BACKEND", "inductor")
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = torch.nn.Sequential(torch.nn.Linear(8, 32), torch.nn.GELU(), torch.nn.Linear(32, 4))
    compiled = torch.compile(model, backend=backend)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randn(16, 8)
    target = torch.randn(16, 4)
    for step in range(steps):
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(compiled(x), target)
        loss.backward()
        optimizer.step()
        print(f"step {step} loss {loss.item():.17g}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
