"""A torchvision classifier trained a few AdamW steps on random images: the
benign pairs of the verdict tests (thread counts, NCHW vs NHWC, fp32 vs
bf16 autocast) record it twice with one setting changed.

  python vision_train.py [MODEL]   (resnet18, mobilenet_v2, densenet121, ...;
                                   default: VISION_MODEL, else resnet18)

Environment: VISION_STEPS (2), VISION_BATCH (4), VISION_SIZE (64),
VISION_THREADS (intra-op threads; torch's default when unset),
VISION_CHANNELS_LAST=1 (model and images in channels_last),
VISION_AUTOCAST=bf16 (forward under CPU bfloat16 autocast),
VISION_DTYPE=bfloat16 (model and images in bfloat16: pure bf16 training),
WRONG_OPS=op:eps,... (those aten ops made wrong: tests/scripts/wrong_ops.py).
Weights are randomly initialised (no download). Prints one loss per step.
"""
import os
import sys

import torch
import torchvision

import wrong_ops


def main():
    name = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("VISION_MODEL", "resnet18")
    steps = int(os.environ.get("VISION_STEPS", "2"))
    batch = int(os.environ.get("VISION_BATCH", "4"))
    size = int(os.environ.get("VISION_SIZE", "64"))
    if os.environ.get("VISION_THREADS"):
        torch.set_num_threads(int(os.environ["VISION_THREADS"]))
    torch.manual_seed(0)
    kwargs = {"num_classes": 10}
    if name.startswith("inception") or name.startswith("googlenet"):
        kwargs.update(aux_logits=False, init_weights=True)
    model = getattr(torchvision.models, name)(**kwargs)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, foreach=False)
    images = torch.randn(batch, 3, size, size)
    labels = torch.randint(0, 10, (batch,))
    if os.environ.get("VISION_DTYPE") == "bfloat16":
        model = model.to(torch.bfloat16)
        images = images.to(torch.bfloat16)
    if os.environ.get("VISION_CHANNELS_LAST") == "1":
        model = model.to(memory_format=torch.channels_last)
        images = images.contiguous(memory_format=torch.channels_last)
    autocast = os.environ.get("VISION_AUTOCAST") == "bf16"
    with wrong_ops.from_environment():
        for step in range(steps):
            optimizer.zero_grad()
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
                logits = model(images)
            loss = torch.nn.functional.cross_entropy(logits.float(), labels)
            loss.backward()
            optimizer.step()
            print(f"step {step} loss {loss.item():.9g}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
