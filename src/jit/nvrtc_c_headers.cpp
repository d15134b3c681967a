// jit/nvrtc_c_headers.cpp: the built-in C headers' texts (NVRTC's device side is LP64: long and
// pointers are 64 bits) and which program gets them.
#include "jit/nvrtc_c_headers.hpp"

#include <algorithm>
#include <array>

#include "jit/entry_key.hpp"

namespace metrale {
namespace {

constexpr std::string_view kStddef = R"(#pragma once
typedef decltype(nullptr) nullptr_t;
#ifndef NULL
#define NULL 0
#endif
#define offsetof(type, member) ((size_t) & reinterpret_cast<const volatile char&>(((type*)0)->member))
namespace std { using ::size_t; using ::ptrdiff_t; using ::nullptr_t; }
)";

constexpr std::string_view kStdint = R"(#pragma once
typedef signed char int8_t;
typedef short int16_t;
typedef int int32_t;
typedef long int64_t;
typedef unsigned char uint8_t;
typedef unsigned short uint16_t;
typedef unsigned int uint32_t;
typedef unsigned long uint64_t;
typedef long intptr_t;
typedef unsigned long uintptr_t;
typedef long intmax_t;
typedef unsigned long uintmax_t;
typedef int8_t int_least8_t; typedef int16_t int_least16_t; typedef int32_t int_least32_t; typedef int64_t int_least64_t;
typedef uint8_t uint_least8_t; typedef uint16_t uint_least16_t; typedef uint32_t uint_least32_t; typedef uint64_t uint_least64_t;
typedef int8_t int_fast8_t; typedef long int_fast16_t; typedef long int_fast32_t; typedef int64_t int_fast64_t;
typedef uint8_t uint_fast8_t; typedef unsigned long uint_fast16_t; typedef unsigned long uint_fast32_t; typedef uint64_t uint_fast64_t;
#define INT8_MIN (-128)
#define INT16_MIN (-32768)
#define INT32_MIN (-2147483647 - 1)
#define INT64_MIN (-9223372036854775807L - 1)
#define INT8_MAX 127
#define INT16_MAX 32767
#define INT32_MAX 2147483647
#define INT64_MAX 9223372036854775807L
#define UINT8_MAX 255
#define UINT16_MAX 65535
#define UINT32_MAX 4294967295U
#define UINT64_MAX 18446744073709551615UL
#define INTPTR_MIN INT64_MIN
#define INTPTR_MAX INT64_MAX
#define UINTPTR_MAX UINT64_MAX
#define SIZE_MAX UINT64_MAX
#define INT8_C(c) c
#define INT16_C(c) c
#define INT32_C(c) c
#define INT64_C(c) c##L
#define UINT8_C(c) c
#define UINT16_C(c) c
#define UINT32_C(c) c##U
#define UINT64_C(c) c##UL
)";

constexpr std::string_view kCstdint = R"(#pragma once
#include <stdint.h>
namespace std {
using ::int8_t; using ::int16_t; using ::int32_t; using ::int64_t;
using ::uint8_t; using ::uint16_t; using ::uint32_t; using ::uint64_t;
using ::intptr_t; using ::uintptr_t; using ::intmax_t; using ::uintmax_t;
}
)";

constexpr std::string_view kLimits = R"(#pragma once
#define CHAR_BIT 8
#define SCHAR_MIN (-128)
#define SCHAR_MAX 127
#define UCHAR_MAX 255
#define CHAR_MIN SCHAR_MIN
#define CHAR_MAX SCHAR_MAX
#define SHRT_MIN (-32768)
#define SHRT_MAX 32767
#define USHRT_MAX 65535
#define INT_MIN (-2147483647 - 1)
#define INT_MAX 2147483647
#define UINT_MAX 4294967295U
#define LONG_MIN (-9223372036854775807L - 1)
#define LONG_MAX 9223372036854775807L
#define ULONG_MAX 18446744073709551615UL
#define LLONG_MIN (-9223372036854775807LL - 1)
#define LLONG_MAX 9223372036854775807LL
#define ULLONG_MAX 18446744073709551615ULL
)";

constexpr std::string_view kFloat = R"(#pragma once
#define FLT_RADIX 2
#define FLT_MANT_DIG 24
#define DBL_MANT_DIG 53
#define FLT_DIG 6
#define DBL_DIG 15
#define FLT_EPSILON 1.19209290e-7F
#define DBL_EPSILON 2.2204460492503131e-16
#define FLT_MIN 1.17549435e-38F
#define DBL_MIN 2.2250738585072014e-308
#define FLT_MAX 3.40282347e+38F
#define DBL_MAX 1.7976931348623157e+308
)";

// assert as CUDA's device assert: __assertfail, which NVRTC declares, stops the kernel.
constexpr std::string_view kAssert = R"(#undef assert
#ifdef NDEBUG
#define assert(e) (static_cast<void>(0))
#else
#define assert(e) ((e) ? static_cast<void>(0) : __assertfail(#e, __FILE__, __LINE__, __func__, sizeof(char)))
#endif
)";

// printf is an NVRTC built-in; malloc, free, memcpy and memset too.
constexpr std::string_view kStdio = R"(#pragma once
#include <stddef.h>
)";
constexpr std::string_view kStdlib = R"(#pragma once
#include <stddef.h>
#define EXIT_SUCCESS 0
#define EXIT_FAILURE 1
)";

constexpr std::array<NvrtcCHeader, 18> kHeaders{{
    {"assert.h", kAssert},
    {"cassert", kAssert},
    {"cfloat", kFloat},
    {"climits", kLimits},
    {"cstddef", kStddef},
    {"cstdint", kCstdint},
    {"cstdio", kStdio},
    {"cstdlib", kStdlib},
    {"cstring", kStdio},
    {"float.h", kFloat},
    {"inttypes.h", kStdint},
    {"limits.h", kLimits},
    {"stddef.h", kStddef},
    {"stdint.h", kStdint},
    {"stdio.h", kStdio},
    {"stdlib.h", kStdlib},
    {"string.h", kStdio},
    {"strings.h", kStdio},
}};

bool is_builtin(std::string_view name) {
  return std::any_of(kHeaders.begin(), kHeaders.end(), [&](const NvrtcCHeader& h) { return h.name == name; });
}

}  // namespace

std::span<const NvrtcCHeader> nvrtc_c_headers() { return kHeaders; }

std::vector<const NvrtcCHeader*> nvrtc_c_headers_for(const SourceSet& sources, std::string_view source) {
  bool named = false;
  for (const std::string& member : sources.digested_members(source)) {
    for (const std::string& included : included_names(sources.sources().find(member)->second)) {
      named = named || (is_builtin(included) && !sources.contains(included));
    }
  }
  std::vector<const NvrtcCHeader*> out;
  if (named) {
    for (const NvrtcCHeader& header : kHeaders) {
      if (!sources.contains(header.name)) {
        out.push_back(&header);
      }
    }
  }
  return out;
}

std::string c_headers_key_part(const SourceSet& sources, std::string_view source) {
  const std::vector<const NvrtcCHeader*> given = nvrtc_c_headers_for(sources, source);
  if (given.empty()) {
    return {};
  }
  std::string all;
  for (const NvrtcCHeader* header : given) {
    all.append(header->name).push_back('\0');
    all.append(header->text).push_back('\0');
  }
  return "+c-headers:" + fields_digest({&all});
}

}  // namespace metrale
