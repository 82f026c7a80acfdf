#!/usr/bin/env bash
# Prints a Python interpreter that can import torch: $ACC_PYTHON if set,
# else the first of python3 on PATH, /usr/bin/python3, /usr/local/bin/python3.
for candidate in "${ACC_PYTHON:-}" "$(command -v python3 || true)" /usr/bin/python3 /usr/local/bin/python3; do
  [[ -n "$candidate" && -x "$candidate" ]] || continue
  if "$candidate" -c "import torch" 2>/dev/null; then
    echo "$candidate"
    exit 0
  fi
done
echo "find-python: no Python interpreter can import torch (install python3-torch or set ACC_PYTHON)" >&2
exit 1
