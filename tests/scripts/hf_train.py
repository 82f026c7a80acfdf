"""Real model code from Hugging Face transformers, randomly initialised from
a config (no download): a Llama-style decoder or a BERT-style encoder,
trained a few AdamW steps. For the transformers tests (issue 27, item 2).

Options (environment, so the script never changes between runs):
  MODEL           llama (default) or bert
  STEPS           training steps (default 2)
  AUTOCAST        bf16: the forward under torch.autocast("cpu", bfloat16)
  ATTN            the attention implementation (default sdpa; eager)
  THREADS         torch.set_num_threads (default 1)
  WRONG_GELU_LIB  a library to load with torch.ops.load_library first: the
                  CPU's wrong gelu kernels of tests/compare/wrong_kernel
                  (BERT's feed-forward uses gelu)
Prints one line per step: "step N loss X".
"""
import os
import sys

import torch


def build(kind, attn):
    import transformers
    if kind == "llama":
        config = transformers.LlamaConfig(
            vocab_size=96, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
            num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
            attn_implementation=attn)
        return transformers.LlamaForCausalLM(config)
    if kind == "bert":
        config = transformers.BertConfig(
            vocab_size=96, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
            num_attention_heads=4, max_position_embeddings=64, hidden_dropout_prob=0.0,
            attention_probs_dropout_prob=0.0, attn_implementation=attn)
        return transformers.BertForMaskedLM(config)
    raise SystemExit(f"hf_train: MODEL must be llama or bert (got {kind!r})")


def main():
    kind = os.environ.get("MODEL", "llama")
    steps = int(os.environ.get("STEPS", "2"))
    autocast = os.environ.get("AUTOCAST", "")
    if autocast not in ("", "bf16"):
        raise SystemExit(f"hf_train: AUTOCAST must be bf16 or unset (got {autocast!r})")
    if os.environ.get("WRONG_GELU_LIB"):
        torch.ops.load_library(os.environ["WRONG_GELU_LIB"])
    torch.set_num_threads(int(os.environ.get("THREADS", "1")))
    torch.manual_seed(0)
    model = build(kind, os.environ.get("ATTN", "sdpa"))
    model.train()
    tokens = torch.randint(0, 96, (2, 16))
    labels = tokens.clone()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    for step in range(steps):
        optimizer.zero_grad()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast == "bf16"):
            loss = model(input_ids=tokens, labels=labels).loss
        loss.backward()
        optimizer.step()
        print(f"step {step} loss {loss.item():.17g}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
