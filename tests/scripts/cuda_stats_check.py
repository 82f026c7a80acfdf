"""acc's CUDA statistics kernel against its CPU pass, on a GPU.

Run under LD_PRELOAD=libacc.so (which defines acc::tensor_stats) by
scripts/check-cuda.sh: every element type, strided, expanded, empty and
complex tensors, tensors of many blocks and batches of thousands of tensors
must give, on the GPU, what the CPU kernel gives for the same values: the
same NaN and Inf counts, checksum, min and max, and sums within float64
rounding. Prints one line per case, and the kernel's time against ATen's
reductions (acc's fallback) on a large tensor. Exits 1 on a mismatch.
"""
import struct
import sys
import time

import torch

op = torch.ops.acc.tensor_stats
failures = 0


def rows(tensors):
    return op(tensors).cpu()


def counts(row):
    return struct.unpack("<3Q", struct.pack("<3d", *row[4:7].tolist()))


def check(name, tensors):
    global failures
    want = rows([t.cpu() for t in tensors])
    got = rows(tensors)
    bad = []
    for i in range(len(tensors)):
        w, g = want[i].tolist(), got[i].tolist()
        if counts(want[i]) != counts(got[i]):
            bad.append(f"{i}: counts/checksum {counts(want[i])} vs {counts(got[i])}")
        for k in (0, 1):
            if not (w[k] == g[k] or (w[k] != w[k] and g[k] != g[k])):
                bad.append(f"{i}: {'min' if k == 0 else 'max'} {w[k]} vs {g[k]}")
        scale = max(1.0, abs(w[3]))
        for k in (2, 3):
            if w[k] != w[k] or abs(w[k]) == float("inf"):
                if not (w[k] == g[k] or (w[k] != w[k] and g[k] != g[k])):
                    bad.append(f"{i}: value {k} {w[k]} vs {g[k]}")
            elif abs(w[k] - g[k]) > 1e-9 * scale:
                bad.append(f"{i}: value {k} {w[k]} vs {g[k]}")
    print(f"{'ok  ' if not bad else 'FAIL'} {name}: {len(tensors)} tensors")
    for b in bad[:5]:
        print("     ", b)
    failures += bool(bad)


torch.manual_seed(0)
dev = "cuda"
types = [torch.float32, torch.float64, torch.float16, torch.bfloat16]
ints = [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64]
special = []
for t in types:
    x = torch.randn(5000, device=dev, dtype=t) * 4
    x[7], x[8], x[9] = float("nan"), float("inf"), float("-inf")
    special.append(x)
check("floating types with NaN and Inf", special)
check("floating types", [torch.randn(333, 17, device=dev, dtype=t) for t in types])
check("bool and integer types", [torch.rand(999, device=dev) > 0.5] +
      [torch.randint(-100, 100, (777,), device=dev).to(t) for t in ints] +
      [torch.randint(-2**62, 2**62, (300,), device=dev)])
base = torch.randn(40, 30, 6, device=dev)
check("strided, expanded, permuted, empty, complex", [
    base.transpose(0, 1), base.permute(2, 0, 1), base.narrow(1, 3, 20), base.select(2, 4),
    torch.randn(50, 1, device=dev).expand(50, 40), torch.randn(0, 4, device=dev), torch.tensor(2.5, device=dev),
    torch.randn(20, 3, device=dev, dtype=torch.complex64), torch.randn(2, 2, 2, 2, 2, 2, 2, device=dev).permute(6, 5, 4, 3, 2, 1, 0)])
check("many blocks", [torch.randn(50_000_000, device=dev), torch.randn(3000, 7001, device=dev, dtype=torch.bfloat16).t(),
                      torch.randn(10_000_019, device=dev, dtype=torch.float16)])
check("a batch of 4,000 tensors", [torch.randn(int(n), device=dev) for n in torch.randint(1, 70_000, (4000,))])


def timed(fn, repeats=20):
    fn()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(repeats):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - start) / repeats


big = torch.randn(256 * 1024 * 1024 // 4, device=dev)  # 256 MiB
bf = torch.randn(128 * 1024 * 1024, device=dev, dtype=torch.bfloat16)
for name, x in (("float32 256 MiB", big), ("bfloat16 256 MiB", bf)):
    t_kernel = timed(lambda: op([x]))
    t_copy = timed(lambda: x.clone())
    print(f"time {name}: acc kernel {t_kernel * 1e3:.3f} ms ({x.nbytes / t_kernel / 1e9:.0f} GB/s read), "
          f"a clone {t_copy * 1e3:.3f} ms")
small = [torch.randn(4096, device=dev) for _ in range(1000)]
t_many = timed(lambda: op(small))
print(f"time 1,000 tensors of 4,096: {t_many * 1e6:.0f} us per batch")
sys.exit(1 if failures else 0)
