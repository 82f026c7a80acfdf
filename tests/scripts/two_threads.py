"""Two threads handing tensors to each other every training step: the main
thread trains, a second thread computes two tensors from the main thread's
output and hands them back; the main thread uses the first at once and the
second one step later (a content only the other thread defined). At
the end the second thread records three more ops and waits, alive, while
the program ends. What recorder/write/record_batch.h must get right: a
thread's batch may refer to its own contents, other threads only to queued
ones; every thread's batch is handed over at each step's end and at exit."""
import os
import queue
import threading

import torch

torch.manual_seed(0)
torch.set_num_threads(1)
steps = int(os.environ.get("STEPS", "6"))
model = torch.nn.Linear(16, 16)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
to_side, from_side = queue.Queue(), queue.Queue()
parked, end = threading.Event(), threading.Event()


def side():
    while True:
        x = to_side.get()
        if x is None:
            break
        from_side.put((x.cos() + 1, x.sin()))
    y = torch.full((4,), 0.5).sin()
    y = y.exp()
    parked.set()
    end.wait()


threading.Thread(target=side, daemon=True).start()
before = torch.zeros(8, 16)
for step in range(steps):
    out = model(torch.randn(8, 16))
    to_side.put(out.detach())
    back, extra = from_side.get()
    loss = (out * back + before).sum()
    opt.zero_grad()
    loss.backward()
    opt.step()
    before = extra
    print(f"step {step} loss {loss.item():.6f}")
to_side.put(None)
parked.wait()
