"""Runs a few CPU ops on tensors of every dtype `acc-analyzer export` handles
(bool, integers, float16, bfloat16, float64, complex), for the export tests."""
import sys

import torch


def main():
    torch.manual_seed(0)
    x = torch.randn(3, 4)
    x.to(torch.float16).abs()
    x.to(torch.bfloat16).neg()
    x.to(torch.float64).exp()
    torch.complex(x, -x).conj_physical()
    (x > 0).logical_not()
    x.to(torch.int8).sign()
    x.mul(100).to(torch.int16).abs()
    x.mul(100).to(torch.int32).abs()
    torch.arange(6, dtype=torch.int64).reshape(2, 3).flip(0)
    torch.arange(5, dtype=torch.uint8).neg()
    torch.tensor(2.5).neg()
    return 0


if __name__ == "__main__":
    sys.exit(main())
