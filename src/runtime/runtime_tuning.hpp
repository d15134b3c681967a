// runtime/runtime_tuning.hpp (private): what a tuning table's provenance and rows are matched on,
// shared by the runtime's acceptance of a table (runtime_tuning.cpp) and the tuner that writes one
// (op_tuner.cpp), so both spell them one way.
// Invariant: each function is pure over its arguments (NVRTC's version is the process's one).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "metrale/gpu/gpu_backend.hpp"
#include "metrale/ops/op_declaration.hpp"
#include "metrale/ops/tuning_table.hpp"
#include "metrale/target/hardware_target.hpp"

namespace metrale {

// The SM count a table records and is matched on: the one the guards see (the device's, else the
// target's), as OpContext::sm_count gives it.
std::uint32_t tuning_sm_count(const GpuBackend& gpu, const HardwareTarget& target);
// "cuda" for a backend that runs compiled images, "host" for the host backend.
std::string tuning_backend_kind(const GpuBackend& gpu);
// NVRTC's version on a CUDA backend ("13-0"), "none" on the host backend or without NVRTC.
std::string tuning_nvrtc_version(const GpuBackend& gpu);

// The sizes a row is keyed on besides M: the op's scalar arguments named "n" and "k" (0 where the
// op has none).
struct TuningShape {
  std::uint32_t n = 0;
  std::uint32_t k = 0;
};
TuningShape tuning_shape_of(const ops::OpDeclaration& op, ops::OpArgValues values);

// Names where each guarded role's threshold in `out` comes from (RoleExplanation::threshold_origin):
// `table`'s row for the shape ("tuning table <file>, row i (...)"), else "prediction" (with
// `status`, a refusal, after it); a row that never won clears min_m and says why. `table` may be
// null. What Runtime::explain and the CLI's explain --tuning-table both say.
void explain_thresholds(const ops::OpContext& context, ops::OpArgValues values, const ops::TuningTable* table,
                        std::string_view file, std::string_view status, ops::Explanation& out);

}  // namespace metrale
