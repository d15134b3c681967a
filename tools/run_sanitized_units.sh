#!/usr/bin/env bash
# run_sanitized_units.sh BINARY: runs the ASan + UBSan unit tests (make sanitize) in
# SHARDS processes at once (default: the machine's cores, at most 4), each over every SHARDS-th
# test case of the binary's list, and fails unless every shard passed and together they ran every
# listed case exactly once (a lost case is a failure, not a smaller suite). The cases already run
# side by side under ctest -j, each in its own folder, so shards share no state.
# A shard is retried ONCE only when it failed in LeakSanitizer's own stop-the-world tracer after
# every test passed ("Tracer caught signal 11" then "LeakSanitizer has encountered a fatal error"):
# an intermittent crash of the sanitizer runtime at exit, not a leak or a test failure (seen here
# once in four full runs of this suite, 2026-12-04; upstream: google/sanitizers#1353). A leak
# report, a sanitizer report or a failed test is never retried: the exit status stands.
set -uo pipefail
binary=$1
shards=${SHARDS:-$(nproc)}
((shards > 4)) && shards=4
((shards < 1)) && shards=1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Catch2 v2 exits with the number of cases it listed, so the list's length is what is checked.
# It reads a names file line by line as test specs: ',', '[' and ']' in a name are escaped.
"$binary" --list-test-names-only >"$work/names" || true
listed=$(grep -c . "$work/names" || true)
if ((listed == 0)); then
  echo "run_sanitized_units: $binary listed no test cases" >&2
  exit 1
fi
for ((shard = 0; shard < shards; shard++)); do
  awk -v n="$shards" -v s="$shard" 'NF && (NR - 1) % n == s { gsub(/[],[]/, "\\\\&"); print }' \
    "$work/names" >"$work/shard$shard"
done

only_tracer_crashed() {
  grep -q '^All tests passed' "$1" && grep -q '^Tracer caught signal' "$1" &&
    grep -q 'LeakSanitizer has encountered a fatal error' "$1" && ! grep -q 'ERROR: LeakSanitizer: detected' "$1" &&
    ! grep -q 'ERROR: AddressSanitizer\|runtime error:' "$1"
}

run_shard() {
  local shard=$1 log="$work/log$1"
  for attempt in 1 2; do
    "$binary" -f "$work/shard$shard" >"$log" 2>&1
    local status=$?
    if ((status == 0)); then
      return 0
    fi
    if ((attempt == 1)) && only_tracer_crashed "$log"; then
      echo "run_sanitized_units: shard $shard: every test passed, then LeakSanitizer's tracer crashed at exit" \
        "(not a leak): running the shard once more" >&2
      continue
    fi
    return "$status"
  done
}

pids=()
for ((shard = 0; shard < shards; shard++)); do
  run_shard "$shard" &
  pids+=($!)
done
failed=0
ran=0
for ((shard = 0; shard < shards; shard++)); do
  wait "${pids[$shard]}"
  status=$?
  echo "==== shard $((shard + 1)) of $shards (exit $status)"
  cat "$work/log$shard"
  ((status != 0)) && failed=1
  cases=$(sed -n 's/^All tests passed (.* in \([0-9]*\) test cases*)$/\1/p' "$work/log$shard" | tail -1)
  ran=$((ran + ${cases:-0}))
done
if ((failed)); then
  exit 1
fi
if ((ran != listed)); then
  echo "run_sanitized_units: the binary lists $listed test cases but the shards ran $ran" >&2
  exit 1
fi
echo "run_sanitized_units: $ran test cases in $shards shards, all passed"
