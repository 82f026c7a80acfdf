"""A small transformer language model with dropout, trained for a few SGD
steps: the random-op tests' model (ACC_RANDOM).

Dropout sits on the attention weights, after attention and after the
feed-forward block (Linear -> GELU -> Linear). Attention is written out
(scores, mask, softmax, dropout) so that every torch version draws with
plain dropout ops, not inside a fused attention kernel.

Options (environment, so the script never changes between runs):
  DROPOUT_SEED  seed of the generator the training steps draw from (default
                0); the model and data are always made from seed 0, so two
                runs with different seeds differ in their dropout masks only
  STEPS         training steps (default 2)
  BATCH         sequences per batch (default 4)
  DEVICE        cpu (default), or testdev: the test accelerator, loaded from
                TESTDEV_LIB, whose dropout draws from a generator of its own
  WRONG_GELU_LIB  a library to load with torch.ops.load_library first: the
                CPU's wrong gelu kernels of tests/compare/wrong_kernel
Prints one line per step: "step N loss X".
"""
import math
import os
import sys

import torch

from engine_backward import engine_backward

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "accelerator"))

VOCAB, WIDTH, HEADS, SEQ = 64, 32, 2, 16


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.norm1 = torch.nn.LayerNorm(WIDTH)
        self.qkv = torch.nn.Linear(WIDTH, 3 * WIDTH)
        self.proj = torch.nn.Linear(WIDTH, WIDTH)
        self.attn_drop = torch.nn.Dropout(0.1)
        self.resid_drop = torch.nn.Dropout(0.1)
        self.norm2 = torch.nn.LayerNorm(WIDTH)
        self.ff = torch.nn.Sequential(
            torch.nn.Linear(WIDTH, 2 * WIDTH),
            torch.nn.GELU(),
            torch.nn.Linear(2 * WIDTH, WIDTH),
            torch.nn.Dropout(0.1),
        )

    def forward(self, x, mask):
        b, t, _ = x.shape
        q, k, v = self.qkv(self.norm1(x)).split(WIDTH, dim=-1)
        q, k, v = (y.reshape(b, t, HEADS, WIDTH // HEADS).transpose(1, 2) for y in (q, k, v))
        scores = q @ k.transpose(-2, -1) / math.sqrt(WIDTH // HEADS) + mask
        weights = self.attn_drop(torch.softmax(scores, dim=-1))
        attended = (weights @ v).transpose(1, 2).reshape(b, t, WIDTH)
        x = x + self.resid_drop(self.proj(attended))
        return x + self.ff(self.norm2(x))


def main():
    steps = int(os.environ.get("STEPS", "2"))
    seed = int(os.environ.get("DROPOUT_SEED", "0"))
    batch = int(os.environ.get("BATCH", "4"))
    device = os.environ.get("DEVICE", "cpu")
    if os.environ.get("WRONG_GELU_LIB"):
        torch.ops.load_library(os.environ["WRONG_GELU_LIB"])
    if device == "testdev":
        import testdev
        device = testdev.load(os.environ["TESTDEV_LIB"])
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = torch.nn.ModuleDict({
        "embed": torch.nn.Embedding(VOCAB, WIDTH),
        "block": Block(),
        "head": torch.nn.Linear(WIDTH, VOCAB),
    })
    tokens = torch.randint(0, VOCAB, (batch, SEQ + 1))
    mask = torch.triu(torch.full((SEQ, SEQ), -1e9), diagonal=1)
    # Cross entropy against one-hot targets: nll_loss has no kernel on the
    # test accelerator of torch 1.13.
    targets = torch.nn.functional.one_hot(tokens[:, 1:], VOCAB).float()
    model.to(device)
    tokens, mask, targets = tokens.to(device), mask.to(device), targets.to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    torch.manual_seed(seed)
    for step in range(steps):
        optimizer.zero_grad()
        hidden = model["block"](model["embed"](tokens[:, :-1]), mask)
        logits = model["head"](hidden)
        loss = -(torch.log_softmax(logits, dim=-1) * targets).sum(-1).mean()
        engine_backward(loss)  # loss.backward(), see engine_backward.py
        optimizer.step()
        print(f"step {step} loss {loss.item():.17g}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
