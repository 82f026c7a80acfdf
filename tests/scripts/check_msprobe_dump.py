"""Checks an msprobe dump as msprobe's compare reads it: every tensor file
loads with torch.load(weights_only=True) as the tensor its dump.json leaf
describes (dtype, shape, Max and Min). With a second dump, also that both
hold the same entries, tensors (bit for bit) and statistics.

  check_msprobe_dump.py DUMP [SAME_AS]

Prints "checked N tensor files" and exits 0, or prints each problem and
exits 1.
"""
import glob
import json
import math
import os
import sys

import torch


def leaves(value, found):
    if isinstance(value, dict) and isinstance(value.get("type"), str) and "dtype" in value:
        found.append(value)
    elif isinstance(value, dict):
        for v in value.values():
            leaves(v, found)
    elif isinstance(value, list):
        for v in value:
            leaves(v, found)


def load(path):
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except TypeError:  # a torch without weights_only
        return torch.load(path, map_location="cpu")


def same(a, b):
    return a == b or (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b))


def main():
    dump = sys.argv[1]
    other = sys.argv[2] if len(sys.argv) > 2 else None
    problems, files = [], 0
    leaf_dirs = sorted(os.path.dirname(p) for p in glob.glob(os.path.join(dump, "step*", "*", "dump.json")))
    if not leaf_dirs:
        problems.append(f"{dump}: no step*/*/dump.json")
    for leaf_dir in leaf_dirs:
        with open(os.path.join(leaf_dir, "dump.json")) as f:
            data = json.load(f)
        for key in ("task", "level", "framework", "dump_data_dir", "data"):
            if key not in data:
                problems.append(f"{leaf_dir}/dump.json lacks {key}")
        found = []
        leaves(data["data"], found)
        for leaf in found:
            if "data_name" not in leaf:
                continue
            path = os.path.join(leaf_dir, "dump_tensor_data", leaf["data_name"])
            t = load(path)
            files += 1
            if str(t.dtype) != leaf["dtype"] or list(t.shape) != leaf["shape"]:
                problems.append(f"{path}: {t.dtype} {list(t.shape)}, dump.json says {leaf['dtype']} {leaf['shape']}")
            elif t.numel() and t.is_floating_point() and leaf.get("Max") is not None and not torch.isnan(t).any():
                if t.max().item() != leaf["Max"] or t.min().item() != leaf["Min"]:
                    problems.append(f"{path}: max {t.max().item()} min {t.min().item()}, "
                                    f"dump.json says {leaf['Max']} {leaf['Min']}")
        if other:
            rel = os.path.relpath(leaf_dir, dump)
            step = rel.split(os.sep)[0]
            twins = glob.glob(os.path.join(other, step, "*", "dump.json"))
            if len(twins) != 1:
                problems.append(f"{other}/{step}: {len(twins)} dump.json files")
                continue
            with open(twins[0]) as f:
                theirs = json.load(f)
            if list(data["data"]) != list(theirs["data"]):
                problems.append(f"{rel}: entries differ: {set(data['data']) ^ set(theirs['data'])}")
                continue
            for key in data["data"]:
                a, b = [], []
                leaves(data["data"][key], a)
                leaves(theirs["data"][key], b)
                if len(a) != len(b):
                    problems.append(f"{rel} {key}: {len(a)} tensors, {len(b)} in {other}")
                    continue
                for x, y in zip(a, b):
                    for field in ("dtype", "shape", "Max", "Min", "Mean", "Norm", "data_name"):
                        if not same(x.get(field), y.get(field)):
                            problems.append(f"{rel} {key} {field}: {x.get(field)} vs {y.get(field)}")
                    if "data_name" in x and "data_name" in y:
                        tx = load(os.path.join(leaf_dir, "dump_tensor_data", x["data_name"]))
                        ty = load(os.path.join(os.path.dirname(twins[0]), "dump_tensor_data", y["data_name"]))
                        if tx.dtype != ty.dtype or not torch.equal(tx, ty):
                            problems.append(f"{rel} {x['data_name']}: tensors differ")
    for p in problems[:20]:
        print(p)
    print(f"checked {files} tensor files")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
