"""A small transformer language model (GELU feed-forward) trained a few AdamW
steps on random tokens: the transformer of the verdict tests, in fp32, bf16
autocast or pure bf16.

Environment: LM_STEPS (2), LM_LAYERS (2), LM_WIDTH (64), LM_THREADS (intra-op
threads; torch's default when unset), LM_AUTOCAST=bf16 (forward under CPU
bfloat16 autocast), LM_DTYPE=bfloat16 (weights in bfloat16: pure bf16),
WRONG_OPS=op:eps,... (those aten ops made wrong: tests/scripts/wrong_ops.py).
Offline; prints one loss per step.
"""
import os
import sys

import torch

import wrong_ops


def main():
    steps = int(os.environ.get("LM_STEPS", "2"))
    layers = int(os.environ.get("LM_LAYERS", "2"))
    width = int(os.environ.get("LM_WIDTH", "64"))
    if os.environ.get("LM_THREADS"):
        torch.set_num_threads(int(os.environ["LM_THREADS"]))
    batch, seq, vocab = 4, 32, 256
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(width, nhead=4, dim_feedforward=2 * width, dropout=0.0,
                                             activation="gelu", batch_first=True)
    model = torch.nn.ModuleDict({
        "embed": torch.nn.Embedding(vocab, width),
        "encoder": torch.nn.TransformerEncoder(layer, layers),
        "head": torch.nn.Linear(width, vocab),
    })
    if os.environ.get("LM_DTYPE") == "bfloat16":
        model = model.to(torch.bfloat16)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, foreach=False)
    tokens = torch.randint(0, vocab, (batch, seq + 1))
    autocast = os.environ.get("LM_AUTOCAST") == "bf16"
    with wrong_ops.from_environment():
        for step in range(steps):
            optimizer.zero_grad()
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
                hidden = model["encoder"](model["embed"](tokens[:, :-1]))
                logits = model["head"](hidden)
            loss = torch.nn.functional.cross_entropy(logits.float().reshape(-1, vocab), tokens[:, 1:].reshape(-1))
            loss.backward()
            optimizer.step()
            print(f"step {step} loss {loss.item():.9g}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
