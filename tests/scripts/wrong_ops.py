"""Wrong kernels for any aten op, from the environment, for the verdict tests.

WRONG_OPS=hardswish:0.03,hardswish_backward:0.03 makes the named aten ops
(overload packet names, forward or backward) return their floating outputs
scaled by (1 + eps), computed in float64 and rounded to the output's dtype:
a kernel a few ulps wrong. It works through a dispatch mode below autograd
(and below autocast), so autograd and autocast run as they would, and the
program's random number generator is never touched.

    with wrong_ops.from_environment():
        train()
"""
import contextlib
import os

import torch
from torch.utils._python_dispatch import TorchDispatchMode


class WrongOps(TorchDispatchMode):
    def __init__(self, scales):
        super().__init__()
        self.scales = scales

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        eps = self.scales.get(func.overloadpacket.__name__)
        if eps is None:
            return out
        if isinstance(out, torch.Tensor) and func._schema.returns and func._schema.returns[0].alias_info is not None:
            # An in-place op returns its argument: change it where it is.
            if out.is_floating_point():
                out.copy_((out.double() * (1 + eps)).to(out.dtype))
            return out
        return _scaled(out, eps)


def _scaled(value, eps):
    if isinstance(value, (list, tuple)):
        return type(value)(_scaled(v, eps) for v in value)
    if isinstance(value, torch.Tensor) and value.is_floating_point():
        return (value.double() * (1 + eps)).to(value.dtype)
    return value


def from_environment():
    spec = os.environ.get("WRONG_OPS", "")
    if not spec:
        return contextlib.nullcontext()
    scales = {}
    for item in spec.split(","):
        name, _, eps = item.partition(":")
        scales[name.strip()] = float(eps or "0.03")
    return WrongOps(scales)
