#!/usr/bin/env bash
# Prints a Python interpreter that can import torch: $ACC_PYTHON if set,
# else the first of python3 on PATH, /usr/bin/python3, /usr/local/bin/python3.
# An ACC_PYTHON that cannot import torch is an error, not a reason to probe:
# building against another torch than the one named fails later, less clearly.
if [[ -n ${ACC_PYTHON:-} ]]; then
  if [[ ! -x $ACC_PYTHON ]]; then
    echo "find-python: ACC_PYTHON=$ACC_PYTHON is not an executable file; name a Python that can import torch, or unset it to probe" >&2
    exit 1
  fi
  if ! "$ACC_PYTHON" -c "import torch" 2>/dev/null; then
    echo "find-python: ACC_PYTHON=$ACC_PYTHON cannot import torch; name a Python that can, or unset it to probe" >&2
    exit 1
  fi
  echo "$ACC_PYTHON"
  exit 0
fi
for candidate in "$(command -v python3 || true)" /usr/bin/python3 /usr/local/bin/python3; do
  [[ -n "$candidate" && -x "$candidate" ]] || continue
  if "$candidate" -c "import torch" 2>/dev/null; then
    echo "$candidate"
    exit 0
  fi
done
echo "find-python: no Python interpreter can import torch (install python3-torch or set ACC_PYTHON)" >&2
exit 1
