"""Indexes with a uint8 mask, which torch warns about ("indexing with dtype
torch.uint8 is now deprecated") from its C++ kernel: so does every replay
of that op (the check tests keep such warnings out of check's output)."""
import torch

torch.manual_seed(0)
x = torch.randn(6, 4, requires_grad=True)
mask = torch.tensor([1, 0, 1, 0, 1, 1], dtype=torch.uint8)
y = x[mask] * 2
y.sum().backward()
print(f"grad sum {x.grad.sum().item():.6g}")
