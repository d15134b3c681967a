#!/usr/bin/env bash
# mma_sweep.sh: ON THE DEVICE, from the repo root with build-device carried (tools/device_check.sh
# --build here first): times every variant in tools/bench/mma_variants.txt with
# tools/bench/variant_sweep.py (NVRTC on the device, no rebuild; M 8192, 1024 and 264, so both the
# goal shape and the guard's crossover move), after the same NVRTC/include set-up as the device
# check. Writes sweep.log and sweep.json to $OUT (a temporary folder when unset); extra arguments
# go to variant_sweep.py (e.g. --plan, --repeats 10). About 5 s per variant on an H200.
# Invariant: only $OUT is written.
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=../device_check/env.sh
source "$ROOT/tools/device_check/env.sh"
setup_cuda_env
OUT=${OUT:-$(mktemp -d /tmp/metrale-mma-sweep.XXXXXX)}
python3 "$ROOT/tools/bench/variant_sweep.py" --bench "${BENCH:-$ROOT/build-device/bin/metrale-ops-bench}" \
  --hardware "$ROOT/hardware" --variants-file "$ROOT/tools/bench/mma_variants.txt" --m 8192 1024 264 \
  --repeats 20 --timeout 40 --json "$OUT/sweep.json" "$@" 2>&1 | tee "$OUT/sweep.log"
status=${PIPESTATUS[0]}
echo "OUT=$OUT"
exit "$status"
