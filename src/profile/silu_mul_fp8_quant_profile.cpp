// profile/silu_mul_fp8_quant_profile.cpp: the SiLU-and-mul FP8 quant op's summary over profile_op
// (its three launches, each priced as it runs): the parent's two launches summed, the twin, and
// the op's DRAM floor.
#include "profile/silu_mul_fp8_quant_profile.hpp"

#include <fmt/format.h>

#include "metrale/error.hpp"
#include "ops/op_kernels.hpp"
#include "ops/silu_mul_fp8_quant/silu_mul_fp8_quant.hpp"

namespace metrale {

SiluMulProfile profile_silu_mul_fp8_quant(const HardwareTarget& target, std::uint32_t m, std::uint32_t k,
                                          unsigned worker_threads) {
  for (const std::string_view kernel : {ops::kSiluMulParentKernel, ops::kFp8QuantSharedKernel}) {
    if (target.find_kernel(kernel) == nullptr) {
      throw ArgumentError(fmt::format("target {} does not ship {}", target.name, kernel));
    }
  }
  ProfileRequest request;
  request.op = ProfiledOp::kSiluMulFp8Quant;
  request.shape = ProfileShape{m, 0, k, 0};
  request.worker_threads = worker_threads;
  SiluMulProfile out;
  out.rows = profile_op(target, request);
  out.floor_bytes = ops::silu_mul_fp8_quant_floor_bytes(m, k);
  for (const KernelProfile& row : out.rows) {
    out.floor_us = row.floor_us;
    (row.role == "twin" ? out.twin_us : out.parent_us) += row.prediction.predicted_us;
  }
  return out;
}

}  // namespace metrale
