"""A GPT-2-shaped decoder (pre-norm blocks, causal self-attention, GELU
feed-forward, tied embeddings) trained a few AdamW steps on random tokens,
by default the size of GPT-2 small under bf16 autocast: the real-GPU
benchmark's second workload (bench/overhead.py --script
tests/scripts/decoder_train.py --device cuda).

Environment: DEVICE (cuda; cpu; testdev, the test accelerator of
TESTDEV_LIB, which prints its counters as device_train.py does), STEPS (4), DECODER_LAYERS (12),
DECODER_WIDTH (768), DECODER_HEADS (12), DECODER_SEQ (1024), DECODER_BATCH
(8), DECODER_VOCAB (50257), AUTOCAST (bf16, default; none: float32),
COUNT_KERNELS=1 (as in device_train.py). Offline. Prints one line per step
with the loss and its seconds, then, on CUDA, "counters {json}" as
device_train.py does.
"""
import contextlib
import json
import math
import os
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(HERE, "..", "accelerator")]
from device_train import cuda_counters  # noqa: E402
from engine_backward import engine_backward  # noqa: E402


class Block(torch.nn.Module):
    def __init__(self, width, heads):
        super().__init__()
        self.heads = heads
        self.norm1 = torch.nn.LayerNorm(width)
        self.qkv = torch.nn.Linear(width, 3 * width)
        self.proj = torch.nn.Linear(width, width)
        self.norm2 = torch.nn.LayerNorm(width)
        self.up = torch.nn.Linear(width, 4 * width)
        self.down = torch.nn.Linear(4 * width, width)

    def attention(self, x):
        b, t, c = x.shape
        q, k, v = (y.view(b, t, self.heads, c // self.heads).transpose(1, 2) for y in self.qkv(x).split(c, dim=2))
        if hasattr(torch.nn.functional, "scaled_dot_product_attention"):
            y = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:  # torch 1.13
            scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
            mask = torch.ones(t, t, dtype=torch.bool, device=x.device).triu(1)
            y = scores.masked_fill(mask, float("-inf")).softmax(-1) @ v
        return self.proj(y.transpose(1, 2).reshape(b, t, c))

    def forward(self, x):
        x = x + self.attention(self.norm1(x))
        return x + self.down(torch.nn.functional.gelu(self.up(self.norm2(x)), approximate="tanh"))


class Decoder(torch.nn.Module):
    def __init__(self, layers, width, heads, seq, vocab):
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, width)
        self.position = torch.nn.Embedding(seq, width)
        self.blocks = torch.nn.ModuleList(Block(width, heads) for _ in range(layers))
        self.norm = torch.nn.LayerNorm(width)
        for embedding in (self.embed, self.position):
            torch.nn.init.normal_(embedding.weight, std=0.02)  # GPT-2's

    def forward(self, tokens):
        positions = torch.arange(tokens.size(1), device=tokens.device)
        x = self.embed(tokens) + self.position(positions)
        for block in self.blocks:
            x = block(x)
        return self.norm(x) @ self.embed.weight.t()


def main():
    env = os.environ.get
    device = env("DEVICE", "cuda")
    testdev = None
    if device == "testdev":
        import testdev
        device = testdev.load(env("TESTDEV_LIB"))
        torch.set_num_threads(1)
    steps = int(env("STEPS", "4"))
    layers, width, heads = int(env("DECODER_LAYERS", "12")), int(env("DECODER_WIDTH", "768")), int(env("DECODER_HEADS", "12"))
    seq, batch, vocab = int(env("DECODER_SEQ", "1024")), int(env("DECODER_BATCH", "8")), int(env("DECODER_VOCAB", "50257"))
    autocast = env("AUTOCAST", "bf16") == "bf16"
    torch.manual_seed(0)
    model = Decoder(layers, width, heads, seq, vocab).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
    tokens = torch.randint(0, vocab, (batch, seq + 1)).to(device)
    device_type = torch.device(device).type
    with cuda_counters(device):
        for step in range(steps):
            start = time.perf_counter()
            optimizer.zero_grad()
            with torch.autocast(device_type, dtype=torch.bfloat16) if autocast else contextlib.nullcontext():
                logits = model(tokens[:, :-1])
            logits = logits.float().reshape(-1, vocab)
            if testdev is None:
                loss = torch.nn.functional.cross_entropy(logits, tokens[:, 1:].reshape(-1))
            else:  # cross_entropy fails on the test accelerator (torch 1.13): the same loss from its parts
                loss = -logits.log_softmax(-1).gather(1, tokens[:, 1:].reshape(-1, 1)).mean()
            engine_backward(loss)  # loss.backward(), see engine_backward.py
            optimizer.step()
            value = loss.item()  # waits for the device: the step is done
            print(f"step {step} loss {value:.17g} time {time.perf_counter() - start:.6f}", flush=True)
    if testdev is not None:
        print("counters " + json.dumps(testdev.counters()), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
