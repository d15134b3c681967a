# python_ext.sh (sourced by tools/device_check.sh): the Python package for the device's interpreter.
# The main build's extension is for this machine's python3 (3.11 here; the device image has 3.12):
#   device_pythons                 the interpreters to build more extensions for: $DEVICE_PYTHONS
#                                  (space-separated paths; "none" for none), else every python3.12
#                                  or newer found here (PATH, pyenv) with nanobind importable
#   build_python_extensions BUILD  one extension per such interpreter into BUILD/python/metrale,
#                                  against BUILD's libmetrale.so (python_ext/CMakeLists.txt:
#                                  _native.cpython-XY-...so; _native.abi3.so from 3.12 on where
#                                  CMake is 3.26 or newer)
#   staged_extension PY DIR        the extension in DIR that interpreter PY would import and can
#                                  load, or nothing (an abi3 one needs 3.12+, nanobind's stable ABI)
#   staged_extensions DIR          the names of the extensions in DIR, space-separated
# Invariants: a failed extra build is reported and leaves the main build's extension as it was;
# staged_extension picks in the interpreter's own import order (importlib's EXTENSION_SUFFIXES).
# shellcheck shell=bash

device_pythons() {
  local candidate found=""
  if [ -n "${DEVICE_PYTHONS:-}" ]; then
    [ "$DEVICE_PYTHONS" = none ] || echo "$DEVICE_PYTHONS"
    return
  fi
  for candidate in $(command -v python3.12 python3.13 2>/dev/null) \
                   $(ls -d "$(pyenv root 2>/dev/null)"/versions/3.1[2-9]*/bin/python3 2>/dev/null); do
    "$candidate" -c 'import nanobind' 2>/dev/null && found="$found $candidate"
  done
  echo "$found"
}

build_python_extensions() {  # $1 build dir (with python/metrale and libmetrale.so)
  local build=$1 py tag work lib
  lib=$(readlink -f "$build/libmetrale.so") && [ -f "$lib" ] || { echo "python_ext: no libmetrale.so in $build" >&2; return 1; }
  [ -d "$build/python/metrale" ] || { echo "python_ext: no python/metrale in $build" >&2; return 1; }
  build=$(cd "$build" && pwd)
  for py in $(device_pythons); do
    tag=$("$py" -c 'import sys; print(f"{sys.version_info[0]}{sys.version_info[1]}")' 2>/dev/null) ||
      { echo "python_ext: $py does not run" >&2; continue; }
    work="$build/python-ext-$tag"
    if cmake -S "$ROOT/tools/device_check/python_ext" -B "$work" -DCMAKE_BUILD_TYPE=Release \
         -DPython_EXECUTABLE="$py" -DMETRALE_LIBRARY="$lib" -DMETRALE_SOURCE_ROOT="$ROOT" \
         -DMETRALE_EXT_OUT="$build/python/metrale" >"$work.log" 2>&1 &&
       cmake --build "$work" -j"${JOBS:-2}" >>"$work.log" 2>&1; then
      echo "python_ext: built for $py (Python $tag): $(cd "$build/python/metrale" && ls _native*.so | tr '\n' ' ')"
    else
      echo "python_ext: the extension for $py failed to build (see $work.log)" >&2
      tail -n 5 "$work.log" >&2
    fi
  done
}

staged_extension() {  # $1 interpreter, $2 folder holding _native*.so
  "$1" - "$2" <<'PY' 2>/dev/null
import importlib.machinery, os, sys
folder = sys.argv[1]
for suffix in importlib.machinery.EXTENSION_SUFFIXES:
    if suffix == ".abi3.so" and sys.version_info < (3, 12):
        continue  # nanobind's stable ABI is the 3.12 one: an older interpreter cannot load it
    path = os.path.join(folder, "_native" + suffix)
    if os.path.isfile(path):
        print(path)
        break
PY
}

staged_extensions() {  # $1 folder
  (cd "$1" 2>/dev/null && ls _native*.so 2>/dev/null | tr '\n' ' ')
}
