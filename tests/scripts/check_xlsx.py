"""Checks a report.xlsx written by acc-analyzer against expectations.

usage: check_xlsx.py REPORT.xlsx EXPECTED.json

EXPECTED.json: {"sheets": [...], "columns": [...], "types": ["t"|"i"|"n", ...],
"rows": N, "fail_rows": [...], "warn_rows": [...] (sheet row numbers, header = 1),
"origins": K, "values": [[row, column name, value], ...]}.
Prints what is wrong and exits 1, or prints "ok".
"""
import json
import math
import sys

import openpyxl
from openpyxl.utils import get_column_letter

FAIL_FILL = "FFFFC7CE"
WARN_FILL = "FFFFF2CC"


def fill_of(cell):
    if cell.fill is None or cell.fill.fill_type != "solid":
        return None
    return cell.fill.fgColor.rgb


def main():
    path, expected_path = sys.argv[1], sys.argv[2]
    with open(expected_path) as f:
        exp = json.load(f)
    errors = []

    def check(ok, message):
        if not ok:
            errors.append(message)

    wb = openpyxl.load_workbook(path)
    check(wb.sheetnames == exp["sheets"], f"sheets {wb.sheetnames} != {exp['sheets']}")
    ws = wb[exp["sheets"][0]]
    columns = exp["columns"]
    header = [c.value for c in ws[1]]
    check(header == columns, f"header {header} != {columns}")
    check(all(c.font.b for c in ws[1]), "header not bold")
    check(ws.max_row == exp["rows"] + 1, f"{ws.max_row - 1} data rows, expected {exp['rows']}")
    check(ws.freeze_panes == "C2", f"freeze_panes {ws.freeze_panes!r}, expected 'C2' (header row frozen)")
    last = get_column_letter(len(columns))
    check(ws.auto_filter.ref == f"A1:{last}{exp['rows'] + 1}", f"autofilter {ws.auto_filter.ref!r}")
    check(ws.column_dimensions["B"].width >= 30, f"name column width {ws.column_dimensions['B'].width}")

    fail_rows, warn_rows = set(exp["fail_rows"]), set(exp["warn_rows"])
    numbers = 0
    for r in range(2, ws.max_row + 1):
        want = FAIL_FILL if r in fail_rows else WARN_FILL if r in warn_rows else None
        fills = {fill_of(ws.cell(r, c)) for c in range(1, len(columns) + 1)}
        check(fills == {want}, f"row {r}: fills {fills}, expected {want}")
        for c, kind in enumerate(exp["types"], start=1):
            v = ws.cell(r, c).value
            if kind == "t" or v is None:
                continue
            if isinstance(v, str):
                check(v in ("nan", "inf", "-inf"), f"row {r} {columns[c - 1]}: text {v!r} in a numeric column")
            else:
                check(isinstance(v, (int, float)), f"row {r} {columns[c - 1]}: {v!r}")
                numbers += 1
            if kind == "i" and not isinstance(v, str):
                check(float(v).is_integer(), f"row {r} {columns[c - 1]}: {v!r} not an integer")
    check(numbers > (ws.max_row - 1) * 5, f"only {numbers} numeric cells")

    for row, column, value in exp["values"]:
        got = ws.cell(row, columns.index(column) + 1).value
        if isinstance(value, float):
            check(isinstance(got, float) and math.isclose(got, value, rel_tol=1e-8),
                  f"row {row} {column}: {got!r} != {value!r}")
        else:
            check(got == value, f"row {row} {column}: {got!r} != {value!r}")

    if "origins" in exp:
        origins = wb["origins"]
        check(origins.max_row == exp["origins"] + 1, f"origins sheet has {origins.max_row - 1} rows")
        check(origins.freeze_panes is not None, "origins sheet header not frozen")

    if errors:
        print("\n".join(errors))
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
