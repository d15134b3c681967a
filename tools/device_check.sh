#!/usr/bin/env bash
# device_check.sh: the one call a lent GPU gets (DESIGN.md "Working on a lent GPU", issue 7).
#   tools/device_check.sh --build     HERE: Release build staged into build-device/{bin,lib}
#                                     (non-system shared libraries bundled, RUNPATH $ORIGIN/../lib;
#                                     never libnvrtc or libcuda: the device's own are used), then
#                                     the dry run against what was staged.
#   tools/device_check.sh             ON THE DEVICE, from the repo root, build-device carried:
#                                     GPU and driver, tests/gpu, compute-sanitizer memcheck and
#                                     racecheck of each kernel at small shapes, the benchmark,
#                                     tools/peers.py; logs and results.json under $OUT; summary last.
#   tools/device_check.sh --dry-run   everything that needs no device, against the same binaries
#                                     (or --bench PATH --gpu-tests PATH|none), OUT a temp folder.
# Invariants: the whole device run stays under a 330 s deadline (each step gets what is left,
# capped); a step's failure is recorded, never stops the later steps; at most 7 files land in
# $OUT (the tool brings back 8); the exit status is 0 only when every step that ran passed.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
STAGE="$ROOT/build-device"
MODE=device
BENCH="" GPU_TESTS=""
while [ $# -gt 0 ]; do
  case "$1" in
    --build) MODE=build ;;
    --dry-run) MODE=dry ;;
    --bench) BENCH=$2; shift ;;
    --gpu-tests) GPU_TESTS=$2; shift ;;
    -h|--help) sed -n '2,17p' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) echo "device_check.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done
BENCH=${BENCH:-$STAGE/bin/metrale-ops-bench}
GPU_TESTS=${GPU_TESTS:-$STAGE/bin/metrale_gpu_tests}

# --- --build: here, Release, staged with its libraries -----------------------------------
if [ "$MODE" = build ]; then
  WORK="$ROOT/build-device-work"
  set -e
  # shellcheck disable=SC2016  # $ORIGIN is for the linker, not the shell
  cmake -S "$ROOT" -B "$WORK" -DCMAKE_BUILD_TYPE=Release -DMETRALE_BUILD_TESTS=ON -DMETRALE_BUILD_TOOLS=ON \
        -DCMAKE_BUILD_RPATH='$ORIGIN/../lib' >/dev/null
  targets="metrale-ops-bench metrale-jit"
  [ -n "$(ls "$ROOT"/tests/gpu/*.cpp 2>/dev/null)" ] && targets="$targets metrale_gpu_tests"
  # shellcheck disable=SC2086
  cmake --build "$WORK" -j"${JOBS:-2}" --target $targets
  rm -rf "$STAGE" && mkdir -p "$STAGE/bin" "$STAGE/lib"
  cp "$WORK/tools/metrale-ops-bench" "$WORK/tools/metrale-jit" "$STAGE/bin/"
  [ -f "$WORK/tests/metrale_gpu_tests" ] && cp "$WORK/tests/metrale_gpu_tests" "$STAGE/bin/"
  # Bundle every resolved library that is not the C runtime, the compiler's runtime or NVRTC.
  system='^(linux-vdso|ld-linux|libc|libm|libdl|libpthread|librt|libstdc\+\+|libgcc_s|libnvrtc|libcuda)\.'
  for binary in "$STAGE"/bin/*; do
    ldd "$binary" | awk '$3 ~ /^\// {print $1, $3}' | while read -r name path; do
      if ! [[ "$name" =~ $system ]] && [ ! -e "$STAGE/lib/$name" ]; then cp -L "$path" "$STAGE/lib/$name"; fi
    done
  done
  strip --strip-unneeded "$STAGE"/bin/* "$STAGE"/lib/* 2>/dev/null || true
  set +e
  echo "staged: $(ls "$STAGE/bin" | tr '\n' ' ')| bundled: $(ls "$STAGE/lib" | tr '\n' ' ')($(du -sh "$STAGE" | cut -f1))"
  for binary in "$STAGE"/bin/*; do
    if ldd "$binary" | grep -v libnvrtc | grep -q 'not found'; then
      echo "device_check.sh: $binary has unresolved libraries" >&2; ldd "$binary" >&2; exit 1
    fi
    # shellcheck disable=SC2016
    readelf -d "$binary" | grep -q 'RUNPATH.*\$ORIGIN/../lib' || { echo "no \$ORIGIN RUNPATH in $binary" >&2; exit 1; }
  done
  exec "${BASH_SOURCE[0]}" --dry-run
fi

# --- the checks (device run, or dry run) -------------------------------------------------
OUT=${OUT:-}
if [ "$MODE" = dry ] || [ -z "$OUT" ]; then OUT=$(mktemp -d /tmp/metrale-device-check.XXXXXX); fi
mkdir -p "$OUT"
SCRATCH=$(mktemp -d /tmp/metrale-device-scratch.XXXXXX)
START=$(date +%s)
DEADLINE=330
STEPS=()
FAILED=0

# NVRTC and its headers from the machine's own CUDA (the device's CUDA 13).
find_cuda_dir() {  # $1: a file to find, echoes the folder holding it
  local pyroot
  pyroot=$(python3 -c 'import nvidia, os; print(os.path.dirname(nvidia.__path__[0]))' 2>/dev/null || true)
  for d in /usr/local/cuda/lib64 /usr/local/cuda/include /usr/local/cuda/targets/x86_64-linux/lib \
           /usr/local/cuda-13*/lib64 /usr/local/cuda-13*/include ${pyroot:+$pyroot/nvidia/cu13/lib} \
           ${pyroot:+$pyroot/nvidia/cu13/include} ${pyroot:+$pyroot/nvidia/cuda_nvrtc/lib}; do
    [ -e "$d/$1" ] && { echo "$d"; return; }
  done
}
if ! ldconfig -p 2>/dev/null | grep -q 'libnvrtc.so.13'; then
  nvrtc_dir=$(find_cuda_dir libnvrtc.so.13)
  [ -n "$nvrtc_dir" ] && export LD_LIBRARY_PATH="$nvrtc_dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
[ -z "${METRALE_CUDA_INCLUDE_DIR:-}" ] && inc=$(find_cuda_dir cuda_fp8.h) && [ -n "$inc" ] &&
  export METRALE_CUDA_INCLUDE_DIR="$inc"
# The CUDA tools may sit outside PATH on the device image.
export PATH="$PATH:/usr/local/cuda/bin:/usr/local/nvidia/bin"
for d in /usr/local/cuda/compute-sanitizer /usr/local/cuda-13*/compute-sanitizer /opt/nvidia/compute-sanitizer; do
  command -v compute-sanitizer >/dev/null || { [ -x "$d/compute-sanitizer" ] && export PATH="$PATH:$d"; }
done
export METRALE_CACHE_DIR="$SCRATCH/cache"  # the bench fills it; the sanitizer runs read it
export PYTHONUNBUFFERED=1

# step NAME LOG CAP EXPECT CMD...: runs CMD with what is left of the deadline (at most CAP s),
# appends its output to $OUT/LOG; EXPECT is the passing exit status ("0", or "77" for "no
# device" in the dry run); a 77 that was not expected is a skip, not a failure.
step() {
  local name=$1 log=$2 cap=$3 expect=$4; shift 4
  local left=$((DEADLINE - ($(date +%s) - START)))
  local limit=$((cap < left ? cap : left))
  if [ "$limit" -lt 5 ]; then
    STEPS+=("$name|skipped|0|no time left under the ${DEADLINE}s deadline"); return
  fi
  echo "=== $name: $* (limit ${limit}s)" >>"$OUT/$log"
  local t0 rc
  t0=$(date +%s)
  timeout --kill-after=5 "$limit" "$@" >>"$OUT/$log" 2>&1
  rc=$?
  local took=$(($(date +%s) - t0)) verdict
  if [ "$rc" = "$expect" ]; then verdict=pass
  elif [ "$rc" = 77 ]; then verdict=skipped
  elif [ "$rc" = 124 ] || [ "$rc" = 137 ]; then verdict=timeout; FAILED=1
  else verdict=fail; FAILED=1; fi
  STEPS+=("$name|$verdict|$took|exit $rc, log $log")
}

note() { STEPS+=("$1|$2|0|$3"); }

if [ "$MODE" = device ]; then
  if command -v nvidia-smi >/dev/null; then
    step gpu gpu.log 20 0 nvidia-smi
    step gpu-query gpu.log 20 0 nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem,clocks.max.sm \
      --format=csv
  else
    note gpu fail "nvidia-smi not found"; FAILED=1
  fi
  if [ -x "$GPU_TESTS" ]; then step gpu-tests tests.log 60 0 "$GPU_TESTS"; else note gpu-tests absent "$GPU_TESTS not built"; fi
  step bench bench.log 120 0 "$BENCH" --json "$SCRATCH/bench.json"
  if command -v compute-sanitizer >/dev/null; then
    for tool in memcheck racecheck; do
      step "$tool" sanitizer.log 60 0 compute-sanitizer --tool "$tool" --error-exitcode 9 "$BENCH" --sanity
    done
  else
    note memcheck skipped "compute-sanitizer not on PATH"; note racecheck skipped "compute-sanitizer not on PATH"
  fi
  step peers peers.log 150 0 python3 "$ROOT/tools/peers.py" --time-budget-s 100 --json "$SCRATCH/peers.json"
else
  # Dry run: the same binaries and scripts, with nothing that needs a device.
  no_device=77  # what the GPU binaries answer here; a dry run on a GPU machine passes too
  command -v nvidia-smi >/dev/null && no_device=0
  step start-bench bench.log 20 0 "$BENCH" --help
  step bench-no-device bench.log 20 "$no_device" "$BENCH" --sanity
  step bench-host bench.log 60 0 "$BENCH" --host --json "$SCRATCH/bench.json"
  step sanity-host bench.log 30 0 "$BENCH" --host --sanity
  if [ -x "$GPU_TESTS" ]; then step gpu-tests tests.log 30 "$no_device" "$GPU_TESTS"; else note gpu-tests absent "no tests/gpu binary"; fi
  step peers-dry-run peers.log 30 0 python3 "$ROOT/tools/peers.py" --dry-run --json "$SCRATCH/peers.json"
  step script-syntax bench.log 10 0 bash -n "${BASH_SOURCE[0]}"
  if command -v compute-sanitizer >/dev/null; then note sanitizer present "compute-sanitizer found (not run: no device)"
  else note sanitizer absent "compute-sanitizer not on PATH here (the device image has it)"; fi
fi

# --- results.json: the steps, the bench and the peers, in one file -----------------------
printf '%s\n' "${STEPS[@]}" >"$SCRATCH/steps.txt"
step results results.log 20 0 python3 - "$SCRATCH" "$OUT/results.json" "$MODE" <<'PY'
import json, os, sys, datetime
scratch, out, mode = sys.argv[1:4]
def load(name):
    path = os.path.join(scratch, name)
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f)
steps = []
for line in open(os.path.join(scratch, "steps.txt")):
    name, verdict, seconds, detail = line.rstrip("\n").split("|", 3)
    steps.append(dict(step=name, verdict=verdict, seconds=int(seconds), detail=detail))
result = dict(tool="tools/device_check.sh", mode=mode, date=datetime.date.today().isoformat(),
              steps=steps, bench=load("bench.json"), peers=load("peers.json"))
# One row per op and shape: the floor at the copy ceiling, our kernels, the peers, as times and ratios.
bench, peers, rows = result["bench"] or {}, result["peers"] or {}, {}
ceiling = (bench.get("ceiling") or {}).get("bytes_per_s")
for r in bench.get("kernels", []):
    row = rows.setdefault((r["op"], r["m"], r["k"]), dict(op=r["op"], m=r["m"], k=r["k"], bytes=r["bytes"]))
    row[r["kernel"]] = r["median_us"] if r["checked"] else "WRONG"
for r in peers.get("cases", []):
    row = rows.setdefault((r["op"], r["m"], r["k"]), dict(op=r["op"], m=r["m"], k=r["k"], bytes=r["bytes"]))
    row[r["peer"]] = r.get("median_us") if r.get("ok") else ("ERROR" if "error" in r else "WRONG")
def us(v):
    return f"{v:.2f}" if isinstance(v, (int, float)) else ("-" if v is None else str(v))
cols = ["twin", "parent", "shared", "torch_eager", "torch_compile"]
print(f"{'op':<14} {'M':>5} {'K':>6} {'floor':>8} " + " ".join(f"{c:>13}" for c in cols) + "  twin/floor  best peer/twin")
for key in sorted(rows):
    row = rows[key]
    row["floor_us"] = row["bytes"] / ceiling * 1e6 if ceiling else None
    twin = row.get("twin")
    peer_times = [row[p] for p in ("torch_eager", "torch_compile") if isinstance(row.get(p), (int, float))]
    ok = isinstance(twin, (int, float))
    row["twin_over_floor"] = twin / row["floor_us"] if ok and row["floor_us"] else None
    row["best_peer_over_twin"] = min(peer_times) / twin if ok and peer_times else None
    print(f"{row['op']:<14} {row['m']:>5} {row['k']:>6} {us(row['floor_us']):>8} " +
          " ".join(f"{us(row.get(c)):>13}" for c in cols) +
          f"  {us(row['twin_over_floor']):>10}  {us(row['best_peer_over_twin']):>14}")
result["comparison"] = [rows[k] for k in sorted(rows)]
with open(out, "w") as f:
    json.dump(result, f, indent=2)
print("wrote", out, "with", len(steps), "steps; bench:", result["bench"] is not None, "peers:", result["peers"] is not None)
PY

# --- summary last (the reply carries the end of the output) ------------------------------
{
  [ "$MODE" = device ] && [ -s "$OUT/bench.log" ] && sed -n '/^metrale-ops-bench:/,$p' "$OUT/bench.log" | tail -n 60
  [ "$MODE" = device ] && [ -s "$OUT/peers.log" ] && sed -n '/^peers.py:/,$p' "$OUT/peers.log" | tail -n 50
  echo; echo "side by side (us; floor = fewest bytes at the copy ceiling measured by the bench):"
  grep -v '^===' "$OUT/results.log"
  echo
  echo "device_check.sh ($MODE) $(date -u +%FT%TZ), $(($(date +%s) - START)) s, OUT=$OUT"
  printf '%-16s %-8s %5s  %s\n' step verdict secs detail
  for entry in "${STEPS[@]}"; do IFS='|' read -r n v s d <<<"$entry"; printf '%-16s %-8s %5s  %s\n' "$n" "$v" "$s" "$d"; done
} | tee "$OUT/summary.txt"
rm -rf "$SCRATCH"
[ "$MODE" = dry ] && [ -z "${KEEP_OUT:-}" ] && rm -rf "$OUT"  # KEEP_OUT=1 keeps the dry run's files
exit "$FAILED"
