"""A nested model for module paths (tests/e2e/module_paths_test.cpp):
containers (ModuleList, Sequential), a submodule reached through two
attributes (shared, tied) and called twice per forward, ops in the outermost
module's own forward, and ops outside every module (the loss).

Prints, per step, the loss; the test checks the records' module paths.
With GRADS_OUT set, each parameter's gradient at each optimizer step is
written to GRADS_OUT/{step}/{parameter} (raw float32 bytes, row-major): what
the ACC_GRADS records must hold.
"""
import os

import torch
from torch import nn


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(8)
        self.mlp = nn.Sequential(nn.Linear(8, 8), nn.GELU())

    def forward(self, x):
        return x + self.mlp(self.norm(x))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Linear(4, 8)
        self.layers = nn.ModuleList([Block(), Block()])
        self.shared = nn.Linear(8, 8)
        self.tied = self.shared  # the same module under a second name
        self.head = nn.Linear(8, 2)

    def forward(self, x):
        x = torch.relu(self.embed(x))  # relu: the outermost module's own op
        for layer in self.layers:
            x = layer(x)
        x = self.shared(x)
        x = self.tied(x)
        return self.head(x)


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = Net()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randn(16, 4)
    target = torch.randn(16, 2)
    for step in range(2):
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), target)  # outside every module
        loss.backward()
        out = os.environ.get("GRADS_OUT")
        if out:
            os.makedirs(f"{out}/{step}", exist_ok=True)
            for name, p in model.named_parameters():
                with open(f"{out}/{step}/{name}", "wb") as f:
                    f.write(p.grad.detach().contiguous().numpy().tobytes())
        optimizer.step()
        print(f"step {step} loss {loss.item():.17g}", flush=True)


if __name__ == "__main__":
    main()
