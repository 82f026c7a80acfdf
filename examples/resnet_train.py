"""torchvision resnet18 trained for a few SGD steps on random images.

The weights are randomly initialised (no download) and the data is
generated, so the script runs offline. Prints one loss per step.

Options (environment):
  RESNET_STEPS   training steps (default 2)
  RESNET_BATCH   batch size (default 4)
  RESNET_SIZE    image side in pixels (default 64)
  RESNET_OPTIM   sgd (default, with momentum) or adamw (one op per
                 parameter: foreach=False)
"""
import os
import sys
import time

import torch
import torchvision


def main():
    steps = int(os.environ.get("RESNET_STEPS", "2"))
    batch = int(os.environ.get("RESNET_BATCH", "4"))
    size = int(os.environ.get("RESNET_SIZE", "64"))
    torch.manual_seed(0)
    model = torchvision.models.resnet18(num_classes=10)
    if os.environ.get("RESNET_OPTIM", "sgd") == "adamw":
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, foreach=False)
    else:
        optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    images = torch.randn(batch, 3, size, size)
    labels = torch.randint(0, 10, (batch,))
    for step in range(steps):
        start = time.perf_counter()
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(images), labels)
        loss.backward()
        optimizer.step()
        elapsed = time.perf_counter() - start
        print(f"step {step} loss {loss.item():.17g} time {elapsed:.4f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
