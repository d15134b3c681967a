#!/usr/bin/env bash
# install_deps.sh: installs the Debian packages metrale-jit builds with, when any is missing.
# As root it runs apt-get; otherwise it names what to install and fails.
# The CUDA toolkit (NVRTC, cuda.h) is expected in /usr/local/cuda, as on this kind of machine.
set -euo pipefail
packages=(cmake g++ make catch2 libtomlplusplus-dev libspdlog-dev libfmt-dev libcli11-dev patchelf
          libboost-context-dev libxxhash-dev nlohmann-json3-dev clang libclang-rt-14-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [[ ! -x /usr/local/cuda/bin/nvcc && ! -f /usr/local/cuda/include/nvrtc.h ]]; then
  echo "install_deps: the CUDA toolkit is not in /usr/local/cuda (NVRTC and cuda.h are needed)" >&2
  exit 1
fi
((${#missing[@]} == 0)) && exit 0
if [[ $(id -u) -ne 0 ]]; then
  echo "install_deps: missing Debian packages: ${missing[*]}; run as root or: sudo apt-get install ${missing[*]}" >&2
  exit 1
fi
echo "install_deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
