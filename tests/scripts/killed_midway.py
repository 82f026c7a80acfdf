"""Trains the MLP, then kills itself with SIGKILL in the middle of training
(after step KILL_AFTER), as an out-of-memory killer or a scheduler would."""
import os
import signal
import time

import torch

kill_after = int(os.environ.get("KILL_AFTER", "5"))
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
x, target = torch.randn(5, 8), torch.randn(5, 4)
for step in range(1000):
    optimizer.zero_grad()
    loss = torch.nn.functional.mse_loss(model(x), target)
    loss.backward()
    optimizer.step()
    print(f"step {step}", flush=True)
    if step == kill_after:
        time.sleep(0.5)  # the writer flushes complete frames meanwhile
        torch.relu(x)    # an op in flight in the next frame
        os.kill(os.getpid(), signal.SIGKILL)
