"""Writes tensors with torch.save, as msprobe and users do, for the .pt
reader's tests: DIR/{name}.pt, DIR/{name}.bin (the tensor's row-major bytes)
and DIR/index.json ({name: [dtype, shape]}), for views (transposed, offset
into their storage), every element type acc knows, 0-d and 5-d tensors.

  make_pt_files.py DIR
"""
import json
import os
import sys

import torch


def main():
    out = sys.argv[1]
    torch.manual_seed(0)
    base = torch.randn(6, 5)
    tensors = {
        "float32": torch.randn(3, 4),
        "transposed": base.t(),                 # strides (1, 5)
        "offset_view": base[2:, 1:4],           # a storage offset, row stride 5
        "float64": torch.randn(7, dtype=torch.float64),
        "float16": torch.randn(2, 3).half(),
        "bfloat16": torch.randn(2, 3).bfloat16(),
        "int64": torch.arange(-5, 300000, 70001),  # beyond 16 bits
        "int32": torch.tensor([-(2 ** 31), 2 ** 31 - 1, 7], dtype=torch.int32),
        "int16": torch.tensor([-3, 3], dtype=torch.int16),
        "int8": torch.tensor([-128, 127], dtype=torch.int8),
        "uint8": torch.tensor([0, 255], dtype=torch.uint8),
        "bool": torch.tensor([True, False, True]),
        "complex64": torch.randn(2, dtype=torch.complex64),
        "scalar": torch.tensor(1.5),
        "five_dims": torch.randn(2, 1, 3, 1, 2),
        "empty": torch.zeros(0, 3),
    }
    index = {}
    for name, t in tensors.items():
        torch.save(t, os.path.join(out, name + ".pt"))
        c = t.contiguous()
        raw = (c.view(torch.int16) if c.dtype == torch.bfloat16 else c).numpy().tobytes()
        with open(os.path.join(out, name + ".bin"), "wb") as f:
            f.write(raw)
        index[name] = [str(t.dtype), list(t.shape)]
    with open(os.path.join(out, "index.json"), "w") as f:
        json.dump(index, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
