import torch
torch.manual_seed(0)
x = torch.randn(4, 3, requires_grad=True)
y = torch.nn.functional.gelu(x) * 2
y.sum().backward()
