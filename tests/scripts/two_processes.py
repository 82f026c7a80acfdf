"""A process that imports torch and starts another Python process that
imports torch too, while the first is still recording the same rank."""
import subprocess
import sys

import torch

a = torch.ones(3) + 1
subprocess.run([sys.executable, "-c", "import torch; print((torch.ones(2) * 3).sum().item())"], check=True)
print(a.sum().item())
