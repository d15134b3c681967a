#!/usr/bin/env bash
# check_exports.sh NM HEADER LIBRARY [EXECUTABLE...]: what the library's binaries export.
# - LIBRARY (libmetrale.so) exports exactly the functions HEADER (metrale/metrale.h) declares
#   METRALE_API: nothing of the C++ inside, not even the host prelude (a host-JIT object gets its
#   functions as a table, include/metrale/host/thread_context.hpp), and no C ABI function missing.
# - Each EXECUTABLE (linking the static library) exports none of the library's C++ symbols: no
#   --export-dynamic or dynamic list reaches an engine through the library's link options.
# Exit 0 when all hold; otherwise every difference is printed.
set -euo pipefail
if (($# < 3)); then
  echo "usage: $0 NM HEADER LIBRARY [EXECUTABLE...]" >&2
  exit 2
fi
nm=$1 header=$2 library=$3
shift 3
status=0

declared=$(grep -oE 'METRALE_API[^(]*\bmetrale_[a-z0-9_]+\(' "$header" | grep -oE 'metrale_[a-z0-9_]+\($' | tr -d '(' |
  sort -u)
exported=$("$nm" -D --defined-only "$library" | awk '{print $NF}' | sort -u)
if [[ -z "$declared" || -z "$exported" ]]; then
  echo "check_exports: read no C ABI from $header or no dynamic symbols from $library" >&2
  exit 1
fi
extra=$(comm -13 <(echo "$declared") <(echo "$exported"))
missing=$(comm -23 <(echo "$declared") <(echo "$exported"))
if [[ -n "$extra" ]]; then
  echo "check_exports: $library exports what $header does not declare (cmake/metrale_c.map):" >&2
  echo "$extra" | sed 's/^/  /' >&2
  status=1
fi
if [[ -n "$missing" ]]; then
  echo "check_exports: $library does not export what $header declares:" >&2
  echo "$missing" | sed 's/^/  /' >&2
  status=1
fi
echo "check_exports: $library exports $(echo "$exported" | wc -l) symbols, $(echo "$declared" | wc -l) declared"

for executable in "$@"; do
  # nm's own failure (an unreadable file, a wrong tool) must fail the check, not read as "none".
  if ! symbols=$("$nm" -D --defined-only -C "$executable"); then
    echo "check_exports: $nm cannot read $executable" >&2
    status=1
    continue
  fi
  leaked=$(grep -E ' metrale::' <<<"$symbols" || true)
  if [[ -n "$leaked" ]]; then
    echo "check_exports: $executable exports the library's C++ symbols (an --export-dynamic?):" >&2
    echo "$leaked" | sed -n '1,5s/^/  /p' >&2
    status=1
  else
    echo "check_exports: $executable exports none of the library's C++ symbols"
  fi
done
exit $status
