// ops/fp8_act_quant/fp8_act_quant.hpp: the FP8 activation-quant op's private interface (its
// arguments, launcher and typed entry are public: metrale/ops/fp8_act_quant.hpp): when the Hopper
// twin (per_token_group_quant_fp8_hopper) takes a launch instead of the shared kernel
// (per_token_group_quant_fp8), and the CPU references its check compares the kernels with.
// Each section below states its own invariants.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hardware/kernel_catalog.hpp"
#include "metrale/gpu/device_handles.hpp"
#include "metrale/gpu/kernel_params.hpp"
#include "metrale/gpu/launch_config.hpp"
#include "metrale/ops/fp8_act_quant.hpp"
#include "metrale/ops/op_declaration.hpp"
#include "ops/log_once.hpp"
#include "ops/op_checks.hpp"
#include "ops/op_guard_table.hpp"
#include "ops/op_verdict.hpp"

// ---- The kernels: their names, template name expressions and file ({LANES, GROUPS}), their
// parameter rules and their catalog declarations.
namespace metrale::ops {

static_assert(kFp8QuantGroupSize == detail::kQuantGroupSize, "the shared quantised-output checks assume this group");

}  // namespace metrale::ops

namespace metrale::ops {

inline constexpr std::string_view kFp8QuantSharedKernel = kFp8ActQuant;
inline constexpr std::string_view kFp8QuantTwinKernel = kFp8ActQuantHopper;
inline constexpr std::string_view kFp8QuantSharedTemplate = "metrale::kernels::per_token_group_quant_fp8";
inline constexpr std::string_view kFp8QuantTwinTemplate = "metrale::kernels::per_token_group_quant_fp8_hopper";
inline constexpr std::string_view kFp8QuantTemplateFile = "fp8_act_quant.cuh";

std::optional<KernelParamsProblem> check_fp8_act_quant(const KernelParams& p);
std::optional<KernelParamsProblem> check_fp8_act_quant_hopper(const KernelParams& p);
// Adds the shared kernel and its twin to `catalog`.
void add_fp8_act_quant_kernels(KernelCatalog& catalog);
// The declaration's tensor rules (names, nulls, optional tensors, alignments) on a typed call
// (validate_*_args), through the op's argument list (fp8_act_quant_op.cpp; ArgFields::require_library_tensors).
void require_fp8_act_quant_tensors(const Fp8QuantArgs& args);

// The op's check hook (OpDeclaration::check, fp8_act_quant_check.cpp).
std::vector<CheckResult> fp8_act_quant_check(const OpContext& context, const CheckOptions& options);
// The profile's hook (OpDeclaration::profile, fp8_act_quant_check.cpp).
std::shared_ptr<const OpProfile> fp8_act_quant_profile();

}  // namespace metrale::ops

// ---- When the Hopper FP8 activation-quant twin
// (per_token_group_quant_fp8_hopper) takes a launch instead of the shared kernel
// (per_token_group_quant_fp8): the CTA floor, the one grid function, the guard, the pick and
// the once-per-slot log.
// Invariants:
// - with the twin present and no shared kernel, fp8_act_quant_hopper_reject returns nullopt
//   (the twin runs) whatever the lever and the floor say;
// - fp8_quant_grid is the only source of both kernels' grids: the floor counts the CTAs of the
//   grid the twin launches, and the pick sets handle and grid from one decision.
// The twin packs 8 K-groups into a CTA, so its grid has about an eighth of the shared kernel's
// CTAs; it takes a launch only when that grid has >= 2 x sm_count CTAs. At sm_count = 132 the
// smallest M it takes is 53 (K = 5120), 44 (K = 6144), 16 (K = 17408).
namespace metrale::ops {

// CTAs per SM the twin's grid must reach (op_verdict.hpp's floor, shared with BA gates).
inline constexpr std::uint32_t kFp8QuantMinCtasPerSm = kMinCtasPerSm;

inline constexpr std::string_view kFp8QuantTooFewCtas = "too few CTAs to fill the device at 8 K-groups per CTA";

// Every reason fp8_act_quant_hopper_reject can return; one log flag each, by index.
inline constexpr std::array<std::string_view, 3> kFp8QuantRejects = {
    "not requested",
    "kernel absent from this image (kernels/hopper only)",
    kFp8QuantTooFewCtas,
};
inline constexpr std::size_t kFp8QuantLogSlots = kFp8QuantRejects.size() + 1;

// The grid of either kernel for an (m, k) row set: (m, ceil(K/128 / groups), 1) for the twin
// and (m, K/128 / groups, 1) for the shared kernel (the catalog fixes its groups at 1), `groups` being the
// K-groups per CTA of that kernel (the twin's 8 by default; the shared kernel ships with 1).
Dim3 fp8_quant_grid(bool twin, std::uint32_t m, std::uint32_t k, std::uint32_t groups = kFp8QuantGroups);

// The smallest twin grid, in CTAs, the floor accepts; sm_count 0 counts as 1; saturating.
std::uint32_t fp8_quant_min_ctas(std::uint32_t sm_count);
// CTAs the twin's grid launches for (m, k): the volume of fp8_quant_grid(true, ...), saturating.
std::uint32_t fp8_quant_hopper_ctas(std::uint32_t m, std::uint32_t k, std::uint32_t groups = kFp8QuantGroups);
// The smallest m the twin accepts at this k.
std::uint32_t fp8_quant_hopper_min_m(std::uint32_t k, std::uint32_t sm_count, std::uint32_t groups = kFp8QuantGroups);

// Why the twin is not running; nullopt means it runs. Order: twin absent; twin present and
// shared absent -> runs; not requested; too few CTAs.
// The CTA floor is past_twin_floor's (a tuning table's threshold, else the prediction).
std::optional<std::string_view> fp8_act_quant_hopper_reject(bool requested, bool twin_present, bool shared_present,
                                                            std::uint32_t m, std::uint32_t k, std::uint32_t sm_count,
                                                            std::uint32_t groups = kFp8QuantGroups,
                                                            std::optional<std::uint32_t> tuned_min_m = std::nullopt);

// One decision sets handle, grid and block together.
Fp8QuantPick fp8_quant_pick(bool requested, const Fp8QuantKernels& kernels, std::uint32_t m, std::uint32_t k,
                            std::uint32_t sm_count);

// The slot a verdict logs under, or nullopt when not logged (lever off). Pure.
std::optional<OpLogSlot> fp8_quant_log_slot(const Fp8QuantPick& pick);
// The line the verdict logs if its slot is unclaimed in `said` (claiming it); nullopt otherwise.
std::optional<std::string> fp8_quant_log_line(const Fp8QuantPick& pick, std::uint32_t m, std::uint32_t k,
                                              OnceSlots& said);
// The guard's table (kFp8QuantRejects) and the process-wide log slots derived from it.
const GuardTable& fp8_quant_guard();
OnceSlots& fp8_quant_log_slots();
// Logs the verdict through metrale::logger() at info, once per process per slot.
void fp8_quant_log(const Fp8QuantPick& pick, std::uint32_t m, std::uint32_t k);

}  // namespace metrale::ops

// ---- CPU references of the FP8 activation-quant op, with their
// own e4m3fn rounding (not CUDA's header), so they check the kernels independently.
// Invariants: e4m3_encode rounds to nearest even and saturates to +-448; fp8_act_quant_reference
// computes the same float scale and float quotient as the kernels, so its bytes equal theirs;
// the oracle keeps the scale and quotient in float64, unrounded.
namespace metrale::ref {

// e4m3fn: 1 sign, 4 exponent (bias 7), 3 mantissa bits; no infinities; 0x7f / 0xff are NaN.
std::uint8_t e4m3_encode(float value);
double e4m3_decode(std::uint8_t code);
// The spacing of e4m3 values at |value| (2^-9 below the smallest normal 2^-6).
double e4m3_step(double value);

struct Fp8RefShape {
  std::uint32_t m = 0, k = 0, x_row_stride = 0;
  bool pow2_scale = false;
};

struct Fp8RefResult {
  std::vector<std::uint8_t> q;  // [m][k]
  std::vector<float> scales;    // [m][k/128], row-major
};

// The kernels' arithmetic with the reference's own e4m3 rounding.
Fp8RefResult fp8_act_quant_reference(std::span<const std::uint16_t> x, const Fp8RefShape& shape);

struct Fp8OracleResult {
  std::vector<double> quotient;  // [m][k]: x / scale, unrounded
  std::vector<double> scales;    // [m][k/128]
};

// The float64 oracle: amax / 448 (or the next power of two at or above it) in double.
Fp8OracleResult fp8_act_quant_oracle(std::span<const std::uint16_t> x, const Fp8RefShape& shape);

}  // namespace metrale::ref
