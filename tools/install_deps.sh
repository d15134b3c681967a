#!/usr/bin/env bash
# install_deps.sh: installs the Debian packages metrale-jit builds with, when any is missing.
# As root it runs apt-get; otherwise it names what to install and fails.
# The CUDA toolkit (NVRTC, cuda.h) is expected in /usr/local/cuda, as on this kind of machine.
# Then the Python packages the bindings build and test with (python/), from the package index,
# and cargo for the Rust example (examples/rust-engine/) when it is not on the machine.
set -euo pipefail
packages=(cmake g++ make catch2 libtomlplusplus-dev libspdlog-dev libfmt-dev libcli11-dev patchelf
          libboost-context-dev libxxhash-dev nlohmann-json3-dev clang libclang-rt-14-dev libsodium-dev pkg-config
          libhiredis-dev redis-server)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ! command -v python3 >/dev/null; then
  missing+=(python3 python3-dev python3-pip)
elif ! python3 -c 'import os, sysconfig; assert os.path.exists(sysconfig.get_paths()["include"] + "/Python.h")' \
  2>/dev/null; then
  missing+=(python3-dev)
fi
if ! command -v cargo >/dev/null && [[ ! -x ${CARGO_HOME:-$HOME/.cargo}/bin/cargo ]]; then
  missing+=(cargo)
fi

# pip packages: module name -> package name.
install_python_packages() {
  local -A wanted=([nanobind]=nanobind [scikit_build_core]=scikit-build-core [numpy]=numpy [pytest]=pytest
                   [ml_dtypes]=ml_dtypes)
  local absent=()
  for module in "${!wanted[@]}"; do
    python3 -c "import $module" 2>/dev/null || absent+=("${wanted[$module]}")
  done
  ((${#absent[@]} == 0)) && return 0
  echo "install_deps: pip installing ${absent[*]}"
  python3 -m pip install -q "${absent[@]}" ||
    python3 -m pip install -q --break-system-packages "${absent[@]}"  # Debian's externally managed Python
}
if [[ ! -x /usr/local/cuda/bin/nvcc && ! -f /usr/local/cuda/include/nvrtc.h ]]; then
  echo "install_deps: the CUDA toolkit is not in /usr/local/cuda (NVRTC and cuda.h are needed)" >&2
  exit 1
fi
if ((${#missing[@]} == 0)); then
  install_python_packages
  exit 0
fi
if [[ $(id -u) -ne 0 ]]; then
  echo "install_deps: missing Debian packages: ${missing[*]}; run as root or: sudo apt-get install ${missing[*]}" >&2
  exit 1
fi
echo "install_deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
install_python_packages
