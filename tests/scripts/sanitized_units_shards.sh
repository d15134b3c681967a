#!/usr/bin/env bash
# sanitized_units_shards.sh RUNNER: tools/run_sanitized_units.sh (make sanitize's runner) over a
# stand-in for a Catch2 v2 binary that lists five cases, one named with ',' '[' and ']': every
# case runs in exactly one shard and the name reaches its shard escaped; a shard that runs fewer
# cases than it was given, or fails, fails the run with its reason.
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
FAKE
chmod +x "$work/fake_catch"
failures=0
expect() {  # expect STATUS TEXT ENV...: the runner's exit status and a line of its output
  local status=$1 text=$2
  shift 2
  : >"$work/ran"
  env RAN="$work/ran" SHARDS=2 "$@" "$runner" "$work/fake_catch" >"$work/out" 2>&1
  local got=$?
  if ((got != status)) || ! grep -qF -- "$text" "$work/out"; then
    echo "FAIL ($*): status $got (expected $status), output:" >&2
    cat "$work/out" >&2
    failures=$((failures + 1))
  fi
}
expect 0 "5 test cases in 2 shards, all passed"
if [[ $(sort "$work/ran" | tr '\n' '|') != 'a\, b \[x\]|fifth|fourth|plain|third|' ]]; then
  echo "FAIL: the shards ran $(tr '\n' '|' <"$work/ran"), not each listed case once, escaped" >&2
  failures=$((failures + 1))
fi
expect 1 "the binary lists 5 test cases but the shards ran 3" DROP=1
expect 1 "a test failed" FAIL=1
((failures == 0)) && echo "the sanitized-units runner shards, counts and fails as it should"
exit $((failures != 0))
