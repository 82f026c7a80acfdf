"""Attention with an additive causal mask of -inf, the way transformers
build one (torch.full(..., -inf), then triu), on the CPU or the test
accelerator: infinities the program means, which ACC_WATCH must not report
(tests/watch). With MASK_ROW=1 one query row is masked whole, and softmax
makes NaN from them: that NaN is a find.

Options (environment): DEVICE cpu (default) or testdev (with TESTDEV_LIB),
STEPS (default 3), MASK_ROW 0 (default) or 1.
"""
import os
import sys

import torch

from engine_backward import engine_backward


def main():
    device = os.environ.get("DEVICE", "cpu")
    if device == "testdev":
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "accelerator"))
        import testdev
        device = testdev.load(os.environ["TESTDEV_LIB"])
    torch.manual_seed(0)
    seq, width = 8, 16
    proj = torch.nn.Linear(width, 3 * width).to(device)
    opt = torch.optim.SGD(proj.parameters(), lr=0.01)
    x = torch.randn(4, seq, width).to(device)
    for step in range(int(os.environ.get("STEPS", "3"))):
        mask = torch.triu(torch.full((seq, seq), float("-inf")), diagonal=1).to(device)
        if os.environ.get("MASK_ROW") == "1" and step == 1:
            mask[2] = float("-inf")
        q, k, v = proj(x).chunk(3, dim=-1)
        scores = q @ k.transpose(-2, -1) / width ** 0.5 + mask
        out = torch.softmax(scores, dim=-1) @ v
        loss = out.pow(2).mean()
        opt.zero_grad()
        engine_backward(loss)  # loss.backward(), see engine_backward.py
        opt.step()
        print(f"step {step} loss {loss.item():.17g}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
