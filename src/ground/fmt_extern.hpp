// ground/fmt_extern.hpp: tells the compiler that the shared libfmt already holds fmt's formatting
// core, so a file that logs does not compile its own copy.
// Why: with fmt 9 spdlog's logger calls fmt::detail::vformat_to<char> (a template defined in
// fmt/format.h, which fmt 9 does not declare extern), so every file with one logger() call
// instantiated and optimised the whole formatter (floats, Dragonbox, padding): about 7 of a
// 9 s compile at -O2 -g, in ~30 of the library's files. libfmt.so.9 exports that instantiation
// (format.cc instantiates it), so declaring it extern changes no behaviour, only where the code
// lives. fmt 10 declares it extern itself; a header-only fmt has no library to hold it.
// Invariant: included after <fmt/format.h> (it includes it); a no-op outside fmt 9 built shared
// and outside GCC.
#pragma once

#include <fmt/format.h>

// GCC only: clang mangles this instantiation's name differently from the GCC that built libfmt
// (the `std::conditional<std::is_same<...>::value, ...>` in its type), so clang's reference would
// not link (seen in the fuzz build); clang keeps its own copy.
#if FMT_VERSION >= 90000 && FMT_VERSION < 100000 && !defined(FMT_HEADER_ONLY) && defined(__GNUC__) && \
    !defined(__clang__)
namespace fmt {
inline namespace v9 {
namespace detail {
extern template void vformat_to<char>(buffer<char>& out, basic_string_view<char> format,
                                      basic_format_args<buffer_context<char>> args, locale_ref loc);
}  // namespace detail
}  // namespace v9
}  // namespace fmt
#endif
