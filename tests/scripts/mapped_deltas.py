"""Ops whose level-2 outputs acc records as mapped deltas (format v9) and
ops it must not map, for tests/e2e/content_store_test.cpp: a recording
with deltas must read back as the values a recording without them holds,
and the manifest's contents.mapped_deltas counts the mapped ones
(MAPPED below).
"""
import torch

torch.manual_seed(0)
x = torch.rand(4096) + 0.5
y = x.sqrt()                                  # mapped: sqrt of its input
z = y / 3.0                                   # mapped: division by a number
w = z * 0.25                                  # mapped: product with a number
v = torch.div(w, 2.0, rounding_mode="floor")  # not a division: not mapped
x.mul_(0.9)                                   # mapped: in place, by a number
x.add_(1e-3)                                  # mapped: in place, alpha 1
n = torch.randn(4096).sqrt()                  # mapped: NaNs made by the op
d = torch.rand(4096, dtype=torch.float64)
d.mul_(0.5)                                   # mapped: float64
i = torch.arange(4096)
i.mul_(3)                                     # integers: not mapped
b = torch.randn(4096, dtype=torch.bfloat16)
b.mul_(0.9)                                   # bfloat16: not mapped
# Subnormals flushed by the program's kernel, not by acc's arithmetic: the
# XOR is not zero there, and the values still read back.
s = torch.randn(4096)
s[:100] = 1e-39
flushes = torch.set_flush_denormal(True)
s.mul_(0.5)                                   # mapped
torch.set_flush_denormal(False)
MAPPED = 8
print(f"mapped {MAPPED} flushes {flushes} sum {float(v.sum() + z.sum() + x.sum() + d.sum() + i.sum() + s.sum())}")
