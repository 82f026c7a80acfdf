"""Reference computation of compare's metrics with numpy, from the formulas
in docs/METRICS.md, for tests/compare/numpy_test.cpp.

Usage: numpy_metrics.py INDEX.json  -> prints a JSON list of metrics, one
object per entry of INDEX (id, file0, dtype0, file1, dtype1).
"""
import json
import math
import sys

import numpy as np

DTYPES = {"float16": np.float16, "float32": np.float32, "float64": np.float64,
          "complex64": np.complex64, "complex128": np.complex128,
          "int8": np.int8, "uint8": np.uint8, "int16": np.int16, "int32": np.int32,
          "int64": np.int64, "bool": np.bool_}
# docs/METRICS.md, "Thresholds": the zero guard of the pair's precision.
PRECISION = {"float16": 2, "float32": 3, "complex64": 3, "float64": 4, "complex128": 4}
SMALL = {0: 1.0, 2: 2.0 ** -11, 3: 2.0 ** -14, 4: 2.0 ** -30}


def reals(path, dtype):
    a = np.fromfile(path, dtype=DTYPES[dtype])
    if np.iscomplexobj(a):
        a = a.view(np.float32 if dtype == "complex64" else np.float64)
    return a.astype(np.float64)


def metrics(e):
    b = reals(e["file0"], e["dtype0"])
    t = reals(e["file1"], e["dtype1"])
    p0, p1 = PRECISION.get(e["dtype0"], 0), PRECISION.get(e["dtype1"], 0)
    precision = min(p0, p1) if p0 and p1 else max(p0, p1)
    small = SMALL[precision]
    total = b.size
    nb, nt = np.isnan(b), np.isnan(t)
    ib, it = np.isinf(b), np.isinf(t)
    finite = np.isfinite(b) & np.isfinite(t)
    nan_mismatch = int(np.sum(nb != nt))
    inf_mismatch = int(np.sum(~(nb | nt) & (ib | it) & (b != t)))
    agree = int(np.sum((nb & nt) | (ib & it & (b == t))))
    bf, tf = b[finite], t[finite]
    d = tf - bf
    a = np.abs(d)
    n = bf.size
    out = {"id": e["id"], "nan_mismatch": nan_mismatch, "inf_mismatch": inf_mismatch}
    if n == 0:
        out.update(max_abs=0.0, max_rel=0.0, mean_abs=0.0, rmse=0.0, rel_l2=0.0, cosine=1.0, max_ulp=0.0)
    else:
        rel = a / np.maximum(np.abs(bf), small)
        norm_d, norm_b, norm_t = np.linalg.norm(d), np.linalg.norm(bf), np.linalg.norm(tf)
        if norm_b == 0 and norm_t == 0:
            cosine = 1.0
        elif norm_b == 0 or norm_t == 0:
            cosine = float("nan")
        else:
            cosine = float(np.clip(np.dot(bf, tf) / (norm_b * norm_t), -1, 1))
        # One ULP of DIR1's dtype at the reference value: 2^(e - digits),
        # |x| in [2^(e-1), 2^e), e at least the format's min_exponent.
        kind = np.dtype(DTYPES[e["dtype1"]])
        if kind.kind in "fc":
            info = np.finfo(np.float32 if kind == np.complex64 else np.float64 if kind == np.complex128 else kind)
            digits, emin = info.nmant + 1, info.minexp + 1
            _, exp = np.frexp(np.abs(bf))
            exp = np.where(bf == 0, emin, np.maximum(exp, emin))
            ulp = np.ldexp(1.0, exp - digits)
        else:
            ulp = np.ones_like(bf)
        out.update(max_abs=float(a.max()), max_rel=float(rel.max()), mean_abs=float(a.mean()),
                   rmse=math.sqrt(float(np.mean(d * d))),
                   rel_l2=0.0 if norm_d == 0 else float(norm_d / max(norm_b, small * math.sqrt(n))),
                   cosine=cosine, max_ulp=float(np.max(a / ulp)))
        out["within_1e3"] = (int(np.sum(rel <= 1e-3)) + agree) / total
        out["within_5e3"] = (int(np.sum(rel <= 5e-3)) + agree) / total
    if n == 0:
        out["within_1e3"] = out["within_5e3"] = (agree / total) if total else 1.0
    return out


def main():
    index = json.load(open(sys.argv[1]))
    results = [metrics(e) for e in index]
    # JSON has no NaN: null stands for it (the test reads null as NaN).
    results = [{k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in r.items()} for r in results]
    print(json.dumps(results, allow_nan=False))


if __name__ == "__main__":
    main()
