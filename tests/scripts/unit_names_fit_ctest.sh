#!/bin/sh
# unit_names_fit_ctest.sh BINARY: fails when a Catch2 case name holds a ';'. CTest reads a ';' in a
# discovered name as a list separator and makes two entries of it, each selecting no case, so the
# case would never run under ctest.
# (Catch2 v2 exits with the number of cases listed, so the status says nothing; an empty list does.)
names=$("$1" --list-test-names-only)
[ -n "$names" ] || { echo "no case names from $1" >&2; exit 1; }
bad=$(printf '%s\n' "$names" | grep -n ';')
if [ -n "$bad" ]; then
  printf 'test case names with a ";" (CTest splits them; use "," instead):\n%s\n' "$bad" >&2
  exit 1
fi
count=$(printf '%s\n' "$names" | grep -c .)
echo "$count case names, none with a ';'"
