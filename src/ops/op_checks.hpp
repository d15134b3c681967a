// op_checks.hpp (private): argument checks the ops share. Each throws metrale::ArgumentError
// with a message that names the op, the argument and the constraint.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "metrale/gpu/device_handles.hpp"

namespace metrale::ops {
struct ArgDecl;
}  // namespace metrale::ops

namespace metrale::ops::detail {

[[noreturn]] void argument_error(std::string_view op, std::string_view message);

void require_non_null(std::string_view op, std::string_view name, DevicePtr ptr);
void require_aligned(std::string_view op, std::string_view name, DevicePtr ptr, std::uint64_t alignment);

// The tensor rules of a declaration's argument list, read once (when an op's declaration or a
// declared op's program is built) so a call walks its tensors alone: the one pointer check of every
// op, library or declared, so a typed call and the declaration never disagree on a name or an
// alignment. Holds views of `args`' names: `args` must outlive it.
class DeclaredTensors {
 public:
  DeclaredTensors() = default;
  explicit DeclaredTensors(std::span<const ArgDecl> args);

  // Each tensor as `values` (the call's values in declaration order) gives it: non-null unless
  // declared optional and left out (0), aligned to its declared alignment (its element size where
  // it states none); else an ArgumentError naming `op`, the tensor and the rule.
  void require(std::string_view op, std::span<const std::uint64_t> values) const;

 private:
  struct Tensor {
    std::size_t at = 0;
    std::string_view name;
    std::uint64_t alignment = 1;
    bool optional = false;
  };
  std::vector<Tensor> tensors_;
};

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
