"""The program bench/op_sweep.py records: one op sample per training step.

Each sample is one call of a torch function (elementwise, reductions,
matmul, conv, norms, pooling, losses, linalg, ...) on inputs made with numpy
from the sample's own seed, so every run sees the same inputs and torch's
random number generator is never used. Its kernel can be changed for the run
under test by a dispatch mode (below autograd, so the recorder sees the top-level op
return what the mode made of it):

  --variant none      the real kernels (the reference)
  --variant scale     every floating output of every aten op inside the
                      sample scaled by (1 + eps): a wrong kernel, systematic
  --variant float64   each op computed in float64 and rounded to its dtype: a
                      correct kernel that rounds differently (benign)
  --variant noise     the real result plus a random 0, +-1 or +-2 units in the
                      last place of the output's dtype, from a generator of
                      the mode's own (benign)

Views and aliases are left alone (they compute nothing). An optimizer step
with nothing to update follows each sample, so sample k is step k + 1 of
the recording.

  python op_sweep_program.py --dtype bfloat16 --variant scale --eps 0.03 [--only 0,3,7] [--list]
--list prints, as JSON, the samples this torch can run in the dtype (run
unrecorded: a sample that raises is left out of recorded runs).
"""
import argparse
import json
import math
import sys

import numpy as np
import torch
import torch.nn.functional as F
from torch.utils._python_dispatch import TorchDispatchMode

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


# Inputs: ("n", shape) normal, ("p", shape) positive (0.5..2), ("u", shape)
# in (0.05, 0.95), ("i", shape, high) int64 in [0, high), ("spd", n) a
# well-conditioned symmetric positive definite matrix; float inputs in the
# sample's dtype.
def n(*s):
    return ("n", s)


def p(*s):
    return ("p", s)


def u(*s):
    return ("u", s)


def i(high, *s):
    return ("i", s, high)


def make(spec, rng, dtype):
    kind, shape = spec[0], spec[1]
    if kind == "i":
        return torch.from_numpy(rng.integers(0, spec[2], size=shape).astype(np.int64))
    if kind == "n":
        a = rng.standard_normal(shape)
    elif kind == "p":
        a = rng.uniform(0.5, 2.0, size=shape)
    elif kind == "u":
        a = rng.uniform(0.05, 0.95, size=shape)
    elif kind == "spd":
        m = rng.standard_normal(shape)
        a = m @ m.T / shape[0] + np.eye(shape[0])
    t = torch.from_numpy(a.astype(np.float32))
    return t if dtype == torch.float32 else t.to(dtype)


# (name, function, inputs, floating-point only in float32). Every op family
# the issue names; shapes small enough that a sample records in milliseconds.
OPS = [
    # elementwise
    ("exp", torch.exp, [n(64, 32)], False),
    ("log", torch.log, [p(64, 32)], False),
    ("sqrt", torch.sqrt, [p(64, 32)], False),
    ("rsqrt", torch.rsqrt, [p(64, 32)], False),
    ("reciprocal", torch.reciprocal, [p(64, 32)], False),
    ("sin", torch.sin, [n(64, 32)], False),
    ("cos", torch.cos, [n(64, 32)], False),
    ("tanh", torch.tanh, [n(64, 32)], False),
    ("sigmoid", torch.sigmoid, [n(64, 32)], False),
    ("erf", torch.erf, [n(64, 32)], False),
    ("gelu", F.gelu, [n(64, 32)], False),
    ("gelu_tanh", lambda x: F.gelu(x, approximate="tanh"), [n(64, 32)], False),
    ("silu", F.silu, [n(64, 32)], False),
    ("softplus", F.softplus, [n(64, 32)], False),
    ("elu", F.elu, [n(64, 32)], False),
    ("leaky_relu", F.leaky_relu, [n(64, 32)], False),
    ("hardswish", F.hardswish, [n(64, 32)], False),
    ("mish", F.mish, [n(64, 32)], False),
    ("pow2", lambda x: torch.pow(x, 2), [n(64, 32)], False),
    ("pow_frac", lambda x: torch.pow(x, 1.5), [p(64, 32)], False),
    ("add", torch.add, [n(64, 32), n(64, 32)], False),
    ("sub", torch.sub, [n(64, 32), n(64, 32)], False),
    ("mul", torch.mul, [n(64, 32), n(64, 32)], False),
    ("div", torch.div, [n(64, 32), p(64, 32)], False),
    ("atan2", torch.atan2, [n(64, 32), n(64, 32)], False),
    ("addcmul", lambda a, b, c: torch.addcmul(a, b, c, value=0.5), [n(64, 32), n(64, 32), n(64, 32)], False),
    ("lerp", lambda a, b: torch.lerp(a, b, 0.3), [n(64, 32), n(64, 32)], False),
    # reductions and scans
    ("sum", lambda x: torch.sum(x, dim=1), [n(64, 128)], False),
    ("mean", lambda x: torch.mean(x, dim=0), [n(64, 128)], False),
    ("norm", lambda x: torch.norm(x, dim=1), [n(64, 128)], False),
    ("var", lambda x: torch.var(x, dim=1), [n(64, 128)], False),
    ("std", lambda x: torch.std(x, dim=0), [n(64, 128)], False),
    ("logsumexp", lambda x: torch.logsumexp(x, dim=1), [n(64, 128)], False),
    ("cumsum", lambda x: torch.cumsum(x, dim=1), [p(16, 64)], False),
    ("prod", lambda x: torch.prod(x, dim=1), [p(64, 8)], False),
    ("softmax", lambda x: torch.softmax(x, dim=-1), [n(64, 128)], False),
    ("log_softmax", lambda x: torch.log_softmax(x, dim=-1), [n(64, 128)], False),
    # matmul family
    ("mm", torch.mm, [n(48, 64), n(64, 40)], False),
    ("bmm", torch.bmm, [n(4, 24, 32), n(4, 32, 16)], False),
    ("addmm", torch.addmm, [n(48, 40), n(48, 64), n(64, 40)], False),
    ("matmul", torch.matmul, [n(2, 24, 32), n(32, 16)], False),
    ("linear", F.linear, [n(32, 64), n(48, 64), n(48)], False),
    ("einsum", lambda a, b: torch.einsum("bij,bjk->bik", a, b), [n(4, 16, 24), n(4, 24, 8)], False),
    ("baddbmm", lambda c, a, b: torch.baddbmm(c, a, b, alpha=0.5), [n(4, 24, 16), n(4, 24, 32), n(4, 32, 16)],
     False),
    # convolutions
    ("conv1d", lambda x, w, b: F.conv1d(x, w, b, padding=1), [n(2, 8, 32), n(16, 8, 3), n(16)], False),
    ("conv2d", lambda x, w, b: F.conv2d(x, w, b, padding=1), [n(2, 4, 12, 12), n(8, 4, 3, 3), n(8)], False),
    ("conv2d_stride", lambda x, w: F.conv2d(x, w, stride=2), [n(2, 8, 13, 13), n(8, 8, 3, 3)], False),
    ("conv_transpose2d", lambda x, w: F.conv_transpose2d(x, w, stride=2), [n(2, 8, 6, 6), n(8, 4, 3, 3)], False),
    # norms
    ("layer_norm", lambda x, w, b: F.layer_norm(x, (64,), w, b), [n(32, 64), n(64), n(64)], False),
    ("group_norm", lambda x, w, b: F.group_norm(x, 4, w, b), [n(4, 16, 8, 8), n(16), n(16)], False),
    ("batch_norm", lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True), [n(8, 16, 6, 6), n(16), n(16)],
     False),
    ("instance_norm", F.instance_norm, [n(4, 8, 10, 10)], False),
    ("normalize", lambda x: F.normalize(x, dim=1), [n(64, 32)], False),
    # pooling and resampling
    ("avg_pool2d", lambda x: F.avg_pool2d(x, 2), [n(2, 8, 16, 16)], False),
    ("max_pool2d", lambda x: F.max_pool2d(x, 2), [n(2, 8, 16, 16)], False),
    ("adaptive_avg_pool2d", lambda x: F.adaptive_avg_pool2d(x, 3), [n(2, 8, 13, 13)], False),
    ("interpolate_bilinear", lambda x: F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=False),
     [n(2, 4, 8, 8)], False),
    # losses
    ("mse_loss", F.mse_loss, [n(64, 32), n(64, 32)], False),
    ("l1_loss", F.l1_loss, [n(64, 32), n(64, 32)], False),
    ("smooth_l1_loss", F.smooth_l1_loss, [n(64, 32), n(64, 32)], False),
    ("cross_entropy", F.cross_entropy, [n(64, 10), i(10, 64)], False),
    ("nll_loss", lambda x, t: F.nll_loss(torch.log_softmax(x, 1), t), [n(64, 10), i(10, 64)], False),
    ("bce_logits", F.binary_cross_entropy_with_logits, [n(64, 8), u(64, 8)], False),
    ("kl_div", lambda a, b: F.kl_div(a, b, reduction="batchmean"), [n(32, 16), u(32, 16)], False),
    # linear algebra (float32 kernels only on the CPU)
    ("inverse", torch.inverse, [("spd", (16, 16))], True),
    ("solve", lambda a, b: torch.linalg.solve(a, b), [("spd", (16, 16)), n(16, 4)], True),
    ("cholesky", torch.linalg.cholesky, [("spd", (16, 16))], True),
    ("det", torch.linalg.det, [("spd", (8, 8))], True),
]

# Each op is sampled this many times, on inputs of its own seed.
SAMPLES_PER_OP = 5


def inputs_of(k, specs, dtype):
    rng = np.random.default_rng(k)
    return [make(s, rng, dtype) for s in specs]


def samples():
    for k in range(len(OPS) * SAMPLES_PER_OP):
        yield k, OPS[k % len(OPS)]


def floating(t):
    return isinstance(t, torch.Tensor) and t.is_floating_point()


def tree_map(fn, value):
    if isinstance(value, (list, tuple)):
        return type(value)(tree_map(fn, v) for v in value)
    return fn(value)


def ulp(x64, digits):
    # One unit in the last place of a format with `digits` significand bits
    # at each value (frexp: |x| in [2^(e-1), 2^e)); no noise on exact zeros.
    _, e = torch.frexp(x64)
    return torch.pow(2.0, (e - digits).to(torch.float64)) * (x64 != 0)


class Kernels(TorchDispatchMode):
    """Changes what every non-view aten op returns (see the module's text)."""

    def __init__(self, variant, eps, seed):
        super().__init__()
        self.variant, self.eps = variant, eps
        self.noise = np.random.default_rng(seed)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        schema = func._schema
        if any(r.alias_info is not None for r in schema.returns) or not schema.returns:
            return func(*args, **kwargs)
        if self.variant == "float64":
            promote = lambda t: t.double() if floating(t) and t.dtype != torch.float64 else t
            out = func(*tree_map(promote, args), **{k: tree_map(promote, v) for k, v in kwargs.items()})
            like = func(*args, **kwargs)  # the dtypes the real kernel returns
            return zip_map(lambda a, b: a.to(b.dtype) if floating(b) else b, out, like)
        out = func(*args, **kwargs)
        return tree_map(self.change, out)

    def change(self, t):
        if not floating(t):
            return t
        x = t.double()
        if self.variant == "scale":
            x = x * (1 + self.eps)
        elif self.variant == "noise":
            digits = torch.finfo(t.dtype).eps
            digits = 1 - int(round(math.log2(digits)))
            steps = torch.from_numpy(self.noise.integers(-2, 3, size=tuple(t.shape)).astype(np.float64))
            x = x + steps * ulp(x, digits)
        return x.to(t.dtype)


def zip_map(fn, a, b):
    if isinstance(b, (list, tuple)):
        return type(b)(zip_map(fn, x, y) for x, y in zip(a, b))
    return fn(a, b)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dtype", choices=DTYPES, default="float32")
    ap.add_argument("--variant", choices=["none", "scale", "float64", "noise"], default="none")
    ap.add_argument("--eps", type=float, default=1e-3)
    ap.add_argument("--only", help="comma-separated sample numbers")
    ap.add_argument("--list", action="store_true")
    args = ap.parse_args()
    dtype = DTYPES[args.dtype]
    torch.set_num_threads(1)
    chosen = None if not args.only else {int(k) for k in args.only.split(",")}
    if args.list:
        ok = []
        for k, (name, fn, specs, fp32_only) in samples():
            if fp32_only and dtype != torch.float32:
                continue
            try:
                fn(*inputs_of(k, specs, dtype))
                ok.append({"sample": k, "op": name})
            except (RuntimeError, NotImplementedError):
                pass
        json.dump(ok, sys.stdout)
        return
    param = torch.zeros(1, requires_grad=True)
    opt = torch.optim.SGD([param], lr=0.0)
    opt.step()  # step 0 ends: sample k is step k + 1
    for k, (name, fn, specs, _) in samples():
        if chosen is not None and k not in chosen:
            opt.step()
            continue
        inputs = inputs_of(k, specs, dtype)
        if args.variant == "none":
            fn(*inputs)
        else:
            with Kernels(args.variant, args.eps, 1000 + k):
                fn(*inputs)
        opt.step()


if __name__ == "__main__":
    main()
