"""Trains the MLP, then sends itself a signal in the middle of training
(after step KILL_AFTER), as an out-of-memory killer, a scheduler or Ctrl-C
would. KILL_SIGNAL: KILL (default), TERM or INT. HANDLER: none (default),
"early" (a handler set before torch is imported, so before acc's) or "late"
(after): the handler prints a line and stops the training loop."""
import os
import signal
import sys
import time

sig = getattr(signal, "SIG" + os.environ.get("KILL_SIGNAL", "KILL"))
handler = os.environ.get("HANDLER", "none")
stopped = []


def on_signal(number, frame):
    print(f"handled signal {number}", flush=True)
    stopped.append(number)


if handler == "early":
    signal.signal(sig, on_signal)

import torch  # noqa: E402

if handler == "late":
    signal.signal(sig, on_signal)

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
    if stopped:
        print(f"stopped after step {step}", flush=True)
        sys.exit(0)
    if step == kill_after:
        time.sleep(0.5)  # the writer flushes complete frames meanwhile
        torch.relu(x)    # an op in flight in the next frame
        os.kill(os.getpid(), sig)
