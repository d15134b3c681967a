#!/usr/bin/env bash
# torch_env.sh [--path] [PYTHON]: the virtual environment the PyTorch tests (ctest python_torch) run in,
# made once per machine OUTSIDE the checkout and reused: torch from the package index (about
# 5.4 GB with the CUDA wheels it depends on; 10-20 minutes to install on a loaded 2-core machine),
# over the interpreter's own packages (--system-site-packages: numpy, pytest, ml_dtypes from
# tools/install_deps.sh), so the extension the build makes for that interpreter imports in it.
# Prints the environment's folder. Made under a lock; a half-made one (no marker) is made again;
# a changed requirement (TORCH_REQUIREMENT) makes it again. .ci/run calls it beside the build.
# --path: prints the folder and exits 0 if it is complete, 1 if not (makes nothing).
set -euo pipefail
only_path=0
if [[ ${1:-} == --path ]]; then
  only_path=1
  shift
fi
python=${1:-python3}
requirement=${TORCH_REQUIREMENT:-torch>=2.6}
pyver=$("$python" -c 'import sys; print(f"{sys.version_info[0]}{sys.version_info[1]}")')
cache_root=${XDG_CACHE_HOME:-$HOME/.cache}/metrale-ci
venv=$cache_root/torch-py$pyver
if ((only_path)); then
  echo "$venv"
  [[ -f $venv/.complete && $(cat "$venv/.complete") == "$requirement" ]]
  exit
fi
mkdir -p "$cache_root"
exec 9>"$cache_root/.lock-torch"
flock 9
if [[ ! -f $venv/.complete || $(cat "$venv/.complete") != "$requirement" ]]; then
  echo "torch_env: creating $venv (first use on this machine)" >&2
  rm -rf "$venv"
  "$python" -m venv --system-site-packages "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "$requirement" >&2 || {
    echo "torch_env: pip install '$requirement' into $venv failed (the package index must be reachable on first use)" >&2
    exit 1
  }
  echo "$requirement" > "$venv/.complete"
fi
"$venv/bin/python" -c 'import torch' || { echo "torch_env: torch does not import in $venv" >&2; exit 1; }
echo "$venv"
