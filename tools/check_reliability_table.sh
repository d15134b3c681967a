#!/usr/bin/env bash
# check_reliability_table.sh: every test RELIABILITY.md points at must exist. `unit: NAME` must be
# a test case of metrale_unit_tests (from the first build dir); `ctest: NAME` a CTest test in any
# of the build dirs given (host_asan_* exists only in the ASan build). Exits 1 naming each miss.
# Usage: tools/check_reliability_table.sh [build dir, default build] [more build dirs...]
set -euo pipefail
cd "$(dirname "$0")/.."
dirs=("${@:-build}")
# Catch2 v2 exits with the number of tests it listed, so the status says nothing here.
units=$("${dirs[0]}/tests/metrale_unit_tests" --list-test-names-only | sed 's/[[:space:]]*$//' || true)
[[ -n $units ]] || { echo "no test names from ${dirs[0]}/tests/metrale_unit_tests" >&2; exit 1; }
ctests=""
for d in "${dirs[@]}"; do
  [[ -d $d ]] && ctests+=$(cd "$d" && ctest -N | sed -n 's/^ *Test *#[0-9]*: //p')$'\n'
done
missing=0
checked=0
while IFS= read -r ref; do
  kind=${ref%%: *}
  name=${ref#*: }
  case $kind in
    unit) list=$units ;;
    ctest) list=$ctests ;;
    *) continue ;;
  esac
  checked=$((checked + 1))
  if ! grep -qxF -- "$name" <<<"$list"; then
    echo "RELIABILITY.md: no $kind test named '$name'" >&2
    missing=$((missing + 1))
  fi
done < <(grep -o '`\(unit\|ctest\): [^`]*`' RELIABILITY.md | tr -d '`' | sort -u)
echo "reliability table: $checked distinct test names checked, $missing missing"
[[ $missing -eq 0 ]]
