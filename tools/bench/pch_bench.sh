#!/bin/bash
# pch_bench.sh: the precompiled-header table of BENCHMARKS.md. For each kind (cub: an engine
# kernel with CUB + cooperative groups; templates: the library's fp8_act_quant template) runs
# metrale-pch-bench without PCH, then with it in two processes one after the other (the second
# shows what a new process gets: NVRTC's PCH does not cross processes). Each line: one compile.
# Usage: tools/bench/pch_bench.sh build/tools/metrale-pch-bench [count=6]
set -euo pipefail
bench=${1:?usage: pch_bench.sh path/to/metrale-pch-bench [count]}
count=${2:-6}
cache=$(mktemp -d)
trap 'rm -rf "$cache"' EXIT
export METRALE_CACHE_DIR=$cache
for kind in cub templates; do
  with=$([ "$kind" = cub ] && echo on || echo all)
  "$bench" "$kind" off "$count" | sed 's/^/process=1 /'
  "$bench" "$kind" "$with" "$count" | sed 's/^/process=1 /'
  "$bench" "$kind" "$with" "$count" | sed 's/^/process=2 /'
done
