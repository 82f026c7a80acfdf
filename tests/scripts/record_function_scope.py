# A record_function() scope, as torch's optimizers open around zero_grad
# and step. On torch 1.13 its handle is an aten::empty run inside the
# profiler's own op: no op of the program, and never written by one.
import torch

x = torch.ones(4)
with torch.autograd.profiler.record_function("scope"):
    y = x * 2
z = y + 1
print(float(z.sum()))
