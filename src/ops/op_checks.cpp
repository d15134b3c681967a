// op_checks.cpp: argument checks both ops share.
#include "op_checks.hpp"

#include <fmt/format.h>

#include "metrale/error.hpp"

namespace metrale::ops::detail {

void argument_error(std::string_view op, std::string_view message) {
  throw ArgumentError(fmt::format("{}: {}", op, message));
}

void require_non_null(std::string_view op, std::string_view name, DevicePtr ptr) {
  if (ptr.is_null()) {
    argument_error(op, fmt::format("{} is a null pointer", name));
  }
}

void require_aligned(std::string_view op, std::string_view name, DevicePtr ptr, std::uint64_t alignment) {
  if (ptr.address % alignment != 0) {
    argument_error(op, fmt::format("{} (0x{:x}) is not {}-byte aligned", name, ptr.address, alignment));
  }
}

std::uint64_t checked_extent_bytes(std::string_view op, std::string_view what, std::uint64_t rows,
                                   std::uint64_t row_elements, std::uint64_t element_bytes) {
  std::uint64_t elements = 0;
  std::uint64_t bytes = 0;
  if (__builtin_mul_overflow(rows, row_elements, &elements) ||
      __builtin_mul_overflow(elements, element_bytes, &bytes)) {
    argument_error(op, fmt::format("{} ({} rows x {} elements x {} bytes) overflows 64 bits", what, rows, row_elements,
                                   element_bytes));
  }
  return bytes;
}

}  // namespace metrale::ops::detail
