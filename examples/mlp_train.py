"""A small MLP trained for a few SGD steps on fixed random data.

Prints one loss per step with full precision, so two runs can be compared
bit for bit. Used by the README's demo and by the end-to-end tests.

Options (environment, so the script itself never changes between runs):
  MLP_STEPS      training steps (default 3)
  MLP_DTYPE      float32 or float64 (default float32)
  MLP_SAVE_DIR   if set, saves the first step's tensors there as raw .bin
                 files (for the tests that check level-2 data)
"""
import os
import sys

import torch


def main():
    steps = int(os.environ.get("MLP_STEPS", "3"))
    dtype = getattr(torch, os.environ.get("MLP_DTYPE", "float32"))
    save_dir = os.environ.get("MLP_SAVE_DIR")
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = torch.nn.Sequential(
        torch.nn.Linear(8, 16),
        torch.nn.ReLU(),
        torch.nn.Linear(16, 4),
    ).to(dtype)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randn(5, 8, dtype=dtype)
    target = torch.randn(5, 4, dtype=dtype)
    for step in range(steps):
        optimizer.zero_grad()
        hidden = model[0](x)
        activated = model[1](hidden)
        out = model[2](activated)
        loss = torch.nn.functional.mse_loss(out, target)
        loss.backward()
        if save_dir and step == 0:
            os.makedirs(save_dir, exist_ok=True)
            for name, t in (("x", x), ("hidden", hidden), ("activated", activated),
                            ("out", out), ("loss", loss),
                            ("weight0_grad", model[0].weight.grad)):
                t.detach().contiguous().numpy().tofile(os.path.join(save_dir, name + ".bin"))
        optimizer.step()
        print(f"step {step} loss {loss.item():.17g}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
