#!/usr/bin/env bash
# check_layers.sh [REPO]: fails when a file of the library includes a header of a higher layer,
# when a public header (include/) includes a private one (src/), or when include/metrale/ holds more
# than 20 public C++ headers besides the umbrella metrale.hpp (metrale.h, the C ABI, and the host
# JIT's stand-ins for toolkit headers, host/cuda_include/, are not counted).
# The layer table below is the one place the layers are written down (README "Layout" shows it);
# each layer may include its own folder and those above it in this list, never one below.
# A header is placed by where it lives: "metrale/X" is include/metrale/X, "dir/X" is src/dir/X;
# includes without a folder (same-folder headers, templates, system headers) are not checked.
set -euo pipefail
repo=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$repo"

# Lowest first: a layer name, then the path prefixes it owns.
layers=(
  "ground src/ground/ include/metrale/error.hpp include/metrale/environment.hpp"
  "gpu src/gpu/ include/metrale/gpu/"
  "jit src/jit/ include/metrale/jit/"
  "hardware src/hardware/ include/metrale/target/"
  "host src/host/ include/metrale/host/"
  "ref src/ref/"
  "ops src/ops/ include/metrale/ops/"
  "profile src/profile/"
  "runtime src/runtime/ include/metrale/runtime.hpp include/metrale/metrale.hpp"
  "capi src/capi/ include/metrale/metrale.h"
)

# Prints "index name" of the layer owning path $1, or nothing.
layer_of() {
  local i
  for i in "${!layers[@]}"; do
    read -r -a fields <<<"${layers[$i]}"
    local prefix
    for prefix in "${fields[@]:1}"; do
      if [[ "$1" == "$prefix"* ]]; then
        echo "$i ${fields[0]}"
        return
      fi
    done
  done
}

violations=0
checked=0
while IFS= read -r file; do
  read -r own own_name <<<"$(layer_of "$file")"
  if [[ -z "${own:-}" ]]; then
    echo "check_layers: $file is in no layer: add its folder to the table in tools/check_layers.sh" >&2
    violations=$((violations + 1))
    continue
  fi
  while IFS= read -r line; do
    number=${line%%:*}
    spelled=$(sed -E 's/.*#[[:space:]]*include[[:space:]]*"([^"]+)".*/\1/' <<<"$line")
    [[ "$spelled" == */* ]] || continue
    if [[ "$spelled" == metrale/* ]]; then target="include/$spelled"; else target="src/$spelled"; fi
    read -r to to_name <<<"$(layer_of "$target")"
    checked=$((checked + 1))
    if [[ "$file" == include/* && "$spelled" != metrale/* ]]; then
      echo "$file:$number: the public header includes the private \"$spelled\" (not installed)" >&2
      violations=$((violations + 1))
    elif [[ -z "${to:-}" ]]; then
      echo "$file:$number: includes \"$spelled\", which is in no layer" >&2
      violations=$((violations + 1))
    elif ((to > own)); then
      echo "$file:$number: $own_name includes \"$spelled\" of the higher layer $to_name" >&2
      violations=$((violations + 1))
    fi
  done < <(grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$file" || true)
done < <(find src include -type f \( -name '*.hpp' -o -name '*.cpp' -o -name '*.h' \) | sort)

# The API headers: not the umbrella, not the C header (counted apart, as DESIGN.md does), not the
# headers the host JIT compiles kernels against in place of the toolkit's (host/cuda_include/).
public_headers=$(find include/metrale -type f ! -path include/metrale/metrale.hpp ! -path include/metrale/metrale.h \
  ! -path 'include/metrale/host/cuda_include/*' | wc -l)
if ((public_headers > 20)); then
  echo "check_layers: include/metrale/ holds $public_headers public headers besides metrale.hpp (at most 20):" \
    "move implementation headers beside their sources in src/" >&2
  violations=$((violations + 1))
fi

if ((checked == 0)); then
  echo "check_layers: no includes found under $repo/src and $repo/include" >&2
  exit 1
fi
if ((violations > 0)); then
  echo "check_layers: $violations include(s) point up or out of the layer table" >&2
  exit 1
fi
echo "check_layers: $checked includes, each to its own layer or a lower one"
