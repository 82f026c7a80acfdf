"""A finite half or bfloat16 value multiplied past its type's largest: the
product overflows to infinity (ACC_WATCH's tests, tests/watch).

Options (environment): DTYPE float16 (default) or bfloat16.
"""
import os
import sys

import torch


def main():
    dtype = getattr(torch, os.environ.get("DTYPE", "float16"))
    x = torch.full((8,), torch.finfo(dtype).max / 2, dtype=dtype)
    y = x * 4
    print(f"infinities {int(y.isinf().sum())}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
