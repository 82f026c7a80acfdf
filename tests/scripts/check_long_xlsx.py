"""Checks the report.xlsx of a long comparison: it opens (openpyxl, read-only,
as a person's Excel would load it), stays under Excel's limits and says what
it left out and where.

usage: check_long_xlsx.py REPORT.xlsx STEPS MAX_TENSOR_ROWS

STEPS: the steps sheet's rows (one per step and rank, header not counted).
MAX_TENSOR_ROWS: the most rows the tensors sheet may hold.
Prints what is wrong and exits 1, or prints "ok" and the sheets' sizes.
"""
import sys

import openpyxl

EXCEL_ROWS = 1048576


def main():
    path, steps, max_rows = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    errors = []
    wb = openpyxl.load_workbook(path, read_only=True)
    for name in ("tensors", "origins", "steps", "modules", "about"):
        if name not in wb.sheetnames:
            errors.append(f"no sheet {name}: {wb.sheetnames}")
    if errors:
        raise SystemExit("\n".join(errors))
    sizes = {name: wb[name].max_row for name in wb.sheetnames}
    for name, rows in sizes.items():
        if rows is None or rows > EXCEL_ROWS:
            errors.append(f"sheet {name}: {rows} rows (Excel's limit: {EXCEL_ROWS})")
    if sizes["tensors"] > max_rows:
        errors.append(f"tensors: {sizes['tensors']} rows > {max_rows}")
    if sizes["steps"] != steps + 1:
        errors.append(f"steps: {sizes['steps']} rows, expected {steps} and the header")
    about = [row[0] for row in wb["about"].iter_rows(values_only=True) if row and row[0]]
    text = "\n".join(about)
    for needed in ("report.csv", "left out", "steps sheet"):
        if needed not in text:
            errors.append(f"the about sheet does not say '{needed}':\n{text}")
    # The last row of the tensors sheet says how many pairs it left out.
    last = None
    for row in wb["tensors"].iter_rows(min_row=sizes["tensors"], max_row=sizes["tensors"], values_only=True):
        last = row
    if not last or not any(isinstance(v, str) and "report.csv holds every one" in v for v in last):
        errors.append(f"the tensors sheet's last row does not say where the rest is: {last}")
    if errors:
        raise SystemExit("\n".join(errors))
    print("ok", sizes)


if __name__ == "__main__":
    main()
