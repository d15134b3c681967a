#!/usr/bin/env bash
# tests/torch/run.sh PYTHON SOURCE_DIR: the PyTorch tests (python/tests/test_torch_ops.py on the
# CPU; test_cuda_torch.py, which skips without a device) in the cached torch environment of
# tools/torch_env.sh, against this build's extension (PYTHONPATH from CTest).
# No environment: skip (77) naming the command that makes it, or fail where
# METRALE_REQUIRE_TORCH=1 (.ci/run sets it, so CI cannot pass by skipping).
set -euo pipefail
python=$1
source_dir=$2
if ! venv=$("$source_dir/tools/torch_env.sh" --path "$python"); then
  if [[ ${METRALE_REQUIRE_TORCH:-} == 1 ]]; then
    echo "FAIL: no torch environment at $venv (METRALE_REQUIRE_TORCH=1): run tools/torch_env.sh" >&2
    exit 1
  fi
  echo "skip: no torch environment at $venv: run tools/torch_env.sh to make it (about 5.4 GB)"
  exit 77
fi
# The package and torch both import, or the pytest skips below would hide it.
"$venv/bin/python" -c 'import torch, metrale.torch; print("torch", torch.__version__, "metrale", metrale.__version__)'
exec "$venv/bin/python" -m pytest -q -p no:cacheprovider -rs "$source_dir/python/tests/test_torch_ops.py" \
  "$source_dir/python/tests/test_cuda_torch.py"
