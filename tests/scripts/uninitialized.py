# Memory from torch.empty & co. before and after something writes it
# (tests/e2e/uninitialized_memory_test.cpp).
import torch

torch.manual_seed(0)
w = torch.empty(64)
v = w.detach()                        # a view of the same garbage
torch.nn.init.uniform_(w)             # written: ordinary memory from here on
u = w * 2
e = torch.empty(8)
torch.add(torch.ones(8), 1, out=e)    # written through an out= argument
s = e.sum()
g = torch.empty(16)
t = g.sum()                           # reads garbage: the program's own bug
z = torch.zeros(4) + 1                # empty is called inside zeros: not user memory
print(float(u.sum()), float(s), float(z.sum()))
