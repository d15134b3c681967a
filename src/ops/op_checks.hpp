// op_checks.hpp (private): argument checks the ops share. Each throws metrale::ArgumentError
// with a message that names the op, the argument and the constraint.
#pragma once

#include <cstdint>
#include <string_view>

#include "metrale/gpu/device_handles.hpp"

namespace metrale::ops::detail {

[[noreturn]] void argument_error(std::string_view op, std::string_view message);

void require_non_null(std::string_view op, std::string_view name, DevicePtr ptr);
void require_aligned(std::string_view op, std::string_view name, DevicePtr ptr, std::uint64_t alignment);

// rows x row_elements x element_bytes, or an ArgumentError naming `what` when it overflows
// 64 bits.
std::uint64_t checked_extent_bytes(std::string_view op, std::string_view what, std::uint64_t rows,
                                   std::uint64_t row_elements, std::uint64_t element_bytes);

// The largest grid.x and grid.y a launch may use (CUDA's limits).
inline constexpr std::uint32_t kMaxGridX = 0x7fffffffu;
inline constexpr std::uint32_t kMaxGridY = 65535u;

// Elements per scale of a per-token-group quantised output (each library quantiser's group size
// equals it: the FP8 op's header checks kFp8QuantGroupSize against it).
inline constexpr std::uint32_t kQuantGroupSize = 128;

// The rules of a per-token-group FP8 quantiser's outputs (the FP8 op's and the SiLU-and-mul op's):
// column-major scales need m_aligned >= M and a multiple of 4; the q and scales extents fit 64
// bits; one CTA row per token (grid.x = M) and K/128 groups within grid.y.
void require_quantised_outputs(std::string_view op, std::uint32_t m, std::uint32_t k, bool column_major_scales,
                               std::uint32_t m_aligned);

}  // namespace metrale::ops::detail
