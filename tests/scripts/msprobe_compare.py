"""Runs msprobe's own compare (the released package's CLI) on two dumps of
one step and prints one JSON object summarising its result CSV, for the
MsprobeRelease tests:
  python msprobe_compare.py MSPROBE TARGET_STEP_DIR GOLDEN_STEP_DIR OUT
{"exit": ..., "rows": N, "tensor_rows": ..., "initialized_rows": ..., "data_rows": ...,
 "rows_by_name": {"Functional.gelu.0.forward.output.0": {"max_abs": ..., "max_rel": ..., "result": ...}}}
A row holds real data when its error columns are numbers: MaxAbsErr in a
tensor task, both sides' max in a statistics task (whose diff columns read 0
for rows without statistics). Tensor rows are those of a torch dtype;
initialized ones have statistics on the target side (a tensor acc found
uninitialized, torch.empty's output, has none)."""
import csv
import glob
import json
import subprocess
import sys


def number(v):
    try:
        return float(str(v).rstrip("%"))
    except ValueError:
        return None


msprobe, target, golden, out = sys.argv[1:5]
run = subprocess.run([msprobe, "compare", "-tp", target, "-gp", golden, "-o", out], capture_output=True, text=True)
summary = {"exit": run.returncode, "rows": 0, "tensor_rows": 0, "initialized_rows": 0, "data_rows": 0,
           "rows_by_name": {}}
files = sorted(glob.glob(out + "/compare_result_*.csv"))
if run.returncode != 0 or not files:
    summary["log"] = (run.stdout + run.stderr)[-2000:]
else:
    with open(files[-1], newline="") as f:
        rows = list(csv.DictReader(f))
    tensor_task = bool(rows) and "Cosine" in rows[0]
    for r in rows:
        summary["rows"] += 1
        tensor = r["NPU Dtype"].startswith("torch.")
        summary["tensor_rows"] += tensor
        summary["initialized_rows"] += tensor and number(r["NPU max"]) is not None
        if tensor_task:
            has_data = number(r["MaxAbsErr"]) is not None
            max_abs, max_rel = number(r["MaxAbsErr"]), number(r["MaxRelativeErr"])
        else:
            has_data = tensor and number(r["NPU max"]) is not None and number(r["Bench max"]) is not None
            max_abs, max_rel = number(r["Max diff"]), number(r["NormRelativeErr"])
            if max_rel is not None and r["NormRelativeErr"].endswith("%"):
                max_rel /= 100
        summary["data_rows"] += has_data
        summary["rows_by_name"][r["NPU Name"]] = {"max_abs": max_abs, "max_rel": max_rel, "result": r["Result"],
                                                  "data": has_data}
print(json.dumps(summary))
