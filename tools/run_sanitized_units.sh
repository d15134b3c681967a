#!/usr/bin/env bash
# run_sanitized_units.sh BINARY [ARGS...]: runs the ASan + UBSan unit tests (make sanitize) and
# retries ONCE only when the run failed in LeakSanitizer's own stop-the-world tracer after every
# test passed ("Tracer caught signal 11" then "LeakSanitizer has encountered a fatal error"): an
# intermittent crash of the sanitizer runtime at exit, not a leak or a test failure (seen here
# once in four full runs of this suite, 2026-12-04; upstream: google/sanitizers#1353). A leak
# report, a sanitizer report or a failed test is never retried: the exit status stands.
set -uo pipefail
log=$(mktemp)
trap 'rm -f "$log"' EXIT
for attempt in 1 2; do
  "$@" 2>&1 | tee "$log"
  status=${PIPESTATUS[0]}
  if ((status == 0)); then
    exit 0
  fi
  if ((attempt == 1)) && grep -q '^All tests passed' "$log" && grep -q '^Tracer caught signal' "$log" &&
    grep -q 'LeakSanitizer has encountered a fatal error' "$log" && ! grep -q 'ERROR: LeakSanitizer: detected' "$log" &&
    ! grep -q 'ERROR: AddressSanitizer\|runtime error:' "$log"; then
    echo "run_sanitized_units: every test passed, then LeakSanitizer's tracer crashed at exit (not a leak):" \
      "running the suite once more" >&2
    continue
  fi
  exit "$status"
done
