"""Ops that fill their output with one value (zero_, fill_, ones_like,
zeros), on the CPU, each read by a neg: acc gives a fill's output the
statistics the value implies without reading it (recorder/capture/
tensor_capture.cpp), and neg's input, captured whole under ACC_DEDUP=0, has
those of acc's pass over the same memory. Strided, narrow and integer types
too."""
import torch

torch.manual_seed(0)
a = torch.randn(1000)
a.zero_()
torch.neg(a)
b = torch.randn(37, 3)
b.fill_(0.1)
torch.neg(b)
torch.neg(torch.ones_like(b))
torch.neg(torch.zeros(5, 7, dtype=torch.float64))
torch.neg(torch.empty(300, dtype=torch.bfloat16).fill_(-2.5))
torch.neg(torch.empty(129, dtype=torch.float16).fill_(1e-3))
torch.neg(torch.full((10,), 3, dtype=torch.int32).fill_(7))
g = torch.randn(9, 8).t()
g.fill_(1.5)
torch.neg(g)
print("fills done", flush=True)
