#!/usr/bin/env bash
# A virtual environment holding Huawei's released msprobe (mindstudio-probe,
# from PyPI) beside the torch acc is built against, for the tests that run
# msprobe itself (tests/compare/compare_msprobe_release_test.cpp): it dumps
# a model for acc to read, and its compare reads acc's export.
#   scripts/msprobe-env.sh     make it once (cached), print its python
# MSPROBE_VERSION (default 26.2.0) and MSPROBE_VENV (default
# /var/cache/acc/msprobe-venv) change what and where. The venv sees the
# system's packages (torch, numpy) and keeps them: msprobe would otherwise
# pull numpy 2, which a torch built against numpy 1 cannot use.
set -euo pipefail
cd "$(dirname "$0")/.."
version=${MSPROBE_VERSION:-26.2.0}
venv=${MSPROBE_VENV:-/var/cache/acc/msprobe-venv}
python=$(scripts/find-python.sh)
stamp="mindstudio-probe==$version for $python"
mkdir -p "$(dirname "$venv")"
# One maker at a time (tests may ask for it side by side).
exec 9>"$venv.lock"
flock 9
if [[ -f $venv/.acc-stamp && $(cat "$venv/.acc-stamp") == "$stamp" ]]; then
  echo "$venv/bin/python"
  exit 0
fi
echo "msprobe-env: installing mindstudio-probe==$version into $venv (a few hundred MB from PyPI)" >&2
rm -rf "$venv"
if ! "$python" -m venv --system-site-packages "$venv" >&2; then
  echo "msprobe-env: $python cannot make a virtual environment (Debian: apt-get install python3-venv)" >&2
  exit 1
fi
"$python" -c 'import numpy; print("numpy==" + numpy.__version__)' >"$venv/constraints.txt" 2>/dev/null || : >"$venv/constraints.txt"
"$venv/bin/pip" install -q --disable-pip-version-check -c "$venv/constraints.txt" "mindstudio-probe==$version" >&2
"$venv/bin/python" -c 'import torch; from msprobe.pytorch import PrecisionDebugger' >&2
echo "$stamp" >"$venv/.acc-stamp"
echo "$venv/bin/python"
