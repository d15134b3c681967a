# steps.sh (sourced by tools/device_check.sh): runs one step under its limit, judges it, and
# rewrites results.json and summary.txt after every step, so a run cut short at any point still
# brings back the verdicts and rows it finished.
#   run_step NAME LOG CAP JUDGE CMD...   JUDGE: exit:N (passes on status N) or sanitizer:FILE
#                                        (passes on FILE's "ERROR SUMMARY: 0 errors" or
#                                        racecheck's "RACECHECK SUMMARY: N hazards ... (0 errors")
#   note NAME VERDICT DETAIL             a verdict reached without running anything
#   selected NAME                        whether --only / --skip leave NAME in
# Invariants: a step gets min(CAP, what is left of DEADLINE) seconds and then SIGTERM, SIGKILL 5 s
# later (the whole process group: timeout's own); its output streams into $OUT/LOG, which never
# grows past LOG_CAP bytes; a failure never stops the later steps; the results are written
# outside the deadline (their own 20 s limit).
# shellcheck shell=bash

STEPS=()
FAILED=0

selected() {  # env (and its bench-start) runs under any --only; only --skip env leaves it out
  local name=$1 group=$1
  case "$name" in memcheck | racecheck) group=sanitizers ;; env | bench-start) group=env ;; esac
  if [ -n "$ONLY" ] && [ "$group" != env ]; then
    [[ ",$ONLY," == *",$name,"* || ",$ONLY," == *",$group,"* ]] || return 1
  fi
  [[ ",$SKIP," == *",$name,"* || ",$SKIP," == *",$group,"* ]] && return 1
  return 0
}

# Appends stdin to $OUT/$1 while the file is under LOG_CAP bytes; past that, reads and drops.
cap_append() {
  local log="$OUT/$1" room
  room=$((LOG_CAP - $(stat -c %s "$log" 2>/dev/null || echo 0)))
  if [ "$room" -gt 0 ]; then head -c "$room" >>"$log"; fi
  if [ "$(wc -c)" -gt 0 ] || [ "$room" -le 0 ]; then
    [ -f "$SCRATCH/capped.$1" ] || { echo "[$1 capped at $LOG_CAP bytes]" >>"$log"; touch "$SCRATCH/capped.$1"; }
  fi
}

record() {  # NAME VERDICT SECONDS DETAIL
  STEPS+=("$1|$2|$3|${4//|//}")
  case "$2" in fail | timeout | mismatch) FAILED=1 ;; esac
  write_results
}

note() { record "$1" "$2" 0 "$3"; }

# The sanitizer's verdict from its own log (not from the exit status of the program it ran).
sanitizer_verdict() {  # FILE RC -> "verdict|detail"
  local file=$1 rc=$2 errors summary
  if grep -q "Device not supported" "$file" 2>/dev/null; then
    echo "unsupported|compute-sanitizer: Device not supported (exit $rc)"
  elif errors=$(grep -o 'ERROR SUMMARY: [0-9]* error' "$file" 2>/dev/null | tail -n1 | awk '{print $3}') &&
       [ -n "$errors" ]; then
    if [ "$errors" = 0 ]; then echo "pass|ERROR SUMMARY: 0 errors (program exit $rc)"
    else echo "fail|ERROR SUMMARY: $errors errors (program exit $rc)"; fi
  elif summary=$(grep -o 'RACECHECK SUMMARY: .*' "$file" 2>/dev/null | tail -n1) && [ -n "$summary" ]; then
    # racecheck sums up in its own line; its warnings are possible hazards, its errors real ones.
    errors=$(sed -n 's/.*(\([0-9]*\) errors.*/\1/p' <<<"$summary")
    if [ "$errors" = 0 ]; then echo "pass|$summary (program exit $rc)"
    else echo "fail|$summary (program exit $rc)"; fi
  elif [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
    echo "timeout|killed at its limit before the sanitizer's summary"
  else
    echo "fail|no ERROR SUMMARY in the sanitizer's log (exit $rc)"
  fi
}

run_step() {
  local name=$1 log=$2 cap=$3 judge=$4; shift 4
  if ! selected "$name"; then note "$name" skipped "not selected (--only/--skip)"; return; fi
  local left=$((DEADLINE - ($(date +%s) - START)))
  local limit=$((cap < left ? cap : left)) t0 rc verdict detail
  if [ "$left" -lt 5 ]; then note "$name" skipped "no time left under the ${DEADLINE}s deadline"; return; fi
  echo "=== $name: $* (limit ${limit}s, $(date -u +%T))" | cap_append "$log"
  # A sanitizer's own messages are judged too ("Device not supported" may skip its log file): a
  # copy of the step's output, which --print-limit keeps small, goes to the scratch folder.
  local copy=/dev/null
  [[ "$judge" == sanitizer:* ]] && copy="$SCRATCH/$name.stdout"
  t0=$(date +%s)
  timeout --kill-after=5 "$limit" "$@" 2>&1 | tee "$copy" | cap_append "$log"
  rc=${PIPESTATUS[0]}
  case "$judge" in
    sanitizer:*)
      local file=${judge#sanitizer:}
      cat "$file" "$copy" >"$file.judged" 2>/dev/null
      { head -n 200 "$file"; grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$file" | tail -n1; } 2>/dev/null | cap_append "$log"
      IFS='|' read -r verdict detail <<<"$(sanitizer_verdict "$file.judged" "$rc")" ;;
    exit:*)
      detail="exit $rc, log $log"
      if [ "$rc" = "${judge#exit:}" ]; then verdict=pass
      elif [ "$rc" = 77 ] && [ "$MODE" = device ]; then verdict=fail; detail="no CUDA device seen (exit 77), log $log"
      elif [ "$rc" = 77 ]; then verdict=skipped; detail="no device (exit 77), log $log"
      elif [ "$rc" = 124 ] || [ "$rc" = 137 ]; then verdict=timeout; detail="killed at ${limit}s, log $log"
      else verdict=fail; fi ;;
  esac
  LAST_VERDICT=$verdict
  record "$name" "$verdict" "$(($(date +%s) - t0))" "$detail"
}

verdict_of() {  # the recorded verdict of step NAME, or nothing
  local entry
  for entry in "${STEPS[@]}"; do [ "${entry%%|*}" = "$1" ] && { entry=${entry#*|}; echo "${entry%%|*}"; }; done
}

# results.json (the steps, the bench's and the peers' JSON, the side-by-side rows) and
# summary.txt, from whatever exists now.
write_results() {
  printf '%s\n' "${STEPS[@]}" >"$SCRATCH/steps.txt"
  timeout 20 python3 "$DC_DIR/results.py" "$SCRATCH" "$OUT" "$MODE" \
    "$(($(date +%s) - START))" >"$SCRATCH/results.out" 2>&1 ||
    echo "results.py failed: $(tail -n 3 "$SCRATCH/results.out")" >>"$SCRATCH/results.out"
}
