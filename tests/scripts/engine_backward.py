"""loss.backward() for the scripts that train on a device, without the exit
race of torch 2.15's backward.

From torch 2.15, Tensor.backward stashes a Python object (a
contextvars.Context) in the thread-local state that every graph task keeps.
The device's autograd thread can drop the last task's last reference after
the main thread has returned from backward: when the program has reached
Python's exit by then, the thread takes the GIL of a finalizing interpreter
and the process aborts ("terminate called without an active exception",
pytorch/pytorch#190489). With two programs on two cores the unrecorded MLP
of Accelerator.RecordingAddsNoHostSynchronisation aborted in 12 of 16 runs.

engine_backward(loss) runs the same pass through the autograd engine
directly, as torch.autograd.backward does, with the same gradient made by
the same op (ones_like, preserve_format), so records are those of
loss.backward(); its graph tasks hold no Python object, and the thread may
drop them whenever it likes.
"""
import torch


def engine_backward(loss):
    grad = torch.ones_like(loss, memory_format=torch.preserve_format)
    torch.autograd.Variable._execution_engine.run_backward((loss,), (grad,), False, False, (), True, True)
