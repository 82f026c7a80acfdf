"""Loads every file an `acc-analyzer export` listed, with numpy.

usage: check_npy.py OUT

Checks each file's dtype and shape against OUT/index.json and prints one JSON
object: {file: {"dtype": str, "shape": [...], "crc32": crc of the C-order
bytes}}. Exits 1 on a mismatch or a file numpy cannot load.
"""
import json
import os
import sys
import zlib

import numpy as np


def main():
    out = sys.argv[1]
    with open(os.path.join(out, "index.json")) as f:
        index = json.load(f)
    result, errors = {}, []
    for entry in index["files"]:
        try:
            a = np.load(os.path.join(out, entry["file"]), allow_pickle=False)
        except Exception as e:  # noqa: BLE001 - report any load failure
            errors.append(f"{entry['file']}: {e}")
            continue
        if a.dtype != np.dtype(entry["npy_dtype"]):
            errors.append(f"{entry['file']}: dtype {a.dtype} != {entry['npy_dtype']}")
        if list(a.shape) != entry["shape"]:
            errors.append(f"{entry['file']}: shape {list(a.shape)} != {entry['shape']}")
        result[entry["file"]] = {"dtype": str(a.dtype), "shape": list(a.shape),
                                 "crc32": zlib.crc32(np.ascontiguousarray(a).tobytes())}
    if errors:
        print("\n".join(errors), file=sys.stderr)
        return 1
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
