#!/usr/bin/env bash
# sanitized_units_shards.sh RUNNER: tools/run_sanitized_units.sh (make sanitize's runner) over a
# stand-in for a Catch2 v2 binary that lists five cases, one named with ',' '[' and ']': every
# case runs in exactly one shard and the name reaches its shard escaped; a shard that runs fewer
# cases than it was given, or fails, fails the run with its reason. LeakSanitizer's tracer
# crashing at exit after every test passed reruns that chunk alone, at most twice; a leak report
# or a third crash fails.
set -uo pipefail
runner=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat >"$work/fake_catch" <<'FAKE'
#!/usr/bin/env bash
if [[ $1 == --list-test-names-only ]]; then
  printf 'a, b [x]\nplain\nthird\nfourth\nfifth\n'
  exit 5  # Catch2 v2 exits with the number of cases listed
fi
cat "$2" >>"$RAN"
n=$(grep -c . "$2")
((n -= ${DROP:-0}))
[[ -n ${FAIL:-} ]] && { echo "a test failed"; exit 1; }
echo "All tests passed ($((n * 3)) assertions in $n test case$( ((n == 1)) || echo s))"
# TRACER=N: the process over "plain" crashes in the tracer at exit N times (counted in $RAN.tracer);
# LEAK=1: it reports a leak after its tests passed.
if grep -qx plain "$2"; then
  if [[ -n ${LEAK:-} ]]; then
    echo "==1==ERROR: LeakSanitizer: detected memory leaks"
    exit 1
  fi
  crashes=$(grep -c . "$RAN.tracer" 2>/dev/null)
  if ((${crashes:-0} < ${TRACER:-0})); then
    echo crash >>"$RAN.tracer"
    echo "Tracer caught signal 11: addr=0x0 pc=0x1 sp=0x2"
    echo "==1==LeakSanitizer has encountered a fatal error."
    exit 1
  fi
fi
FAKE
chmod +x "$work/fake_catch"
failures=0
expect() {  # expect STATUS TEXT ENV...: the runner's exit status and a line of its output
  local status=$1 text=$2
  shift 2
  : >"$work/ran"
  rm -f "$work/ran.tracer"
  env RAN="$work/ran" SHARDS=2 "$@" "$runner" "$work/fake_catch" >"$work/out" 2>&1
  local got=$?
  if ((got != status)) || ! grep -qF -- "$text" "$work/out"; then
    echo "FAIL ($*): status $got (expected $status), output:" >&2
    cat "$work/out" >&2
    failures=$((failures + 1))
  fi
}
expect 0 "5 test cases in 2 shards (chunks of at most 50), all passed"
if [[ $(sort "$work/ran" | tr '\n' '|') != 'a\, b \[x\]|fifth|fourth|plain|third|' ]]; then
  echo "FAIL: the shards ran $(tr '\n' '|' <"$work/ran"), not each listed case once, escaped" >&2
  failures=$((failures + 1))
fi
expect 1 "the binary lists 5 test cases but the shards ran 3" DROP=1
expect 1 "a test failed" FAIL=1
# Shard 1 holds "plain" and "fourth"; in chunks of one, a tracer crash reruns "plain" alone.
expect 0 "5 test cases in 2 shards (chunks of at most 1), all passed" CHUNK_CASES=1 TRACER=2
if [[ $(sort "$work/ran" | tr '\n' '|') != 'a\, b \[x\]|fifth|fourth|plain|plain|plain|third|' ]]; then
  echo "FAIL: after two tracer crashes the chunks ran $(tr '\n' '|' <"$work/ran"), not plain thrice" >&2
  failures=$((failures + 1))
fi
expect 1 "Tracer caught signal 11" CHUNK_CASES=1 TRACER=3
expect 1 "detected memory leaks" LEAK=1
if [[ $(grep -c . "$work/ran") != 5 ]]; then
  echo "FAIL: a leak report was retried: $(tr '\n' '|' <"$work/ran")" >&2
  failures=$((failures + 1))
fi
((failures == 0)) && echo "the sanitized-units runner shards, counts and fails as it should"
exit $((failures != 0))
