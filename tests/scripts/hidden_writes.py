"""Writes to tensors that the autograd version counter does and does not see,
each followed by a read (torch.neg) whose input acc records.

For the content store's tests (tests/e2e/content_store_test.cpp): a
recording that deduplicates contents must hold exactly what one that does
not holds. With SAVE_DIR set, the script saves the bytes every torch.neg
read, in order, as SAVE_DIR/read_{k}.bin.
"""
import ctypes
import os

import torch

reads = 0


def read(t):
    """torch.neg(t), and t's bytes (row-major) saved as what the program read."""
    global reads
    torch.neg(t)
    save_dir = os.environ.get("SAVE_DIR")
    if save_dir:
        with open(os.path.join(save_dir, f"read_{reads}.bin"), "wb") as f:
            f.write(t.detach().contiguous().numpy().tobytes())
    reads += 1


def main():
    torch.manual_seed(0)
    # An in-place chain: each op's output is the next one's input.
    y = torch.randn(64, 32) * 2
    read(y)
    y.mul_(3)
    read(y)
    y.add_(1).div_(7)
    read(y)
    read(y)
    # Views share the version counter with their base.
    v = y[2:10]
    v.add_(5)
    read(y)
    read(v)
    y.t().mul_(0.5)
    read(v)
    # .data: an alias with its own version counter, written by an op.
    p = torch.randn(256, requires_grad=True)
    read(p)
    p.data.mul_(2)
    read(p)
    # .data written where no op sees it (numpy).
    q = torch.randn(256, requires_grad=True)
    read(q)
    q.data.numpy()[:] = 7.0
    read(q)
    # set_: a tensor moves onto another tensor's storage, which its owner
    # then writes.
    a = torch.randn(128)
    b = torch.randn(128)
    read(a)
    a.set_(b)
    read(a)
    b.add_(1)
    read(a)
    # An extension writing through data_ptr: no version bump at all.
    e = torch.randn(1000)
    read(e)
    ctypes.memset(e.data_ptr(), 0, e.numel() * e.element_size())
    read(e)
    f = torch.randn(1000)
    read(f)
    half = torch.arange(500, dtype=torch.float32)  # alive while it is copied
    ctypes.memmove(f.data_ptr(), half.data_ptr(), half.numel() * half.element_size())
    read(f)
    print(f"reads {reads}")


if __name__ == "__main__":
    main()
