"""A small MLP trained for a few SGD steps on the CPU or on the test
accelerator (tests/accelerator): the accelerator tests' model.

Options (environment, so the script never changes between runs):
  DEVICE        cpu (default), testdev: the test accelerator, loaded from
                TESTDEV_LIB (its device is "privateuseone" on torch 1.13),
                or any device torch knows (cuda)
  STEPS         training steps (default 3)
  LAYERS        hidden Linear+GELU blocks (default 2): more layers, more ops
  WIDTH         hidden width (default 64) and BATCH rows (default 32)
  COUNT_KERNELS 1 (cuda): run under torch.profiler and count the kernels,
                copies and fills the device ran, for "counters" (the
                profiler slows the run: time without it)
  FOREACH       1: the optimizer updates all parameters with _foreach_ ops
                (tensor lists); default 0, one op per parameter, which every
                torch version and device runs alike (torch 2.x would pick
                foreach on an accelerator and not on the CPU)
  ZERO_GRAD     zero: zero_grad() zeroes the gradients in place (torch
                1.13's default), none: it lets them go (torch 2.x's);
                default: the torch's own
  NORM          batch: a BatchNorm1d after the first Linear, whose
                running statistics an op nested in aten::batch_norm writes
                (default: none)
  ACCUMULATE    N: each step adds the gradients of N backward passes
                (halves, thirds... of the batch) into the same .grad
                tensors, as gradient accumulation does (default 1); the
                step's line then shows the last pass's loss
  DTYPE         float32 (default), float64 or bfloat16
  WRONG_GELU_LIB  a library to load with torch.ops.load_library first: the
                CPU's wrong gelu kernels of tests/compare/wrong_kernel
  WRONG_OPS     op:eps,...: those aten ops made wrong on any device
                (tests/scripts/wrong_ops.py)
  NAN_DATA      1: the input batch's first element is NaN, written through
                numpy (no op makes it: the program hands it in); float32 only
The model and data are made on the CPU from a fixed seed and then moved, so
every device starts from the same values. Prints one line per step with the
loss and its seconds (on the test accelerator also the seconds its kernels
ran on the host's threads: "kernel K"), then (on the test accelerator, and on CUDA) one line
"counters {json}": on CUDA, the peak of torch's allocator (memory_peak) and,
with COUNT_KERNELS=1, the device's kernels.
"""
import contextlib
import json
import os
import sys
import time

import torch

import wrong_ops
from engine_backward import engine_backward

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "accelerator"))


def main():
    steps = int(os.environ.get("STEPS", "3"))
    layers = int(os.environ.get("LAYERS", "2"))
    width = int(os.environ.get("WIDTH", "64"))
    batch = int(os.environ.get("BATCH", "32"))
    dtype = getattr(torch, os.environ.get("DTYPE", "float32"))
    device = os.environ.get("DEVICE", "cpu")
    testdev = None
    if os.environ.get("WRONG_GELU_LIB"):
        torch.ops.load_library(os.environ["WRONG_GELU_LIB"])
    if device == "testdev":
        import testdev
        device = testdev.load(os.environ["TESTDEV_LIB"])
    torch.manual_seed(0)
    torch.set_num_threads(1)
    norm = os.environ.get("NORM", "")
    if norm not in ("", "batch"):
        sys.exit(f"device_train.py: NORM must be batch, not {norm!r}")
    blocks = [torch.nn.Linear(16, width)] + ([torch.nn.BatchNorm1d(width)] if norm else []) + [torch.nn.GELU()]
    for _ in range(layers - 1):
        blocks += [torch.nn.Linear(width, width), torch.nn.GELU()]
    blocks.append(torch.nn.Linear(width, 4))
    model = torch.nn.Sequential(*blocks).to(dtype)
    x = torch.randn(batch, 16).to(dtype)
    target = torch.randn(batch, 4).to(dtype)
    if os.environ.get("NAN_DATA") == "1":
        x.numpy()[0, 0] = float("nan")
    model = model.to(device)
    x, target = x.to(device), target.to(device)
    with cuda_counters(device), wrong_ops.from_environment():
        train(model, x, target, steps, testdev.kernel_seconds if testdev is not None else None)
    if os.environ.get("WRONG_OPS") and device != "cpu":
        settle_autograd_thread(device)
    if testdev is not None:
        print("counters " + json.dumps(testdev.counters()), flush=True)
    return 0


def settle_autograd_thread(device):
    """A backward pass on the device outside the dispatch mode. The autograd
    engine's device thread drops its last graph task, which holds the mode
    (a Python object) in its thread-local state, after the pass is done:
    when the program has reached Python's exit by then, the thread takes the
    GIL of a finalizing interpreter and the process aborts ("terminate called
    without an active exception", seen about one run in fifteen on the test
    accelerator). Its last task is then this one, which holds no Python
    object (engine_backward.py: nor torch 2.15's stashed context)."""
    engine_backward(torch.ones(1, device=device, requires_grad=True).sum())


@contextlib.contextmanager
def cuda_counters(device):
    """On CUDA, prints what the test accelerator's counters hold there: the
    allocator's peak and, under COUNT_KERNELS=1, the device's kernels, copies
    and fills over the training steps."""
    if not str(device).startswith("cuda"):
        yield
        return
    profiler = None
    if os.environ.get("COUNT_KERNELS") == "1":
        profiler = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA])
        profiler.__enter__()
    yield
    torch.cuda.synchronize()
    counters = {"memory_peak": torch.cuda.max_memory_allocated()}
    if profiler is not None:
        profiler.__exit__(None, None, None)
        events = profiler.events()
        counters["kernels"] = sum(1 for e in events if e.device_type == torch.autograd.DeviceType.CUDA)
        # The host's side of the same work: runtime calls that launch.
        counters["launch_calls"] = sum(1 for e in events if e.name.startswith(("cudaLaunch", "cuLaunch")))
    print("counters " + json.dumps(counters), flush=True)


def train(model, x, target, steps, kernel_seconds=None):
    """kernel_seconds (the test accelerator's): the step line ends with the
    seconds its kernels ran on the host's threads within the step, which a
    real device spends while its host goes on."""
    foreach = os.environ.get("FOREACH", "0") == "1"
    zero_grad = os.environ.get("ZERO_GRAD", "")
    if zero_grad not in ("", "zero", "none"):
        sys.exit(f"device_train.py: ZERO_GRAD must be zero or none, not {zero_grad!r}")
    zero_grad_args = {} if not zero_grad else {"set_to_none": zero_grad == "none"}
    accumulate = os.environ.get("ACCUMULATE", "1")
    if not accumulate.isdigit() or int(accumulate) < 1:
        sys.exit(f"device_train.py: ACCUMULATE must be a whole number of backward passes, 1 or more, not {accumulate!r}")
    accumulate = int(accumulate)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, foreach=foreach)
    for step in range(steps):
        kernels = kernel_seconds() if kernel_seconds else 0.0
        start = time.perf_counter()
        optimizer.zero_grad(**zero_grad_args)
        for xs, ts in zip(x.chunk(accumulate), target.chunk(accumulate)):
            loss = torch.nn.functional.mse_loss(model(xs), ts)
            engine_backward(loss)  # loss.backward(), see engine_backward.py
        optimizer.step()
        value = loss.item()  # waits for the device: the step is done
        line = f"step {step} loss {value:.17g} time {time.perf_counter() - start:.6f}"
        if kernel_seconds:
            line += f" kernel {kernel_seconds() - kernels:.6f}"
        print(line, flush=True)


if __name__ == "__main__":
    sys.exit(main())
