#!/usr/bin/env bash
# device_check.sh: the one call a lent GPU gets (DESIGN.md "Working on a lent GPU", issues 7, 17).
#   tools/device_check.sh --build     HERE: Release build staged into build-device/{bin,lib} with
#                                     BUILD_INFO (commit, dirty flag, source digest), the staged
#                                     folder proven complete, then the dry run against it.
#   tools/device_check.sh             ON THE DEVICE, from the repo root, build-device carried, in
#                                     this order: env (diagnostics; stops the run if the bench
#                                     cannot start, unless --force), verify (`metrale-jit verify`:
#                                     every kernel's check on this device, its table in
#                                     tests.log), tune (`metrale-jit tune --target hopper`: the
#                                     measured guard thresholds beside the predicted ones and the
#                                     table itself, in tests.log), bench (goal shapes first),
#                                     tests (tests/gpu), python (python/tests/test_cuda_torch.py
#                                     on the staged package), peers (tools/peers.py), memcheck and
#                                     racecheck (compute-sanitizer on the bench's --sanity;
#                                     skipped if the bench timed out). Files in $OUT: env.log,
#                                     bench.log, tests.log, peers.log, results.json, summary.txt.
#   tools/device_check.sh --dry-run   everything that needs no device, against the same binaries.
# Options: --only STEP[,STEP] / --skip STEP[,STEP] (verify, tune, bench, tests, python, peers, memcheck, racecheck,
#   sanitizers; env always runs unless skipped), --force (go on when the bench cannot start),
#   --deadline S (steps' total, default 360), --cap STEP=S, --log-cap BYTES (default 4 MiB),
#   --bench / --gpu-tests / --peers / --sanitizer PATH (stand-ins, for tests; --gpu-tests none),
#   --stage-from BUILD_DIR --stage-dir DIR (dry run: stage an existing build first, then check it).
# Environment: DEVICE_PYTHONS (python_ext.sh: the interpreters to build more extensions for; --build
#   finds python3.12+ here by itself), KEEP_OUT=1 (keep a dry run's files).
# Invariants: the steps share DEADLINE, each step at most its cap; results.json and summary.txt
# are rewritten after every step and once more at the end, outside the deadline; at most 6 files
# land in $OUT (the tool brings back 8); the exit status is 0 only when no step failed.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DC_DIR="$ROOT/tools/device_check"
# shellcheck source=device_check/stage.sh
source "$DC_DIR/stage.sh"
# shellcheck source=device_check/steps.sh
source "$DC_DIR/steps.sh"
# shellcheck source=device_check/env.sh
source "$DC_DIR/env.sh"
# shellcheck source=device_check/python_ext.sh
source "$DC_DIR/python_ext.sh"

STAGE="$ROOT/build-device"
MODE=device FORCE=0 ONLY="" SKIP="" DEADLINE=360 STAGE_FROM=""
export LOG_CAP=$((4 << 20))  # read by steps.sh
BENCH="" GPU_TESTS="" PEERS="" SANITIZER=compute-sanitizer
# tests: the GPU tests took 40-60 s on the H200 (NVRTC for their own kernels), so 150 s leaves room;
# python: torch's import, the host backend's reference at M = 300, K = 5120 and the closed-runtime test.
# tune: 4 roles x 16 Ms x 6 calls of tens of microseconds, with each point's buffers made afresh.
declare -A CAP=([verify]=60 [tune]=45 [bench]=150 [tests]=150 [python]=90 [peers]=150 [memcheck]=75 [racecheck]=75)
usage() { sed -n '2,28p' "${BASH_SOURCE[0]}"; }
while [ $# -gt 0 ]; do
  case "$1" in
    --build) MODE=build ;;
    --dry-run) MODE=dry ;;
    --force) FORCE=1 ;;
    --only) ONLY=$2; shift ;;
    --skip) SKIP=$2; shift ;;
    --deadline) DEADLINE=$2; shift ;;
    --cap) CAP[${2%%=*}]=${2#*=}; shift ;;
    --log-cap) LOG_CAP=$2; shift ;;
    --bench) BENCH=$2; shift ;;
    --gpu-tests) GPU_TESTS=$2; shift ;;
    --peers) PEERS=$2; shift ;;
    --sanitizer) SANITIZER=$2; shift ;;
    --stage-from) STAGE_FROM=$2; shift ;;
    --stage-dir) STAGE=$2; shift ;;
    -h | --help) usage; exit 0 ;;
    *) echo "device_check.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done
for name in ${ONLY//,/ } ${SKIP//,/ }; do
  case "$name" in env | verify | tune | bench | tests | python | peers | memcheck | racecheck | sanitizers) ;;
    *) echo "device_check.sh: unknown step '$name' (env verify tune bench tests python peers memcheck racecheck sanitizers)" >&2
       exit 2 ;;
  esac
done
BENCH=${BENCH:-$STAGE/bin/metrale-ops-bench}
GPU_TESTS=${GPU_TESTS:-$STAGE/bin/metrale_gpu_tests}
CLI=${CLI:-$STAGE/bin/metrale-jit}

# --- --build: here, Release, staged with its libraries, then the dry run -------------------
if [ "$MODE" = build ]; then
  WORK="$ROOT/build-device-work"
  cmake -S "$ROOT" -B "$WORK" -DCMAKE_BUILD_TYPE=Release -DMETRALE_BUILD_TESTS=ON -DMETRALE_BUILD_TOOLS=ON \
        >/dev/null || exit 1
  targets="metrale-ops-bench metrale-jit"
  cmake --build "$WORK" --target help | grep -q metrale_python && targets="$targets metrale_python"
  [ -n "$(ls "$ROOT"/tests/gpu/*.cpp 2>/dev/null)" ] && targets="$targets metrale_gpu_tests"
  # shellcheck disable=SC2086
  cmake --build "$WORK" -j"${JOBS:-2}" --target $targets || exit 1
  # The device's python3 is another version (3.12 there): one more extension per interpreter found.
  [ -d "$WORK/python/metrale" ] && build_python_extensions "$WORK"
  stage_from "$WORK" "$STAGE" || exit 1
  # The host profile's prediction of every kernel at the table's shapes, joined with the device's
  # measured rows by results.py (about a minute here).
  python3 "$ROOT/tools/profile_table.py" --cli "$WORK/tools/metrale-jit" --json "$STAGE/predicted.json" \
    >/dev/null || echo "device_check: the profile failed; the run will have no predictions" >&2
  exec "${BASH_SOURCE[0]}" --dry-run --stage-dir "$STAGE"
fi

# --- the checks (device run, or dry run) ---------------------------------------------------
if [ "$MODE" = dry ] || [ -z "${OUT:-}" ]; then OUT=$(mktemp -d /tmp/metrale-device-check.XXXXXX); fi
mkdir -p "$OUT"
SCRATCH=$(mktemp -d /tmp/metrale-device-scratch.XXXXXX)
trap 'rm -rf "$SCRATCH"' EXIT
START=$(date +%s)
# The predictions --build staged, for results.py to set beside the measured rows.
[ -f "$STAGE/predicted.json" ] && cp "$STAGE/predicted.json" "$SCRATCH/predicted.json"
setup_cuda_env
export METRALE_CACHE_DIR="$SCRATCH/cache"  # the bench fills it; the sanitizer runs read it
export PYTHONUNBUFFERED=1

# env: diagnostics first, so a run that fails later can be read; then can the bench start?
env_step() {
  local t0
  t0=$(date +%s)
  if selected env; then
    diagnostics 2>&1 | cap_append env.log
    record env pass "$(($(date +%s) - t0))" "diagnostics in env.log"
    IFS='|' read -r verdict detail <<<"$(build_info_verdict)"
    note build-info "$verdict" "$detail"
  fi
  run_step bench-start env.log 30 exit:0 "$BENCH" --help
  if [[ "$(verdict_of bench-start)" =~ ^(fail|timeout)$ ]] && [ "$FORCE" = 0 ]; then
    note stopped fail "the bench binary cannot start (see env.log); --force runs the other steps anyway"
    return 1
  fi
}

if [ "$MODE" = dry ] && [ -n "$STAGE_FROM" ]; then
  # Extensions for more interpreters only when asked (DEVICE_PYTHONS): a build each.
  [ -n "${DEVICE_PYTHONS:-}" ] && build_python_extensions "$STAGE_FROM" 2>&1 | cap_append env.log
  stage_from "$STAGE_FROM" "$STAGE" 2>&1 | cap_append env.log
  if [ "${PIPESTATUS[0]}" = 0 ]; then note stage pass "staged $STAGE_FROM into $STAGE"
  else note stage fail "staging failed (env.log)"; fi
fi
if [ "$MODE" = dry ] && [ -d "$STAGE/bin" ]; then
  verify_stage "$STAGE" 2>&1 | cap_append env.log
  if [ "${PIPESTATUS[0]}" = 0 ]; then note stage-complete pass "every library resolves in $STAGE/lib or the system"
  else note stage-complete fail "$STAGE is incomplete or has a foreign RUNPATH (env.log)"; fi
fi

# python: the package's CUDA path from PyTorch (test_cuda_torch.py skips without torch or a
# device) and, so the staged package is proven to load and run anywhere, its closed-runtime test
# on the host backend; on the staged package, from the checkout's tests.
# The staged package holds one extension per interpreter --build found (python_ext.sh); this
# machine's python3 must be able to load one of them, else the step says which it has and needs.
python_step() {
  local ext version
  if ! selected python; then note python skipped "not selected (--only/--skip)"; return; fi
  if [ ! -d "$STAGE/python/metrale" ]; then
    note python absent "no Python package in $STAGE/python (built without nanobind)"; return
  fi
  ext=$(staged_extension python3 "$STAGE/python/metrale")
  if [ -z "$ext" ]; then
    version=$(python3 -c 'import sys; print(sys.version.split()[0])' 2>&1)
    note python fail "python3 here is $version and loads none of the staged extensions ($(staged_extensions \
      "$STAGE/python/metrale")): rebuild with --build where nanobind and that version are found (DEVICE_PYTHONS)"
    return
  fi
  echo "python: $(command -v python3) loads $(basename "$ext")" | cap_append tests.log
  PYTHONPATH="$STAGE/python" run_step python tests.log "${CAP[python]}" exit:0 python3 -m pytest -q -p no:cacheprovider \
    -rs "$ROOT/python/tests/test_cuda_torch.py" "$ROOT/python/tests/test_closed.py"
}

if ! env_step; then
  :  # stopped: the bench cannot start, so nothing else can tell more; results and summary say so
elif [ "$MODE" = device ]; then
  # First: every kernel's verdict on this device (the first run of the device code since ecae987).
  if [ -x "$CLI" ]; then run_step verify tests.log "${CAP[verify]}" exit:0 "$CLI" verify
  else note verify skipped "no metrale-jit staged at $CLI"; fi
  # The guards' thresholds measured (issue 36): progress lines "measured M >= a, predicted M >= b"
  # and the table's TOML, both into tests.log (BENCHMARKS.md keeps them beside the predictions).
  if [ -x "$CLI" ]; then run_step tune tests.log "${CAP[tune]}" exit:0 "$CLI" tune --target hopper
  else note tune skipped "no metrale-jit staged at $CLI"; fi
  run_step bench bench.log "${CAP[bench]}" exit:0 "$BENCH" --json "$SCRATCH/bench.json"
  # The GPU tests read a few kernel files from the checkout; the staged binaries name the folder
  # they were built from, which this machine may not have.
  if [ -x "$GPU_TESTS" ]; then METRALE_TEST_SOURCE_DIR="$ROOT" run_step tests tests.log "${CAP[tests]}" exit:0 "$GPU_TESTS"
  else note tests absent "$GPU_TESTS not built"; fi
  python_step
  if [ -n "$PEERS" ]; then peers_cmd=("$PEERS"); else peers_cmd=(python3 "$ROOT/tools/peers.py"); fi
  peers_left=$((DEADLINE - ($(date +%s) - START)))
  peers_budget=$(( (peers_left < CAP[peers] ? peers_left : CAP[peers]) - 15 ))
  run_step peers peers.log "${CAP[peers]}" exit:0 "${peers_cmd[@]}" --time-budget-s "$((peers_budget > 5 ? peers_budget : 5))" \
    --json "$SCRATCH/peers.json"
  for tool in memcheck racecheck; do
    if [ "$(verdict_of bench)" = timeout ]; then note "$tool" skipped "the bench timed out: a sanitizer run would too"
    elif ! command -v "$SANITIZER" >/dev/null; then note "$tool" skipped "compute-sanitizer not on PATH"
    else
      run_step "$tool" tests.log "${CAP[$tool]}" "sanitizer:$SCRATCH/$tool.txt" "$SANITIZER" --tool "$tool" \
        --print-limit 20 --log-file "$SCRATCH/$tool.txt" "$BENCH" --sanity
    fi
  done
else
  # Dry run: the same binaries and scripts, with nothing that needs a device.
  no_device=77  # what the GPU binaries answer here; a dry run on a GPU machine passes too
  command -v nvidia-smi >/dev/null && no_device=0
  if [ -x "$CLI" ]; then run_step verify tests.log 60 exit:0 "$CLI" verify  # the host backend here
  else note verify skipped "no metrale-jit staged at $CLI"; fi
  if [ -x "$CLI" ]; then run_step tune tests.log 30 exit:0 "$CLI" tune --op fp8-quant --m 1,2 --k 1024 --repeats 1
  else note tune skipped "no metrale-jit staged at $CLI"; fi
  run_step bench-no-device bench.log 20 "exit:$no_device" "$BENCH" --sanity
  # The host emulation of every shape: killed at a 60 s cap under a load of 18 (2026-12-03).
  run_step bench bench.log 150 exit:0 "$BENCH" --host --json "$SCRATCH/bench.json"
  run_step sanity-host bench.log 30 exit:0 "$BENCH" --host --sanity
  if [ -x "$GPU_TESTS" ]; then METRALE_TEST_SOURCE_DIR="$ROOT" run_step tests tests.log 30 "exit:$no_device" "$GPU_TESTS"
  else note tests absent "no tests/gpu binary"; fi
  python_step
  run_step peers peers.log 30 exit:0 python3 "$ROOT/tools/peers.py" --dry-run --json "$SCRATCH/peers.json"
  run_step script-syntax env.log 10 exit:0 bash -c 'for f; do bash -n "$f" || exit 1; done' syntax \
    "${BASH_SOURCE[0]}" "$DC_DIR/stage.sh" "$DC_DIR/steps.sh" "$DC_DIR/env.sh" "$DC_DIR/python_ext.sh"
  if command -v compute-sanitizer >/dev/null; then note sanitizers present "compute-sanitizer found (not run: no device)"
  else note sanitizers absent "compute-sanitizer not on PATH here (the device image has it)"; fi
fi

# --- last: results.json and summary.txt, outside the deadline; the summary printed last ------
write_results
cat "$SCRATCH/results.out" 2>/dev/null
cat "$OUT/summary.txt" 2>/dev/null || echo "device_check.sh: no summary.txt (see results.out above)"
echo "OUT=$OUT"
[ "$MODE" = dry ] && [ -z "${KEEP_OUT:-}" ] && rm -rf "$OUT"  # KEEP_OUT=1 keeps the dry run's files
exit "$FAILED"
