"""A small transformer language model trained with AdamW on random tokens.

Many small ops per step (attention, layer norms, and AdamW's per-parameter
update chain): the workload where acc's per-op cost shows, beside
resnet_train.py's few large convolutions. Offline; prints one loss per step
with its time.

Options (environment):
  LM_STEPS    training steps (default 2)
  LM_BATCH    sequences per batch (default 4)
  LM_SEQ      tokens per sequence (default 32)
  LM_LAYERS   encoder layers (default 2)
  LM_WIDTH    model width (default 64; 4 heads, feed-forward 2x; 256 tokens)
"""
import os
import sys
import time

import torch


def main():
    steps = int(os.environ.get("LM_STEPS", "2"))
    batch = int(os.environ.get("LM_BATCH", "4"))
    seq = int(os.environ.get("LM_SEQ", "32"))
    layers = int(os.environ.get("LM_LAYERS", "2"))
    width = int(os.environ.get("LM_WIDTH", "64"))
    vocab = 256
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(width, nhead=4, dim_feedforward=2 * width, dropout=0.0,
                                             batch_first=True)
    model = torch.nn.ModuleDict({
        "embed": torch.nn.Embedding(vocab, width),
        "encoder": torch.nn.TransformerEncoder(layer, layers),
        "head": torch.nn.Linear(width, vocab),
    })
    # foreach=False: one op per parameter on every torch version, as AdamW
    # runs where its fused forms are not available.
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, foreach=False)
    tokens = torch.randint(0, vocab, (batch, seq + 1))
    causal = torch.triu(torch.full((seq, seq), float("-inf")), diagonal=1)
    for step in range(steps):
        start = time.perf_counter()
        optimizer.zero_grad()
        hidden = model["encoder"](model["embed"](tokens[:, :-1]), mask=causal)
        logits = model["head"](hidden)
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, vocab), tokens[:, 1:].reshape(-1))
        loss.backward()
        optimizer.step()
        elapsed = time.perf_counter() - start
        print(f"step {step} loss {loss.item():.17g} time {elapsed:.4f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
