#!/bin/sh
# fmt_formatter_left_to_libfmt.sh ARCHIVE: fails when an object in the library's archive compiled
# its own copy of fmt's formatter core (fmt::detail::vformat_to<char>), which
# src/ground/fmt_extern.hpp leaves to the shared libfmt: each copy cost about 6 s of a 9 s compile.
# A copy comes back when a file logs through spdlog without including ground/log.hpp.
set -eu
archive=$1
symbol='_ZN3fmt2v96detail10vformat_toIcEEvRNS1_6bufferIT_EE'
[ -f "$archive" ] || { echo "no archive at $archive" >&2; exit 1; }
copies=$(nm -A "$archive" 2>/dev/null | grep " W $symbol" | cut -d: -f2 | sort -u)
if [ -n "$copies" ]; then
  echo "these objects compile fmt::detail::vformat_to<char> themselves (include ground/log.hpp or"
  echo "ground/fmt_extern.hpp after fmt/format.h):"
  echo "$copies"
  exit 1
fi
# The call itself must still be there, as a reference into libfmt, or the check sees nothing.
nm "$archive" 2>/dev/null | grep -q " U $symbol" || { echo "no object calls fmt::detail::vformat_to<char>: the symbol's name moved; update this check" >&2; exit 1; }
echo "fmt's formatter core is left to libfmt in every object of $archive"
