#!/usr/bin/env python3
"""Re-runs one recorded op on its recorded inputs: acc's reproduction of a
kernel's error, written by `acc-analyzer repro DIR NAME -o OUT`.

    python3 repro.py [--device DEVICE] [--setup FILE.py] [--json]

op.json names the op (its schema's name and overload) and its arguments;
inputs/ holds the recorded input tensors, recorded/ the outputs the recorded
run produced (.npy files; bfloat16 is stored as float32, which holds it
exactly). The op runs once in float64 on the CPU (floating inputs promoted),
once in the recorded dtypes on the CPU and once on DEVICE (default cpu), and
each produced tensor's relative L2 error against the float64 run is printed
for the recorded run, the CPU and DEVICE. A backward record runs as its
forward op followed by autograd, fed the recorded incoming gradients.

--setup runs a Python file first: load a device plugin there (import
torch_npu, torch.ops.load_library(...)). Needs torch and numpy only.
"""
import argparse
import json
import os
import re
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))

def load_tensor(entry, device, promote):
    t = torch.from_numpy(np.load(os.path.join(HERE, entry["file"]))).to(getattr(torch, entry["dtype"]))
    if promote and t.is_floating_point():
        t = t.double()
    elif promote and t.is_complex():
        t = t.to(torch.complex128)
    return t.to(device)


def scalar(text, type_name, device):
    """A non-tensor argument from its recorded text, as the schema types it
    (Python's names: "float", "List[int]", "Optional[Device]", "number";
    dtypes, layouts and memory formats are ints, as recorded)."""
    if text == "None":
        return None
    t = type_name
    while t.startswith("Optional[") and t.endswith("]"):
        t = t[len("Optional["):-1]
    if t == "float":
        return float(text)
    if t == "bool":
        return text == "True"
    if t == "str":
        return text[1:-1] if text.startswith('"') else text
    if t == "Device":
        return torch.device(device)
    if t.startswith("List["):
        element = t[len("List["):-1]
        items = [i.strip() for i in text.strip("[]").split(",") if i.strip()]
        if element == "float":
            return [float(i) for i in items]
        if element == "bool":
            return [i == "True" for i in items]
        if "Tensor" in element:
            return []  # an empty tensor list, recorded as "[]"
        return [int(i) for i in items]
    if text in ("True", "False"):
        return text == "True"
    if re.fullmatch(r"[-+]?\d+", text):
        return int(text)
    return float(text)  # a number: "1.0", "inf", "nan"


def build(spec, schema, device, promote, grad, no_grad=()):
    """The op's positional and keyword arguments; with `grad`, also its
    floating tensor arguments (positions as autograd's outputs number them)
    made leaves requiring grad."""
    args, kwargs, floating = [], {}, []

    def tensor(entry, name):
        t = load_tensor(entry, device, promote)
        if grad and (t.is_floating_point() or t.is_complex()):
            if name not in no_grad:
                t.requires_grad_(True)
            floating.append(t)
            t = t.clone() if t.requires_grad else t  # an in-place op may write it: not the leaf
        return t

    for i, a in enumerate(schema.arguments):
        entry = spec["arguments"].get(str(i))
        if entry is None:
            if a.default_value is None and not str(a.type).startswith("Optional["):
                sys.exit(f"repro: argument {i} ({a.name}) was not recorded")
            value = a.default_value
        elif "tensors" in entry:
            items = [None if e is None else tensor(e, a.name) for e in entry["tensors"]]
            value = items if "List[" in str(a.type) else items[0]
        else:
            value = scalar(entry["value"], str(a.type), device)
        if a.kwarg_only:
            kwargs[a.name] = value
        else:
            args.append(value)
    return args, kwargs, floating


def results(schema, value):
    """(position, item) -> tensor, as the recorder numbers an op's outputs."""
    out = {}
    values = [value] if len(schema.returns) == 1 else list(value)
    for p, v in enumerate(values):
        if isinstance(v, torch.Tensor):
            out[(p, 0)] = v
        elif isinstance(v, (tuple, list)):
            for k, t in enumerate(v):
                if isinstance(t, torch.Tensor):
                    out[(p, k)] = t
    return out


def run(spec, op, device, promote):
    """The produced tensors (outputs, or grad_out for a backward record), on the CPU."""
    if spec["pass"] == "fwd":
        with torch.no_grad():
            args, kwargs, _ = build(spec, op._schema, device, promote, False)
            return {k: v.detach().cpu() for k, v in results(op._schema, op(*args, **kwargs)).items()}
    no_grad = set()
    while True:  # arguments the op does not differentiate (running statistics) are left out
        args, kwargs, floating = build(spec, op._schema, device, promote, True, no_grad)
        try:
            with torch.enable_grad():
                produced = results(op._schema, op(*args, **kwargs))
            break
        except RuntimeError as e:
            m = re.search(r"not differentiable with respect to argument '(\w+)'", str(e))
            if not m or m.group(1) in no_grad:
                raise
            no_grad.add(m.group(1))
    outputs, grads = [], []
    for g in spec["grad_in"]:
        t = produced.get((g["position"], g["item"]))
        if t is not None and t.requires_grad:
            outputs.append(t)
            grads.append(load_tensor(g, device, promote).to(t.dtype))
    wanted = [t for t in floating if t.requires_grad]
    got = iter(torch.autograd.grad(outputs, wanted, grads, allow_unused=True))
    by_position = [next(got) if t.requires_grad else None for t in floating]
    out = {}
    for p in spec["produced"]:
        g = by_position[p["position"]] if p["position"] < len(by_position) else None
        out[(p["position"], p["item"])] = (g if g is not None else torch.zeros_like(floating[p["position"]])).cpu()
    return out


def rel_l2(x, ref):
    x, ref = x.double(), ref.double()
    diff = torch.linalg.norm((x - ref).flatten()).item()
    norm = torch.linalg.norm(ref.flatten()).item()
    return diff / norm if norm > 0 else diff


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cpu", help="where to run the op under test (default cpu)")
    parser.add_argument("--setup", help="a Python file to run first (load a device plugin)")
    parser.add_argument("--json", action="store_true", help="print the errors as JSON")
    options = parser.parse_args()
    if options.setup:
        exec(compile(open(options.setup).read(), options.setup, "exec"), {"__name__": "__setup__"})
    spec = json.load(open(os.path.join(HERE, "op.json")))
    namespace, name = spec["op"].split("::")
    op = getattr(getattr(getattr(torch.ops, namespace), name), spec["overload"] or "default")
    torch.set_num_threads(1)
    reference = run(spec, op, "cpu", True)
    cpu = run(spec, op, "cpu", False)
    device = run(spec, op, options.device, False)
    rows = []
    for p in spec["produced"]:
        key = (p["position"], p["item"])
        recorded = load_tensor(p, "cpu", False)
        rows.append({"tensor": f'{p["role"]}[{p["position"]}]' + (f'.{p["item"]}' if p["item"] else ""),
                     "dtype": p["dtype"], "shape": list(recorded.shape),
                     "recorded": rel_l2(recorded, reference[key]), "cpu": rel_l2(cpu[key], reference[key]),
                     "device": rel_l2(device[key], reference[key])})
    if options.json:
        print(json.dumps({"name": spec["name"], "device": options.device, "errors": rows}, indent=2))
        return
    print(f'{spec["name"]} ({spec["op"]}.{spec["overload"] or "default"}), step {spec["step"]}, rank '
          f'{spec["rank"]}, recorded on {spec["recorded_device"]}')
    on_device = options.device != "cpu"
    print("relative L2 error against float64 on the CPU: the recorded run's, the CPU kernel's" +
          (f", {options.device}'s" if on_device else ""))
    for r in rows:
        print(f'  {r["tensor"]} {r["dtype"]} {r["shape"]}: recorded {r["recorded"]:.3g}, cpu {r["cpu"]:.3g}' +
              (f', {options.device} {r["device"]:.3g}' if on_device else ""))

if __name__ == "__main__":
    main()
