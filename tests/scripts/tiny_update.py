"""A parameter and a moment updated in place twice, as an optimizer does: at
level 2 their outputs are recorded as deltas (format v8). The fuzzers' seed
fuzz/corpus/fuzz_records/level2_deltas.acc is its recording."""
import torch
torch.manual_seed(0)
w = torch.randn(16)
m = torch.zeros(16)
for _ in range(2):
    g = torch.randn(16) * 1e-2
    m.mul_(0.9).add_(g, alpha=0.1)
    w.mul_(1 - 1e-4).add_(m, alpha=-1e-3)
