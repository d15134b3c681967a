// op_checks.cpp: argument checks the ops share.
#include "ops/op_checks.hpp"

#include <fmt/format.h>

#include "metrale/error.hpp"
#include "metrale/ops/op_declaration.hpp"

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

DeclaredTensors::DeclaredTensors(std::span<const ArgDecl> args) {
  for (std::size_t i = 0; i < args.size(); ++i) {
    const ArgDecl& arg = args[i];
    if (arg.tensor()) {
      tensors_.push_back({.at = i,
                          .name = arg.name,
                          .alignment = arg.alignment != 0 ? arg.alignment : dtype_bytes(arg.dtype),
                          .optional = arg.optional});
    }
  }
}

void DeclaredTensors::require(std::string_view op, std::span<const std::uint64_t> values) const {
  for (const Tensor& tensor : tensors_) {
    if (tensor.at >= values.size()) {
      continue;  // a value list shorter than the declaration: check_value_count's to refuse
    }
    const std::uint64_t value = values[tensor.at];
    // The common case in a few instructions (every call walks this); the messages out of line.
    if ((value != 0 && value % tensor.alignment == 0) || (value == 0 && tensor.optional)) {
      continue;
    }
    require_non_null(op, tensor.name, DevicePtr{value});
    require_aligned(op, tensor.name, DevicePtr{value}, tensor.alignment);
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

void require_quantised_outputs(std::string_view op, std::uint32_t m, std::uint32_t k, bool column_major_scales,
                               std::uint32_t m_aligned) {
  if (column_major_scales && (m_aligned < m || m_aligned % 4 != 0)) {
    argument_error(op, fmt::format("column-major scales need m_aligned >= M and a multiple of 4 (m_aligned={}, M={})",
                                   m_aligned, m));
  }
  checked_extent_bytes(op, "q extent (M x K e4m3)", m, k, 1);
  const std::uint64_t scale_rows = column_major_scales ? m_aligned : m;
  checked_extent_bytes(op, "scales extent", scale_rows, k / kQuantGroupSize, 4);
  if (m > kMaxGridX) {
    argument_error(op, fmt::format("M={} exceeds the largest grid.x ({})", m, kMaxGridX));
  }
  if (k / kQuantGroupSize > kMaxGridY) {
    argument_error(
        op, fmt::format("K={} has {} groups per row, more than grid.y allows ({})", k, k / kQuantGroupSize, kMaxGridY));
  }
}

}  // namespace metrale::ops::detail
