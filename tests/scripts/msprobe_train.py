"""A small MLP trained on the CPU under msprobe's own PrecisionDebugger
(mindstudio-probe from PyPI, scripts/msprobe-env.sh), API level (L1): the
dumps that msprobe itself writes, for acc to read.

Environment: TASK statistics (default) or tensor; DUMP the dump folder
(default ./dump_TASK); STEPS (default 2); FAULT=1 plants a wrong gelu, 3 %
too large forward and backward, as one autograd node (a composite gelu * 1.03
would put msprobe's backward hook on the multiplication's node instead).
Prints one line per step with the loss.
"""
import json
import os

import torch
import torch.nn.functional as F

task = os.environ.get("TASK", "statistics")
dump = os.path.abspath(os.environ.get("DUMP", f"./dump_{task}"))
fault = os.environ.get("FAULT", "0") == "1"
steps = int(os.environ.get("STEPS", "2"))

# msprobe 26.2's tensor task calls Tensor.untyped_storage(), which torch
# has from 2.0 on.
if not hasattr(torch.Tensor, "untyped_storage"):
    torch.Tensor.untyped_storage = lambda self: self.storage().untyped()

if fault:
    # Planted before msprobe wraps torch's functions, so that msprobe dumps
    # the faulty Functional.gelu; the scaling uses the unwrapped Tensor.mul,
    # so that it is not dumped as an API of its own.
    gelu, mul = F.gelu, torch.Tensor.mul

    class WrongGelu(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, approximate):
            ctx.save_for_backward(x)
            ctx.approximate = approximate
            return mul(gelu(x, approximate=approximate), 1.03)

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            with torch.enable_grad():
                xx = x.detach().requires_grad_()
                (gx,) = torch.autograd.grad(gelu(xx, approximate=ctx.approximate), xx, mul(g, 1.03))
            return gx, None

    def wrong_gelu(input, approximate="none"):
        return WrongGelu.apply(input, approximate)

    F.gelu = wrong_gelu

from msprobe.pytorch import PrecisionDebugger  # noqa: E402

config = {"task": task, "dump_path": dump, "rank": [], "step": [], "level": "L1", "async_dump": False,
          task: {"scope": [], "list": [], "data_mode": ["all"]}}
if task == "statistics":
    config[task]["summary_mode"] = "statistics"
os.makedirs(dump, exist_ok=True)
config_path = dump + ".config.json"
with open(config_path, "w") as f:
    json.dump(config, f, indent=2)

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.Linear(16, 4))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
x, target = torch.randn(32, 8), torch.randn(32, 4)
debugger = PrecisionDebugger(config_path=config_path)
for step in range(steps):
    # rank_id: stepN/rank0/ folders (without it and without torch.distributed
    # msprobe writes stepN/proc<pid>/).
    debugger.start(model, rank_id=0)
    optimizer.zero_grad()
    loss = F.mse_loss(model(x), target)
    loss.backward()
    optimizer.step()
    debugger.stop()
    debugger.step()
    print(f"step {step} loss {loss.item():.6f}", flush=True)
