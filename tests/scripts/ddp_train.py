"""Linear -> GELU -> Linear trained with DistributedDataParallel (gloo, CPU)
for a few SGD steps: the ranks tests' model. Start one process per rank
with torchrun, or by hand with torchrun's variables (MASTER_ADDR,
MASTER_PORT, RANK, WORLD_SIZE).

Options (environment, so the script never changes between runs):
  STEPS           training steps (default 2)
  WRONG_GELU_LIB  the CPU's wrong gelu kernels of tests/compare/wrong_kernel,
  WRONG_GELU_RANK loaded (with torch.ops.load_library) on this rank only
Each rank trains on data of its own; DDP averages the gradients. Prints
"step N loss X rank R" per step.
"""
import os
import sys

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel


def main():
    steps = int(os.environ.get("STEPS", "2"))
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    if os.environ.get("WRONG_GELU_LIB") and os.environ.get("WRONG_GELU_RANK") == str(rank):
        torch.ops.load_library(os.environ["WRONG_GELU_LIB"])
    torch.manual_seed(0)
    model = DistributedDataParallel(torch.nn.Sequential(
        torch.nn.Linear(8, 32),
        torch.nn.GELU(),
        torch.nn.Linear(32, 4),
    ))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    data = torch.Generator().manual_seed(100 + rank)
    for step in range(steps):
        x = torch.randn(16, 8, generator=data)
        target = torch.randn(16, 4, generator=data)
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), target)
        loss.backward()
        optimizer.step()
        print(f"step {step} loss {loss.item():.17g} rank {rank}", flush=True)
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
