#!/usr/bin/env bash
# fake_run_test.sh SCENARIO: runs tools/device_check.sh in its device mode with stand-ins for the
# bench, the GPU tests, the peers, compute-sanitizer and nvidia-smi (written here, no GPU needed),
# and checks what comes back in $OUT. Scenarios (each a CTest, tests/cmake/device_check.cmake):
#   hang       the bench prints one row, saves its JSON, then hangs: it is killed at its 3 s cap,
#              results.json still holds its row and the other steps' rows, sanitizers are skipped;
#              the staged predictions (predicted.json) are joined with the measured row
#   all-fail   every stand-in exits 1: without --force the run stops after env; with --force
#              every step fails; both still write results.json and summary.txt
#   sanitizer  memcheck passes on "ERROR SUMMARY: 0 errors" though the program exits 3,
#              racecheck's "Device not supported" is unsupported, its "RACECHECK SUMMARY: 0 hazards"
#              passes and one with errors fails, a chatty step's log is capped,
#              --only runs only what it names
#   peers-sigterm  tools/peers.py stopped by SIGTERM mid-run exits 143 with its JSON written
#   python-abi  the python step on a stage whose extensions this python3 cannot load (another
#              version's tag; an abi3 one under 3.12) fails naming what is staged, without running
#              pytest; staged_extension picks this interpreter's own tag, and abi3 only from 3.12 on
#   bad-stage BUILD   a stage made from BUILD verifies; one with the build tree's RUNPATH
#              (/usr/local/cuda/lib) and a bundled library missing does not, and both are named
# Invariants: at most 6 files in $OUT; every check prints what it expected and what it saw.
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
SCENARIO=${1:?scenario}
WORK=$(mktemp -d /tmp/metrale-dc-fake.XXXXXX)
trap '[ -n "${KEEP_WORK:-}" ] || rm -rf "$WORK"' EXIT
FAKES="$WORK/fakes"
mkdir -p "$FAKES"
errors=0
fail() { echo "FAIL: $*"; errors=$((errors + 1)); }

fake() {  # NAME BODY: an executable stand-in; FAKE_EXIT (default 0) is every stand-in's status
  printf '#!/usr/bin/env bash\n%s\n' "$2" >"$FAKES/$1"
  chmod +x "$FAKES/$1"
}
fake nvidia-smi 'echo "NVIDIA H200 (stand-in), 580.00"; exit "${FAKE_EXIT:-0}"'
fake bench '
[ "$1" = --help ] && { echo "usage: bench"; exit "${FAKE_EXIT:-0}"; }
[ "$1" = --sanity ] && { echo "sanity: a check failed"; exit 3; }
json=$2
echo "ssm_ba_gates   twin     8192   5120     612.00  ok"
printf "%s" "{\"kernels\": [{\"op\": \"ssm_ba_gates\", \"kernel\": \"twin\", \"m\": 8192, \"k\": 5120, \"bytes\": 88015232, \"checked\": true, \"median_us\": 612.0}], \"ceiling\": {\"bytes_per_s\": 4.3e12}}" >"$json"
[ -n "${FAKE_HANG:-}" ] && sleep 600
exit "${FAKE_EXIT:-0}"'
fake gpu-tests 'head -c "${FAKE_CHATTER:-100}" /dev/zero | tr "\0" "x"; echo; echo "All tests passed"; exit "${FAKE_EXIT:-0}"'
fake peers '
while [ $# -gt 0 ]; do [ "$1" = --json ] && json=$2; shift; done
printf "%s" "{\"cases\": [{\"op\": \"ssm_ba_gates\", \"peer\": \"torch_eager\", \"m\": 8192, \"k\": 5120, \"bytes\": 88015232, \"ok\": true, \"median_us\": 300.0}]}" >"$json"
echo "ssm_ba_gates torch_eager 8192 5120 300.00"; exit "${FAKE_EXIT:-0}"'
fake sanitizer '
while [ $# -gt 0 ]; do case "$1" in --tool) tool=$2 ;; --log-file) log=$2 ;; esac; shift; done
if [ "$tool" = racecheck ]; then
  # racecheck ends with its own summary line, not memcheck'"'"'s ERROR SUMMARY (as on the H200)
  case "${FAKE_RACECHECK:-unsupported}" in
    clean) echo "========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)" >"$log"; exit 0 ;;
    hazards) echo "========= RACECHECK SUMMARY: 3 hazards displayed (2 errors, 1 warnings)" >"$log"; exit 0 ;;
    *) echo "========= Error: Device not supported"; : >"$log"; exit 1 ;;
  esac
fi
echo "========= ERROR SUMMARY: 0 errors" >"$log"; exit "${FAKE_SANITIZER_EXIT:-3}"'

run_check() {  # OUT_NAME ARGS...: runs the device check into $WORK/OUT_NAME
  local out="$WORK/$1"; shift
  mkdir -p "$out"
  OUT="$out" PATH="$FAKES:$PATH" timeout 120 bash "$ROOT/tools/device_check.sh" --bench "$FAKES/bench" \
    --gpu-tests "$FAKES/gpu-tests" --peers "$FAKES/peers" --sanitizer "$FAKES/sanitizer" --stage-dir "$WORK/stage" "$@" \
    >"$WORK/$(basename "$out").stdout" 2>&1
  echo $?
}

# verdicts OUT: "step=verdict ..." from results.json, and checks the files that came back.
verdicts() {
  local out="$WORK/$1" count
  count=$(find "$out" -type f | wc -l)
  [ "$count" -le 6 ] || fail "$1: $count files in OUT, at most 6 allowed: $(ls "$out")"
  [ -s "$out/summary.txt" ] || fail "$1: no summary.txt"
  python3 -c 'import json, sys; r = json.load(open(sys.argv[1])); print(" ".join(s["step"] + "=" + s["verdict"] for s in r["steps"]))' \
    "$out/results.json" 2>&1 || fail "$1: results.json missing or unreadable"
}

expect() {  # LABEL WANTED_SUBSTRING HAYSTACK
  [[ " $3 " == *" $2 "* ]] || fail "$1: expected '$2' in: $3"
}

case "$SCENARIO" in
  hang)
    mkdir -p "$WORK/stage"  # the profile's prediction for the bench's row, as --build stages it
    printf '%s' '[{"bench_key": {"op": "ssm_ba_gates", "kernel": "twin", "m": 8192, "k": 5120, "n": 96},
      "predicted_us": 1166.32, "bound": "l2"}, {"bench_key": {"op": "ssm_ba_gates", "kernel": "mma",
      "m": 8192, "k": 5120, "n": 96}, "predicted_us": 33.42, "bound": "l2"}]' >"$WORK/stage/predicted.json"
    rc=$(FAKE_HANG=1 run_check out --cap bench=3)
    v=$(verdicts out)
    for want in env=pass bench-start=pass bench=timeout tests=pass peers=pass memcheck=skipped racecheck=skipped; do
      expect hang "$want" "$v"
    done
    [ "$rc" != 0 ] || fail "hang: exit status 0 with a timed-out step"
    python3 - "$WORK/out/results.json" <<'PY' || fail "hang: the killed bench's row or the peers' row is not in results.json"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["bench"]["kernels"][0]["median_us"] == 612.0, r["bench"]
row = r["comparison"][0]
assert row["twin"] == 612.0 and row["torch_eager"] == 300.0, row
joined = r["predicted_vs_measured"]
assert len(joined) == 1 and joined[0]["kernel"] == "twin", joined  # no measured mma row: no join
assert abs(joined[0]["measured_over_predicted"] - 612.0 / 1166.32) < 1e-9, joined
PY
    grep -q "measured/predicted 0.52" "$WORK/out/summary.txt" || fail "hang: summary.txt lacks predicted vs measured"
    grep -q "ssm_ba_gates   twin     8192" "$WORK/out/bench.log" || fail "hang: the row the bench printed is not in bench.log"
    ;;
  all-fail)
    rc=$(FAKE_EXIT=1 FAKE_SANITIZER_EXIT=1 run_check stop)
    v=$(verdicts stop)
    expect all-fail bench-start=fail "$v"
    expect all-fail stopped=fail "$v"
    [[ "$v" != *"bench="* ]] || fail "all-fail: steps ran after the bench could not start: $v"
    [ "$rc" != 0 ] || fail "all-fail: exit status 0"
    rc=$(FAKE_EXIT=1 run_check forced --force)
    v=$(verdicts forced)
    for want in bench-start=fail bench=fail tests=fail peers=fail; do expect all-fail "$want" "$v"; done
    grep -q "bench-start" "$WORK/forced/summary.txt" || fail "all-fail: summary.txt lacks the steps table"
    ;;
  sanitizer)
    rc=$(FAKE_CHATTER=100000 run_check out --log-cap 4096)
    v=$(verdicts out)
    for want in bench=pass tests=pass peers=pass memcheck=pass racecheck=unsupported; do expect sanitizer "$want" "$v"; done
    [ "$rc" = 0 ] || fail "sanitizer: exit status $rc, expected 0 (unsupported is not a failure)"
    size=$(stat -c %s "$WORK/out/tests.log")
    [ "$size" -le 4200 ] || fail "sanitizer: tests.log is $size bytes, capped at 4096"
    grep -q "capped at 4096" "$WORK/out/tests.log" || fail "sanitizer: tests.log does not say it was capped"
    FAKE_RACECHECK=clean run_check race-clean --only racecheck >/dev/null
    expect sanitizer racecheck=pass "$(verdicts race-clean)"
    FAKE_RACECHECK=hazards run_check race-hazards --only racecheck >/dev/null
    expect sanitizer racecheck=fail "$(verdicts race-hazards)"
    run_check only --only tests,memcheck >/dev/null
    v=$(verdicts only)
    for want in env=pass tests=pass memcheck=pass bench=skipped peers=skipped racecheck=skipped; do expect only "$want" "$v"; done
    ;;
  bad-stage)
    # shellcheck source=../../tools/device_check/stage.sh
    source "$ROOT/tools/device_check/stage.sh"
    build=${2:?bad-stage needs the build folder}
    stage_from "$build" "$WORK/stage" >/dev/null || fail "bad-stage: staging $build failed"
    verify_stage "$WORK/stage" || fail "bad-stage: a fresh stage does not verify"
    cp "$build/tools/metrale-ops-bench" "$WORK/stage/bin/"  # the build tree's RUNPATH, not the stage's
    patchelf --set-rpath /usr/local/cuda/lib "$WORK/stage/bin/metrale-ops-bench"
    rm "$WORK/stage/lib/libfmt.so.9"
    problems=$(verify_stage "$WORK/stage")
    [ $? != 0 ] || fail "bad-stage: a foreign RUNPATH and a missing library verified"
    [[ "$problems" == *"RUNPATH entry '/usr/local/cuda/lib'"* ]] || fail "bad-stage: the foreign RUNPATH was not named: $problems"
    [[ "$problems" == *"needs libfmt.so.9"* ]] || fail "bad-stage: the missing libfmt was not named: $problems"
    ;;
  python-abi)
    # shellcheck source=../../tools/device_check/python_ext.sh
    source "$ROOT/tools/device_check/python_ext.sh"
    mkdir -p "$WORK/stage/python/metrale"
    own=$(python3 -c 'import importlib.machinery as m; print(m.EXTENSION_SUFFIXES[0])')
    minor=$(python3 -c 'import sys; print(sys.version_info[1])')
    other=".cpython-3$((minor + 1))-x86_64-linux-gnu.so"  # the next version's tag: not loadable here
    touch "$WORK/stage/python/metrale/_native$other"
    [ -z "$(staged_extension python3 "$WORK/stage/python/metrale")" ] ||
      fail "python-abi: python3 would load _native$other, another version's extension"
    rc=$(run_check out --only python)
    v=$(verdicts out)
    expect python-abi python=fail "$v"
    python3 -c 'import json, sys; r = json.load(open(sys.argv[1])); d = [s["detail"] for s in r["steps"] if s["step"] == "python"][0]; assert "loads none of the staged extensions" in d and sys.argv[2] in d, d' \
      "$WORK/out/results.json" "_native$other" || fail "python-abi: the python step does not name the staged extension"
    ! grep -q "pytest\|test_cuda_torch" "$WORK/out/tests.log" 2>/dev/null || fail "python-abi: pytest ran without a loadable extension"
    [ "$rc" != 0 ] || fail "python-abi: exit status 0 with the python step failed"
    touch "$WORK/stage/python/metrale/_native.abi3.so"
    got=$(staged_extension python3 "$WORK/stage/python/metrale")
    if python3 -c 'import sys; sys.exit(sys.version_info < (3, 12))'; then
      [ "$got" = "$WORK/stage/python/metrale/_native.abi3.so" ] || fail "python-abi: 3.12+ does not take the abi3 extension: '$got'"
    else
      [ -z "$got" ] || fail "python-abi: python3 < 3.12 would load the stable-ABI (3.12) extension: '$got'"
    fi
    touch "$WORK/stage/python/metrale/_native$own"
    got=$(staged_extension python3 "$WORK/stage/python/metrale")
    [ "$got" = "$WORK/stage/python/metrale/_native$own" ] || fail "python-abi: its own tag _native$own not preferred: '$got'"
    ;;
  peers-sigterm)
    # A stand-in torch whose device query blocks: SIGTERM mid-run still leaves peers.py's JSON.
    mkdir -p "$WORK/py/torch"
    # The stand-in marks when peers.py reached it (its SIGTERM handler is installed by then): a
    # fixed sleep raced python's start-up on a loaded machine and killed it before the handler.
    printf 'import pathlib, time\n__version__ = "0-stand-in"\nclass cuda:\n    @staticmethod\n    def is_available():\n        pathlib.Path("%s").touch()\n        time.sleep(60)\n' \
      "$WORK/torch-reached" >"$WORK/py/torch/__init__.py"
    PYTHONPATH="$WORK/py" python3 "$ROOT/tools/peers.py" --json "$WORK/peers.json" >"$WORK/peers.stdout" 2>&1 &
    pid=$!
    for _ in $(seq 600); do
      [ -e "$WORK/torch-reached" ] && break
      sleep 0.1
    done
    [ -e "$WORK/torch-reached" ] || fail "peers-sigterm: peers.py never asked torch for a device within 60 s"
    kill -TERM "$pid"
    wait "$pid"
    rc=$?
    [ "$rc" = 143 ] || fail "peers-sigterm: exit status $rc, expected 143"
    python3 -c 'import json, sys; r = json.load(open(sys.argv[1])); assert r["stopped"] == "SIGTERM" and r["plan"], r' \
      "$WORK/peers.json" || fail "peers-sigterm: no JSON saying it was stopped"
    ;;
  *) echo "unknown scenario $SCENARIO"; exit 2 ;;
esac
if [ "$errors" != 0 ]; then
  echo "--- device_check.sh output:"; cat "$WORK"/*.stdout
  exit 1
fi
echo "fake_run_test.sh $SCENARIO: ok"
