#!/usr/bin/env bash
# tests/toolkit_free/run.sh FLAVOR BUILD_DIR SOURCE_DIR WORK_DIR PYTHON: the library with no CUDA
# toolkit on the machine, only NVIDIA's wheels from the package index (FLAVOR cu13:
# nvidia-cuda-{nvrtc,runtime,cccl} 13.x; cu12: their -cu12 twins, 12.9).
# - The wheels live in a virtual environment cached OUTSIDE the checkout
#   (${XDG_CACHE_HOME:-$HOME/.cache}/metrale-ci/cuda-wheels-FLAVOR-pyXY), created on first use
#   (about 70-90 MB of downloads) under a lock, and reused; a half-made one is made again.
# - The system toolkit is hidden: a private mount namespace (unshare -m) binds an empty folder
#   over /usr/local/cuda, every /usr/local/cuda-*, /usr/local/include and /usr/local/nvvm (so
#   neither ld.so.cache's libnvrtc nor the compiler's default include path reaches CUDA), with
#   CUDA_HOME, CUDA_PATH and LD_LIBRARY_PATH unset. Exit 77 only where the namespace is refused.
# In it, with the build tree's metrale-jit and unit tests:
#   1. without the wheels made known, NVRTC is found nowhere: `info` says so, `build` fails
#      naming it (the hiding works, so what follows can only come from the wheels);
#   2. METRALE_NVRTC_LIBRARY naming a missing file: `info` names the file;
#   3. METRALE_PYTHON_SITE_PACKAGES=<the venv's site-packages>: `info --json` names the wheel's
#      NVRTC and its headers; `build --target hopper` compiles every shipped kernel for sm_90 with
#      it into a cache that the system toolkit's NVRTC filled first (outside the namespace): none is
#      served from that cache (the NVRTC release is in the key), and a second build serves all;
#   4. kernels that include <cuda_bf16.h>, <cooperative_groups.h>, CUB and libcu++ (the toolkit
#      and corpus cg unit tests) compile for sm_80, sm_90 and sm_100 against the wheel's headers;
#   5. a wheel's NVRTC with no headers beside it (a site-packages with nvidia/cu13/lib only):
#      `info` says the headers are missing and names where it looked;
#   6. (cu13) the library configures with the wheel's headers (no toolkit) and compiles the
#      units that include cuda.h, cudaTypedefs.h and the host prelude's vector_types.h.
set -euo pipefail
flavor=$1
build=$(cd "$2" && pwd)
source_dir=$(cd "$3" && pwd)
work=$4
python=$5

case "$flavor" in
  cu13)
    # crt: vector_types.h (the host prelude's, and step 6's build) includes crt/host_defines.h.
    packages=("nvidia-cuda-nvrtc>=13,<14" "nvidia-cuda-runtime>=13,<14" "nvidia-cuda-cccl>=13,<14" "nvidia-cuda-crt>=13,<14")
    origin="python wheel nvidia-cuda-nvrtc (cu13)"
    major=13
    ;;
  cu12)
    packages=("nvidia-cuda-nvrtc-cu12>=12.9,<13" "nvidia-cuda-runtime-cu12>=12.9,<13" "nvidia-cuda-cccl-cu12>=12.9,<13")
    origin="python wheel nvidia-cuda-nvrtc-cu12"
    major=12
    ;;
  *)
    echo "unknown flavor $flavor" >&2
    exit 2
    ;;
esac

if [ "$(id -u)" != 0 ] || ! unshare -m true 2>/dev/null; then
  echo "skip: no private mount namespace here (needs root and unshare -m)"
  exit 77
fi

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

# --- the cached virtual environment with the wheels --------------------------------------------
cache_root=${XDG_CACHE_HOME:-$HOME/.cache}/metrale-ci
pyver=$("$python" -c 'import sys; print("%d%d" % sys.version_info[:2])')
venv=$cache_root/cuda-wheels-$flavor-py$pyver
mkdir -p "$cache_root"
exec 9>"$cache_root/.lock-$flavor"
flock 9
# The marker holds the package list: a changed list makes the environment again.
if [ ! -f "$venv/.complete" ] || [ "$(cat "$venv/.complete")" != "${packages[*]}" ]; then
  echo "creating $venv (first use on this machine)"
  rm -rf "$venv"
  "$python" -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "${packages[@]}" ||
    fail "pip install ${packages[*]} into $venv failed (the package index must be reachable on first use)"
  echo "${packages[*]}" > "$venv/.complete"
fi
flock -u 9
site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
[ -d "$site/nvidia" ] || fail "$site has no nvidia/ folder"

rm -rf "$work"
mkdir -p "$work"
cli=$build/tools/metrale-jit
unit=$build/tests/metrale_unit_tests

# --- 3, first half: the system toolkit's NVRTC fills a cache (when there is one) ---------------
shared_cache=$work/shared-cache
system_filled=0
if "$cli" info --json | "$python" -c 'import json, sys; sys.exit(0 if json.load(sys.stdin)["nvrtc"]["found"] else 1)'; then
  METRALE_CACHE_DIR=$shared_cache "$cli" build --target hopper > "$work/system-build.txt" ||
    fail "the system toolkit's build failed: $(cat "$work/system-build.txt")"
  system_filled=1
fi

# --- everything else, with the toolkit hidden --------------------------------------------------
export flavor site work cli unit python origin major source_dir build shared_cache system_filled
exec unshare -m bash -euo pipefail -c '
mount --make-rprivate /
empty=$(mktemp -d)
for dir in /usr/local/cuda /usr/local/cuda-* /usr/local/include /usr/local/nvvm; do
  if [ -d "$dir" ] && [ ! -L "$dir" ]; then mount --bind "$empty" "$dir"; fi
done
unset CUDA_HOME CUDA_PATH LD_LIBRARY_PATH METRALE_NVRTC_LIBRARY METRALE_CUDA_INCLUDE_DIR VIRTUAL_ENV \
  METRALE_PYTHON_SITE_PACKAGES
fail() { echo "FAIL: $*" >&2; exit 1; }
json() { "$python" -c "import json, sys; d = json.load(sys.stdin); print($1)"; }
[ ! -e /usr/local/cuda/include/cuda.h ] || fail "the toolkit is still visible"

# 1. NVRTC nowhere.
"$cli" info --json > "$work/none.json"
[ "$(json "d[\"nvrtc\"][\"found\"]" < "$work/none.json")" = False ] ||
  fail "NVRTC was found with the toolkit hidden and no wheels: $(cat "$work/none.json")"
if METRALE_CACHE_DIR=$work/none-cache "$cli" build --target hopper > "$work/none-build.txt" 2>&1; then
  fail "build --target hopper succeeded with no NVRTC anywhere"
fi
grep -q "no NVRTC was found" "$work/none-build.txt" || fail "the failed build does not say why: $(cat "$work/none-build.txt")"
echo "1. no NVRTC anywhere: $(json "d[\"nvrtc\"][\"reason\"]" < "$work/none.json")"

# 2. An override naming a missing file.
missing=/nonexistent/metrale-toolkit-free/libnvrtc.so.$major
METRALE_NVRTC_LIBRARY=$missing "$cli" info > "$work/override.txt"
grep -q "$missing (METRALE_NVRTC_LIBRARY: no such file)" "$work/override.txt" ||
  fail "info does not name the missing override: $(cat "$work/override.txt")"
echo "2. the missing override is named"

# 3. The wheels.
export METRALE_PYTHON_SITE_PACKAGES=$site
"$cli" info > "$work/info.txt"
cat "$work/info.txt"
"$cli" info --json > "$work/info.json"
[ "$(json "d[\"nvrtc\"][\"origin\"].startswith(\"$origin in \")" < "$work/info.json")" = True ] ||
  fail "NVRTC does not come from the $flavor wheel: $(cat "$work/info.json")"
[ "$(json "d[\"nvrtc\"][\"version\"].split(\"-\")[0]" < "$work/info.json")" = "$major" ] ||
  fail "NVRTC is not CUDA $major"
[ "$(json "d[\"cuda_headers\"][\"origin\"].startswith(\"$origin in \")" < "$work/info.json")" = True ] ||
  fail "the headers do not come from the $flavor wheel"
METRALE_CACHE_DIR=$shared_cache "$cli" build --target hopper > "$work/wheel-build.txt" 2>&1 ||
  fail "build --target hopper with the $flavor wheel failed: $(tail -40 "$work/wheel-build.txt")"
summary=$(grep -E "^[0-9]+ kernels, 0 failed" "$work/wheel-build.txt") || fail "no summary: $(tail "$work/wheel-build.txt")"
echo "3. $summary"
total=${summary%% kernels*}
[ "$total" -gt 0 ] || fail "no kernel was built"
if [ "$system_filled" = 1 ]; then
  echo "$summary" | grep -q " 0 from the disk cache" || fail "entries of the system NVRTC were served to the wheel NVRTC: $summary"
fi
echo "$summary" | grep -q ": $total compiled by NVRTC" || fail "not every kernel was compiled by the wheel NVRTC: $summary"
again=$(METRALE_CACHE_DIR=$shared_cache "$cli" build --target hopper | grep -E "^[0-9]+ kernels")
echo "$again" | grep -q "$total from the disk cache" || fail "the second build was not served from the cache: $again"
echo "3. again: $again"

# 4. Kernels that include the headers.
export METRALE_CACHE_DIR=$work/unit-cache
"$unit" "kernels written for nvcc with the toolkit'"'"'s headers compile through the registry" ||
  fail "the toolkit-header kernels did not compile with the $flavor wheel"
"$unit" "[corpus][cg][nvrtc]" || fail "the corpus cg kernels did not compile with the $flavor wheel"
echo "4. toolkit-header kernels and the cg corpus compiled"

# 5. A wheel NVRTC without headers.
bare=$work/bare-site
lib=$(json "d[\"nvrtc\"][\"path\"]" < "$work/info.json")
mkdir -p "$bare/nvidia/cu13/lib"
ln -s "$lib" "$bare/nvidia/cu13/lib/libnvrtc.so.13"
METRALE_PYTHON_SITE_PACKAGES=$bare "$cli" info --json > "$work/bare.json"
[ "$(json "d[\"nvrtc\"][\"found\"] and not d[\"cuda_headers\"][\"found\"]" < "$work/bare.json")" = True ] ||
  fail "a wheel NVRTC without headers was not reported so: $(cat "$work/bare.json")"
json "d[\"cuda_headers\"][\"reason\"]" < "$work/bare.json" | grep -q "$bare/nvidia/cu13/include" ||
  fail "the missing headers reason does not name the wheel folder"
echo "5. $(json "d[\"cuda_headers\"][\"reason\"]" < "$work/bare.json")"

# 6. Configure and compile the CUDA-dependent units against the wheel headers only.
if [ "$flavor" = cu13 ]; then
  cmake -S "$source_dir" -B "$work/configure" -DMETRALE_BUILD_TESTS=OFF -DMETRALE_BUILD_TOOLS=OFF \
    -DMETRALE_BUILD_PYTHON=OFF -DPython3_EXECUTABLE="$(dirname "$site")/../../bin/python" > "$work/configure.txt" 2>&1 ||
    fail "configure without a toolkit failed: $(tail -20 "$work/configure.txt")"
  grep -q "headers from the Python wheel in $site" "$work/configure.txt" ||
    fail "configure did not take the wheel headers: $(grep metrale "$work/configure.txt")"
  make -C "$work/configure" -s src/gpu/cuda_driver.cpp.o src/host/tile_collectives.cpp.o > "$work/compile.txt" 2>&1 ||
    fail "compiling against the wheel headers failed: $(tail -20 "$work/compile.txt")"
  echo "6. configured and compiled against $site/nvidia/cu13/include"
fi
echo "toolkit-free $flavor: all checks passed"
'
