#!/usr/bin/env bash
# bench_refused_test.sh BENCH MODE: metrale-ops-bench on the host backend (--sanity) with a
# template folder whose FP8 twin has a planted mistake (it writes the other scale kind, as
# tests/support/edited_templates.hpp plants it), verification MODE isolated (in a child process)
# or inline. The twin's rows must be printed as REFUSED with verification's reason and kept in the
# JSON with it, never dropped; the other kernels' rows still pass; the exit status is 3.
# Invariants: a private cache folder (no verdict of another run is read); every check prints what
# it expected and what it saw.
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BENCH=${1:?the metrale-ops-bench binary}
MODE=${2:?isolated or inline}
WORK=$(mktemp -d /tmp/metrale-bench-refused.XXXXXX)
trap '[ -n "${KEEP_WORK:-}" ] || rm -rf "$WORK"' EXIT
errors=0
fail() { echo "FAIL: $*"; errors=$((errors + 1)); }

# The template folder: the checkout's templates as the library embeds them (one flat set: the
# shared ones in templates/, each op's in src/ops/<op>/), with the twin's call of the scale store
# edited (its last occurrence; the shared kernel's comes first).
mkdir -p "$WORK/templates"
cp "$ROOT"/templates/*.cuh "$ROOT"/src/ops/*/*.cuh "$WORK/templates/"
[ -f "$WORK/templates/fp8_act_quant.cuh" ] || { echo "FAIL: no fp8_act_quant.cuh under $ROOT/src/ops"; exit 1; }
python3 - "$WORK/templates/fp8_act_quant.cuh" <<'PY' || { echo "FAIL: the anchor moved: update this test"; exit 1; }
import sys
path = sys.argv[1]
text = open(path).read()
anchor = "scale_stride_g, pow2_scale != 0u);"
at = text.rfind(anchor)
assert at > text.find(anchor) >= 0, "need two calls: the shared kernel's and the twin's"
open(path, "w").write(text[:at] + "scale_stride_g, pow2_scale == 0u);" + text[at + len(anchor):])
PY

METRALE_CACHE_DIR="$WORK/cache" METRALE_TEMPLATE_DIR="$WORK/templates" timeout 600 "$BENCH" --host --sanity \
  --verify "$MODE" --json "$WORK/bench.json" >"$WORK/stdout" 2>&1
rc=$?
[ "$rc" = 3 ] || fail "exit status $rc, expected 3 (a kernel refused)"
grep -Eq '^fp8_act_quant +twin .*REFUSED .*refused by verification: failed its check on' "$WORK/stdout" ||
  fail "no REFUSED twin row with verification's reason in the table"
grep -Eq '^fp8_act_quant +shared .* ok$' "$WORK/stdout" || fail "the shared kernel's rows are not ok"
grep -Eq '^ssm_ba_gates +twin .* ok$' "$WORK/stdout" || fail "the BA twin's rows are not ok"
[ "$MODE" != isolated ] || grep -q '^verification: verified in a child process: ' "$WORK/stdout" ||
  fail "the head does not say the kernels were verified in a child process"
python3 - "$WORK/bench.json" <<'PY' || fail "bench.json lacks the refused rows or their reason"
import json, sys
report = json.load(open(sys.argv[1]))
twins = [k for k in report["kernels"] if k["op"] == "fp8_act_quant" and k["kernel"] == "twin"]
assert twins and all(k["refused"] and "failed its check" in k["refused"] and not k["checked"] for k in twins), twins
assert all(k["refused"] is None and k["checked"] for k in report["kernels"] if k not in twins), report["kernels"]
assert report["verification"], report
PY
if [ "$errors" != 0 ]; then
  echo "--- the bench's output:"; cat "$WORK/stdout"
  exit 1
fi
echo "bench_refused_test.sh $MODE: ok"
