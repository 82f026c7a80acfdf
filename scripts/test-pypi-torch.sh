#!/usr/bin/env bash
# Runs the README's test command (scripts/test.sh) against PyPI's torch, the
# torch most users have: a virtual environment per torch version, built once
# and cached, and a build of acc against it.
#   scripts/test-pypi-torch.sh VERSION [ctest arguments...]   e.g. 2.15, 2.1
#   scripts/test-pypi-torch.sh --prepare VERSION              the environment only
# VERSION is a release series ("2.1" installs the newest 2.1.x), with
# torchvision, NumPy, openpyxl and, from torch 2.6, transformers. Environment:
#   ACC_VENV_DIR     where the environments live (default /var/cache/acc)
#   ACC_PYPI_PYTHON  the Python that makes them (default: /usr/bin/python3,
#                    then python3 on PATH; torch 2.1 needs Python <= 3.11)
#   ACC_BUILD_DIR    the build (default build-pypi-VERSION in the tree)
#   ACC_BUILD_TARGETS  build only these targets (scripts/setup.sh)
#   ACC_DEBUG_INFO   0: build without debug information (scripts/setup.sh)
# PyPI's torch wheels bring CUDA's libraries (about 3 GB per environment);
# pip keeps the downloads in its cache. Torch before 2.7 uses libstdc++'s
# old ABI: acc and GoogleTest are then built with it (CMakeLists.txt).
set -euo pipefail
cd "$(dirname "$0")/.."

prepare_only=0
if [[ ${1:-} == --prepare ]]; then prepare_only=1; shift; fi
version=${1:-}
[[ $# -gt 0 ]] && shift
if [[ ! $version =~ ^[0-9]+\.[0-9]+$ ]]; then
  echo "test-pypi-torch: first argument must be a torch release series such as 2.15 or 2.1 (got '${version}')" >&2
  exit 2
fi

# The Debian packages of the build and the tests, and python3-venv.
scripts/setup.sh --packages-only

python=""
for candidate in "${ACC_PYPI_PYTHON:-}" /usr/bin/python3 "$(command -v python3 || true)"; do
  [[ -n $candidate && -x $candidate ]] || continue
  if "$candidate" -c 'import venv, ensurepip' 2>/dev/null; then python=$candidate; break; fi
done
if [[ -z $python ]]; then
  echo "test-pypi-torch: no Python with venv and ensurepip (set ACC_PYPI_PYTHON, or install python3-venv)" >&2
  exit 2
fi

# True when release series $1 is $2 or later.
at_least() { [[ $(printf '%s\n' "$1" "$2" | sort -V | head -1) == "$2" ]]; }

venv_root=${ACC_VENV_DIR:-/var/cache/acc}
venv=$venv_root/pypi-torch-$version
# torch before 2.3 was built against NumPy 1 and warns on every import with
# NumPy 2, which the tests would read as output the program did not print.
numpy=numpy
at_least "$version" 2.3 || numpy='numpy<2'
spec="torch==$version.* torchvision $numpy openpyxl"
# Hugging Face transformers for the Transformers tests: its releases need
# torch 2.6 or later, so older series go without (the tests are not built).
at_least "$version" 2.6 && spec+=" transformers"
mkdir -p "$venv_root"
(
  flock 9
  if [[ ! -f $venv/.acc-stamp || $(cat "$venv/.acc-stamp") != "$python $spec" ]]; then
    echo "test-pypi-torch: installing $spec into $venv with $python (a few GB, once)" >&2
    rm -rf "$venv"
    "$python" -m venv "$venv"
    # shellcheck disable=SC2086
    "$venv/bin/pip" install -q --disable-pip-version-check $spec
    echo "$python $spec" >"$venv/.acc-stamp"
  fi
) 9>"$venv_root/pypi-torch-$version.lock"
torch_version=$("$venv/bin/python" -c 'import torch; print(torch.__version__)')
echo "test-pypi-torch: torch $torch_version from PyPI in $venv" >&2
((prepare_only)) && exit 0

export ACC_PYTHON=$venv/bin/python
export ACC_BUILD_DIR=${ACC_BUILD_DIR:-build-pypi-$version}
# msprobe's released package is tested once, by the host suite.
export MSPROBE_SETUP=0
echo "test-pypi-torch: === torch $torch_version (PyPI): scripts/test.sh $* ===" >&2
if scripts/test.sh "$@"; then
  echo "test-pypi-torch: torch $torch_version (PyPI) passed" >&2
else
  echo "test-pypi-torch: torch $torch_version (PyPI) FAILED" >&2
  exit 1
fi
