# env.sh (sourced by tools/device_check.sh): finds the device's own NVRTC, CUDA headers and
# compute-sanitizer, and writes the diagnostics a failed run is read by: kernel, GPU and driver,
# the chosen libnvrtc and include folder, ldd of each binary, torch, and the build stamp.
#   setup_cuda_env       exports LD_LIBRARY_PATH (when ldconfig lacks libnvrtc.so.13),
#                        METRALE_CUDA_INCLUDE_DIR and PATH (nvidia-smi, compute-sanitizer)
#   diagnostics          prints the diagnostics (the env step runs it under its limit)
#   build_info_verdict   "pass|..." when build-device/BUILD_INFO matches these sources, else
#                        "mismatch|..." or "unknown|..."
# Invariants: every probe has its own short timeout and a missing tool is a line, never a stop.
# shellcheck shell=bash

find_cuda_dir() {  # $1: a file to find; echoes the folder holding it (PYROOT: python's site dir)
  local pyroot=${PYROOT:-} d
  for d in /usr/local/cuda/lib64 /usr/local/cuda/include /usr/local/cuda/targets/x86_64-linux/lib \
           /usr/local/cuda/targets/x86_64-linux/include /usr/local/cuda-13*/lib64 /usr/local/cuda-13*/include \
           ${pyroot:+$pyroot/nvidia/cu13/lib} ${pyroot:+$pyroot/nvidia/cu13/include} \
           ${pyroot:+$pyroot/nvidia/cuda_nvrtc/lib}; do
    [ -e "$d/$1" ] && { echo "$d"; return; }
  done
}

setup_cuda_env() {
  local dir
  PYROOT=$(timeout 30 python3 -c 'import nvidia, os; print(os.path.dirname(nvidia.__path__[0]))' 2>/dev/null)
  if ! ldconfig -p 2>/dev/null | grep -q 'libnvrtc.so.13'; then
    dir=$(find_cuda_dir libnvrtc.so.13)
    [ -n "$dir" ] && export LD_LIBRARY_PATH="$dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  fi
  if [ -z "${METRALE_CUDA_INCLUDE_DIR:-}" ]; then
    dir=$(find_cuda_dir cuda_fp8.h)
    [ -n "$dir" ] && export METRALE_CUDA_INCLUDE_DIR="$dir"
  fi
  export PATH="$PATH:/usr/local/cuda/bin:/usr/local/nvidia/bin"
  for dir in /usr/local/cuda/compute-sanitizer /usr/local/cuda-13*/compute-sanitizer /opt/nvidia/compute-sanitizer; do
    command -v compute-sanitizer >/dev/null || { [ -x "$dir/compute-sanitizer" ] && export PATH="$PATH:$dir"; }
  done
}

# Which libnvrtc the loader will give the bench: LD_LIBRARY_PATH first, then ldconfig's cache.
chosen_nvrtc() {
  local dir
  local path=${LD_LIBRARY_PATH:-}
  for dir in ${path//:/ }; do
    [ -e "$dir/libnvrtc.so.13" ] && { readlink -f "$dir/libnvrtc.so.13"; return; }
  done
  ldconfig -p 2>/dev/null | awk '/libnvrtc.so.13 /{print $NF; exit}' | grep . || echo "none found"
}

build_info_verdict() {
  local info="$STAGE/BUILD_INFO" built here
  [ -f "$info" ] || { echo "unknown|no $info (staged by an older script?)"; return; }
  built=$(sed -n 's/^sources=//p' "$info")
  here=$(source_digest "$ROOT")
  if [ "$built" = "$here" ]; then
    echo "pass|$(sed -n 's/^commit=//p' "$info" | cut -c1-12) dirty=$(sed -n 's/^dirty=//p' "$info"), sources $here match"
  else
    echo "mismatch|staged from sources $built ($(sed -n 's/^commit=//p' "$info" | cut -c1-12)), these are $here: rebuild with --build"
  fi
}

diagnostics() {
  echo "date: $(date -u +%FT%TZ)   host: $(uname -n)   kernel: $(uname -r)   arch: $(uname -m)"
  echo "glibc: $(ldd --version 2>/dev/null | head -n1)"
  if command -v nvidia-smi >/dev/null; then
    timeout 20 nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem,clocks.max.sm \
      --format=csv || echo "nvidia-smi query failed"
    timeout 20 nvidia-smi | head -n 20
  else
    echo "nvidia-smi: not on PATH"
  fi
  echo "libnvrtc chosen: $(chosen_nvrtc)   LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}"
  echo "CUDA include dir: ${METRALE_CUDA_INCLUDE_DIR:-none found}"
  echo "compute-sanitizer: $(command -v "$SANITIZER" || echo 'not on PATH') $(timeout 20 "$SANITIZER" --version 2>/dev/null | tail -n1)"
  # The version decides which CPython ABI a staged metrale Python extension must be built for.
  echo "python3: $(command -v python3) ($(python3 -c 'import sys; print(sys.version.split()[0])' 2>&1))  torch: $(timeout 60 python3 -c \
    'import torch; print(torch.__version__, "cuda", torch.version.cuda, "available", torch.cuda.is_available())' 2>&1 | tail -n1)"
  echo "staged Python extensions: $(staged_extensions "$STAGE/python/metrale")-> python3 loads: $(staged_extension python3 \
    "$STAGE/python/metrale" | xargs -r basename || true)"
  echo "BUILD_INFO ($STAGE/BUILD_INFO):"; sed 's/^/  /' "$STAGE/BUILD_INFO" 2>/dev/null || echo "  missing"
  echo "build vs these sources: $(build_info_verdict)"
  local binary
  for binary in "$BENCH" "$GPU_TESTS"; do
    [ -e "$binary" ] || { echo "ldd $binary: missing"; continue; }
    echo "ldd $binary:"; ldd "$binary" 2>&1 | sed 's/^/  /'
  done
}
