# stage.sh (sourced by tools/device_check.sh): puts a build's binaries into a folder that runs on
# a device machine as it is, writes its BUILD_INFO stamp, and proves the folder complete.
#   stage_from BUILD_DIR STAGE_DIR   copy bin/, bundle every non-system library into lib/, strip,
#                                    RUNPATH $ORIGIN/../lib (binaries) and $ORIGIN (libraries)
#   verify_stage STAGE_DIR           every NEEDED entry and every library ldd resolves is inside
#                                    lib/, or the C/C++ runtime, the driver or NVRTC; every RUNPATH
#                                    entry is $ORIGIN-relative; prints each problem, fails on any
#   source_digest ROOT               one hash of the sources a build is made of (BUILD_INFO
#                                    compares it on the device, where there may be no git)
# Invariants: libnvrtc and libcuda are never bundled (the device's own match its driver); a
# RUNPATH that names a folder of this machine (e.g. /usr/local/cuda/lib) never reaches the stage.
# shellcheck shell=bash

# Libraries every Linux machine has, with the driver and NVRTC the device brings.
STAGE_SYSTEM_LIBS='^(linux-vdso|ld-linux[^ ]*|libc|libm|libdl|libpthread|librt|libstdc\+\+|libgcc_s|libnvrtc[^ ]*|libcuda)\.so'

source_digest() {
  local root=$1
  (cd "$root" && find src include templates hardware tools/bench tools/cmake tools/CMakeLists.txt tests/gpu tests/support \
     tests/unit tests/CMakeLists.txt CMakeLists.txt cmake \
     -type f 2>/dev/null | LC_ALL=C sort | xargs -d '\n' sha256sum | sha256sum | cut -c1-16)
}

write_build_info() {  # $1 root, $2 build dir, $3 stage dir
  local root=$1 build=$2 stage=$3 commit dirty
  commit=$(git -C "$root" rev-parse HEAD 2>/dev/null || echo unknown)
  dirty=$( [ -n "$(git -C "$root" status --porcelain --untracked-files=no 2>/dev/null)" ] && echo yes || echo no)
  {
    echo "commit=$commit"
    echo "dirty=$dirty"
    echo "sources=$(source_digest "$root")"
    echo "build_type=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$build/CMakeCache.txt" 2>/dev/null)"
    echo "built=$(date -u +%FT%TZ) on $(uname -n)"
    echo "glibc=$(ldd --version 2>/dev/null | head -n1 | awk '{print $NF}')"
  } >"$stage/BUILD_INFO"
}

stage_from() {  # $1 build dir (its tools/ and tests/ hold the binaries), $2 stage dir
  local build=$1 stage=$2 binary name path
  command -v patchelf >/dev/null || { echo "stage: patchelf is missing (tools/install_deps.sh installs it)" >&2; return 1; }
  rm -rf "$stage" && mkdir -p "$stage/bin" "$stage/lib" || return 1
  for binary in "$build/tools/metrale-ops-bench" "$build/tools/metrale-jit" "$build/tests/metrale_gpu_tests"; do
    [ -f "$binary" ] && cp "$binary" "$stage/bin/"
  done
  [ -f "$stage/bin/metrale-ops-bench" ] || { echo "stage: no metrale-ops-bench in $build/tools" >&2; return 1; }
  # The Python package (the extension and the .py files), for the python step; the C library it
  # loads is bundled into lib/ below with the rest (the extension's RUNPATH reaches it there).
  # The extension is built for this machine's Python (its ABI tag names the version).
  if [ -d "$build/python/metrale" ]; then
    mkdir -p "$stage/python" && cp -rL "$build/python/metrale" "$stage/python/" || return 1
    rm -rf "$stage/python/metrale/__pycache__"
  fi
  # Bundle what the binaries and the bundled libraries load, until nothing new appears.
  local added=1
  while [ "$added" = 1 ]; do
    added=0
    for binary in "$stage"/bin/* "$stage"/lib/* "$stage"/python/metrale/*.so; do
      [ -f "$binary" ] || continue
      while read -r name path; do
        if ! [[ "$name" =~ $STAGE_SYSTEM_LIBS ]] && [ ! -e "$stage/lib/$name" ]; then
          cp -L "$path" "$stage/lib/$name" && added=1
        fi
      done < <(ldd "$binary" 2>/dev/null | awk '$3 ~ /^\// {print $1, $3}')
    done
  done
  strip --strip-unneeded "$stage"/bin/* "$stage"/lib/* 2>/dev/null
  # shellcheck disable=SC2016  # $ORIGIN is for the loader, not the shell
  for binary in "$stage"/bin/*; do patchelf --set-rpath '$ORIGIN/../lib' "$binary" || return 1; done
  # shellcheck disable=SC2016
  for binary in "$stage"/lib/*; do [ -f "$binary" ] && { patchelf --set-rpath '$ORIGIN' "$binary" || return 1; }; done
  # shellcheck disable=SC2016
  for binary in "$stage"/python/metrale/*.so; do
    [ -f "$binary" ] && { patchelf --set-rpath '$ORIGIN:$ORIGIN/../../lib' "$binary" || return 1; }
  done
  write_build_info "$ROOT" "$build" "$stage"
  echo "staged: $(ls "$stage/bin" | tr '\n' ' ')| bundled: $(ls "$stage/lib" | tr '\n' ' ')($(du -sh "$stage" | cut -f1))"
}

verify_stage() {  # $1 stage dir; prints one line per problem; status 0 only when there is none
  local stage=$1 file problems=0 entry name path
  [ -f "$stage/BUILD_INFO" ] || { echo "stage: $stage/BUILD_INFO is missing"; problems=1; }
  for file in "$stage"/bin/* "$stage"/lib/*; do
    [ -f "$file" ] || continue
    while read -r entry; do
      case "$entry" in
        '$ORIGIN'*) ;;
        *) echo "stage: $file has RUNPATH entry '$entry', not \$ORIGIN-relative"; problems=1 ;;
      esac
    done < <(readelf -d "$file" | sed -n 's/.*(R\(UN\)\{0,1\}PATH).*\[\(.*\)\]/\2/p' | tr ':' '\n')
    while read -r name; do
      if ! [[ "$name" =~ $STAGE_SYSTEM_LIBS ]] && [ ! -e "$stage/lib/$name" ]; then
        echo "stage: $file needs $name, which is neither in $stage/lib nor a system library"; problems=1
      fi
    done < <(readelf -d "$file" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
    while read -r name path; do
      if [ "$path" = "not" ]; then
        [[ "$name" =~ ^lib(nvrtc|cuda) ]] || { echo "stage: $file: $name not found"; problems=1; }
      elif ! [[ "$name" =~ $STAGE_SYSTEM_LIBS ]] && [ "$(dirname "$(readlink -f "$path")")" != "$(readlink -f "$stage/lib")" ]; then
        echo "stage: $file loads $name from $path, outside $stage/lib"; problems=1
      fi
    done < <(ldd "$file" 2>/dev/null | awk '$2 == "=>" {print $1, $3}')
  done
  return "$problems"
}
