// jit/nvrtc_c_headers.hpp: the C and C++ library headers a .cu file written for nvcc keeps at its
// top (<stdio.h>, <assert.h>, <stdlib.h>, <string.h>, <stdint.h>, <cstdint>, ...), which NVRTC
// does not have ("cannot open source file"), given to NVRTC as minimal built-in headers the way
// Jitify does: what device code can use from them (fixed-width integers and their limits,
// size_t/ptrdiff_t/NULL, assert through the device's __assertfail, float limits); printf, malloc,
// free, memcpy and memset are NVRTC built-ins already.
// Invariants: a built-in is given only to a program whose sources name one of these headers and
// only under a name the source set does not hold (an engine's own header of that name wins);
// c_headers_key_part() changes whenever a text here changes, so a cache entry compiled against
// older texts is never served (variant_builder adds it to such a source's key). Pure.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "metrale/jit/source_set.hpp"

namespace metrale {

struct NvrtcCHeader {
  std::string_view name;  // "stdint.h", "cstdint"
  std::string_view text;
};

// Every built-in header, in name order.
std::span<const NvrtcCHeader> nvrtc_c_headers();

// The built-ins the program of `source` gets: every one whose name the set does not hold, when
// some member of `source`'s include closure names one of them with #include; else none.
std::vector<const NvrtcCHeader*> nvrtc_c_headers_for(const SourceSet& sources, std::string_view source);

// "" when `source` gets no built-in, else "+c-headers:<digest of every built-in's name and text>".
std::string c_headers_key_part(const SourceSet& sources, std::string_view source);

}  // namespace metrale
