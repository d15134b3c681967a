#!/bin/bash
# startup_times.sh: whole-process wall times (ms, median of RUNS, default 7) of the CLI
# acquiring the hopper kernel set, side by side in one run:
#   cold             `build --target hopper --pinned-only` on an empty disk cache (NVRTC compiles):
#                    the set an engine opening with background variants builds (its pinned
#                    shapes' variants, the generic form of a pinned kernel left to first sight)
#   cold_all         `build --target hopper` on an empty disk cache: every variant, generic too
#   warm             the same on the disk cache the cold run filled
#   bundle           an empty disk cache and METRALE_BUNDLE_DIR (NVRTC reachable, never loaded)
#   bundle_no_nvrtc  the same with NVRTC hidden (METRALE_NVRTC_LIBRARY=/nonexistent)
#   library_only     `targets`: a process that loads the library and the targets, no kernels
#   by_hand          metrale-nvrtc-by-hand (next to the CLI): NVRTC driven by hand on the set
#                    `targets --json` names for hopper, one program per template file, each on
#                    its own thread, the registry's options, CUBIN out, no cache
#   first_op_cold    metrale-first-op (next to the CLI) on an empty disk cache: process start to the
#                    first op call on a stub sm_90 device, parents loaded, the rest (twins, the
#                    tensor-core kernel, pinned shapes) building in the background
#   first_op_warm    the same on the disk cache the cold build filled
#   first_op_bundle  the same with an empty disk cache and METRALE_BUNDLE_DIR
# Usage: tools/bench/startup_times.sh build/tools/metrale-jit
set -euo pipefail
CLI=$1
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
export METRALE_LOG_LEVEL=warn
ms() {
  local start
  start=$(date +%s%N)
  "$@" >/dev/null 2>&1 || { echo "FAILED: $*" >&2; exit 1; }
  echo $((($(date +%s%N) - start) / 1000000))
}
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
# The kernel templates in one flat folder, as the library embeds them (templates/ and src/ops/<op>/).
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
TEMPLATES=$W/templates
mkdir -p "$TEMPLATES"
cp "$ROOT"/templates/*.cuh "$ROOT"/src/ops/*/*.cuh "$TEMPLATES"/
BY_HAND=$(dirname "$CLI")/metrale-nvrtc-by-hand
FIRST_OP=$(dirname "$CLI")/metrale-first-op
"$CLI" targets --json >"$W/targets.json"
METRALE_CACHE_DIR=$W/seed "$CLI" build --target hopper --bundle "$W/bundle" >/dev/null
for _ in $(seq "${RUNS:-7}"); do
  rm -rf "$W/cold" "$W/empty"
  echo "cold $(METRALE_CACHE_DIR=$W/cold ms "$CLI" build --target hopper --pinned-only)"
  rm -rf "$W/cold"
  echo "cold_all $(METRALE_CACHE_DIR=$W/cold ms "$CLI" build --target hopper)"
  echo "warm $(METRALE_CACHE_DIR=$W/seed ms "$CLI" build --target hopper)"
  echo "bundle $(METRALE_CACHE_DIR=$W/empty METRALE_BUNDLE_DIR=$W/bundle ms "$CLI" build --target hopper)"
  rm -rf "$W/empty"
  echo "bundle_no_nvrtc $(METRALE_CACHE_DIR=$W/empty METRALE_BUNDLE_DIR=$W/bundle METRALE_NVRTC_LIBRARY=/nonexistent \
    ms "$CLI" build --target hopper)"
  echo "library_only $(ms "$CLI" targets)"
  echo "by_hand $(ms "$BY_HAND" "$W/targets.json" "$TEMPLATES" hopper)"
  rm -rf "$W/cold" "$W/empty"
  echo "first_op_cold $(METRALE_CACHE_DIR=$W/cold ms "$FIRST_OP")"
  echo "first_op_warm $(METRALE_CACHE_DIR=$W/seed ms "$FIRST_OP")"
  echo "first_op_bundle $(METRALE_CACHE_DIR=$W/empty METRALE_BUNDLE_DIR=$W/bundle ms "$FIRST_OP")"
done >"$W/times"
for kind in cold cold_all warm bundle bundle_no_nvrtc library_only by_hand first_op_cold first_op_warm first_op_bundle; do
  echo "$kind $(grep "^$kind " "$W/times" | awk '{print $2}' | median)"
done
