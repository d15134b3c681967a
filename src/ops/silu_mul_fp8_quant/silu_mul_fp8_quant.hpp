// ops/silu_mul_fp8_quant/silu_mul_fp8_quant.hpp: the SiLU-and-mul FP8 quant op's private
// interface: its arguments and launches, its kernels as catalog declarations, the twin's guard,
// and the CPU references its check compares the kernels with. Each section below states its own
// invariants.
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
#include "metrale/gpu/gpu_backend.hpp"
#include "metrale/gpu/kernel_params.hpp"
#include "metrale/gpu/launch_config.hpp"
#include "metrale/ops/fp8_act_quant.hpp"
#include "metrale/ops/op_declaration.hpp"
#include "metrale/target/hardware_target.hpp"
#include "ops/fp8_act_quant/fp8_act_quant.hpp"
#include "ops/log_once.hpp"
#include "ops/op_guard_table.hpp"

// ---- The SiLU-and-mul FP8 quant op's kernels as catalog
// declarations (template file, name expressions, parameters, rules), added to the library's
// catalog by ops/op_kernels.cpp through the list in ops/core/library_ops.cpp.
// Invariants: this folder is the only place that spells this op's name expressions; the parent's quant step is the FP8
// op's shared kernel (declared there), not a declaration of its own; the twin is a background variant (until it arrives
// its guard says "kernel absent" and the parent, which computes the same bytes, runs).
namespace metrale::ops {

inline constexpr std::string_view kSiluMulParentKernel = kSiluMulBf16;
inline constexpr std::string_view kSiluMulTwinKernel = kSiluMulFp8QuantFused;
inline constexpr std::string_view kSiluMulParentTemplate = "metrale::kernels::silu_mul_bf16";
inline constexpr std::string_view kSiluMulTwinTemplate = "metrale::kernels::silu_mul_per_token_group_quant_fp8";
inline constexpr std::string_view kSiluMulTemplateFile = "silu_mul_fp8_quant.cuh";

// The parent's SiLU-mul step: {BLOCK} threads, one 16-byte vector each.
inline constexpr std::uint32_t kSiluMulBlock = 256;
// The twin: {LANES, GROUPS} as the FP8 twin (a team of LANES lanes per 128-element group, GROUPS
// groups per CTA); the shipped shape, the FP8 Hopper twin's.
inline constexpr std::uint32_t kSiluMulTwinLanes = 4;
inline constexpr std::uint32_t kSiluMulTwinGroups = 8;

// {block}: whole warps in [32, 1024]; lanes and groups absent.
std::optional<KernelParamsProblem> check_silu_mul_bf16(const KernelParams& p);

// Adds silu_mul_bf16 and silu_mul_fp8_quant_fused to `catalog` (the twin's rule is the FP8
// twin's: check_fp8_act_quant_hopper).
void add_silu_mul_fp8_quant_kernels(KernelCatalog& catalog);

// The op's check hook (OpDeclaration::check, silu_mul_fp8_quant_check.cpp).
std::vector<CheckResult> silu_mul_fp8_quant_check(const OpContext& context, const CheckOptions& options);
// The profile's hook (OpDeclaration::profile, silu_mul_fp8_quant_check.cpp).
std::shared_ptr<const OpProfile> silu_mul_fp8_quant_profile();

}  // namespace metrale::ops

// ---- When the fused SiLU-and-mul FP8 quant twin
// (silu_mul_fp8_quant_fused) takes a launch instead of the parent pair (silu_mul_bf16, then
// fp8_act_quant): the guard, the pick and the once-per-slot log, in the FP8 op's shape.
// Invariants:
// - the reasons are tried in one order: twin absent; twin present and the parent incomplete (either
//   of its two kernels absent) -> the twin runs; not requested; too few CTAs;
// - the twin's grid is the FP8 twin's (fp8_quant_grid(true, ...)), so the CTA floor is the FP8
//   twin's function of the same grid (fp8_quant_hopper_ctas, op_verdict.hpp's kMinCtasPerSm);
// - the pick sets kernel, grid and block from one decision.
namespace metrale::ops {

// The handles a target built (0 = absent) and their template parameters: the parent's two steps
// ({BLOCK}; the FP8 shared kernel's {LANES, GROUPS}) and the twin ({LANES, GROUPS}).
struct SiluMulFp8QuantKernels {
  KernelHandle silu_mul;
  KernelHandle quant;
  KernelHandle twin;
  KernelParams silu_mul_params{kSiluMulBlock, 0, 0};
  KernelParams quant_params{0, kFp8QuantLanes, 1};
  KernelParams twin_params{0, kSiluMulTwinLanes, kSiluMulTwinGroups};
  // The target's sm_count: what the guard sees when the device cannot say.
  std::uint32_t fallback_sm_count = kFallbackSmCount;
  // A tuning table's threshold at the call's K (README "Tuning tables"); nullopt: the prediction.
  std::optional<std::uint32_t> twin_tuned_min_m = std::nullopt;

  [[nodiscard]] bool parent_present() const { return silu_mul.present() && quant.present(); }
};

// Which kernels a launch runs and why the twin did not. grid and block are the twin's when it
// runs; the parent's two launches take theirs from their own launchers.
struct SiluMulFp8QuantPick {
  bool twin = false;
  Dim3 grid;
  Dim3 block;
  // nullopt when the twin runs; the refusal reason otherwise.
  std::optional<std::string_view> reject;
  // The lever value the pick was made with.
  bool requested = false;
};

inline constexpr std::string_view kSiluMulTooFewCtas = "too few CTAs to fill the device at 8 K-groups per CTA";

// Every reason silu_mul_fp8_quant_fused_reject can return; one log flag each, by index.
inline constexpr std::array<std::string_view, 3> kSiluMulRejects = {
    "not requested",
    "kernel absent from this image",
    kSiluMulTooFewCtas,
};
inline constexpr std::size_t kSiluMulLogSlots = kSiluMulRejects.size() + 1;

// Why the twin is not running; nullopt means it runs (order: see the invariants above).
std::optional<std::string_view> silu_mul_fp8_quant_fused_reject(
    bool requested, bool twin_present, bool parent_present, std::uint32_t m, std::uint32_t k, std::uint32_t sm_count,
    std::uint32_t groups = kSiluMulTwinGroups, std::optional<std::uint32_t> tuned_min_m = std::nullopt);

// The smallest m the twin accepts at this k.
std::uint32_t silu_mul_fused_min_m(std::uint32_t k, std::uint32_t sm_count, std::uint32_t groups = kSiluMulTwinGroups);

SiluMulFp8QuantPick silu_mul_fp8_quant_pick(bool requested, const SiluMulFp8QuantKernels& kernels, std::uint32_t m,
                                            std::uint32_t k, std::uint32_t sm_count);

// The slot a verdict logs under, or nullopt when not logged (lever off). Pure.
std::optional<OpLogSlot> silu_mul_log_slot(const SiluMulFp8QuantPick& pick);
// The line the verdict logs if its slot is unclaimed in `said` (claiming it); nullopt otherwise.
std::optional<std::string> silu_mul_log_line(const SiluMulFp8QuantPick& pick, std::uint32_t m, std::uint32_t k,
                                             OnceSlots& said);
// The guard's table (kSiluMulRejects) and the process-wide log slots derived from it.
const GuardTable& silu_mul_guard();
OnceSlots& silu_mul_log_slots();
// Logs the verdict through metrale::logger() at info, once per process per slot.
void silu_mul_log(const SiluMulFp8QuantPick& pick, std::uint32_t m, std::uint32_t k);

}  // namespace metrale::ops

// ---- The SiLU-and-mul FP8
// quant op, q, scales = fp8_quant(bf16(silu(gate) * up)) per token and 128-element group:
// its arguments and their checks, the parent's and the twin's launches, the byte floor, and the
// op call (validate, guard, pick, log once, launch). Math: DESIGN.md "Kernel C"; the kernels:
// src/ops/silu_mul_fp8_quant/silu_mul_fp8_quant.cuh.
// Invariants: a shape no kernel can take is an ArgumentError before anything launches; the
// parent is two launches (silu_mul_bf16 into the caller's bf16 scratch, then the FP8 op's shared
// kernel over it, through the FP8 op's own launcher) and the twin one, with the same codes and
// scales; the scale layouts and kinds are the FP8 op's (Fp8ScaleLayout, Fp8ScaleKind).
// Who allocates the scratch: the caller, for now (a DevicePtr of silu_mul_scratch_bytes(M, K));
// the op's declaration is to ask for it as a workspace size, so a runtime can keep one.
namespace metrale::ops {

// gate, up: bf16 rows of gate_row_stride / up_row_stride elements (the first k used; both halves
// of one [M][2K] row: up = gate + K, both strides 2K); q: e4m3fn [m][k]; scales: fp32, laid out
// by scale_layout (m_aligned is read for column-major only).
struct SiluMulFp8QuantArgs {
  DevicePtr gate, up, q, scales;
  std::uint32_t m = 0, k = 0, gate_row_stride = 0, up_row_stride = 0;
  Fp8ScaleLayout scale_layout = Fp8ScaleLayout::kRowMajor;
  std::uint32_t m_aligned = 0;
  Fp8ScaleKind scale_kind = Fp8ScaleKind::kFp32;
};

// Throws ArgumentError naming the argument and the rule: null or misaligned pointers (gate and up
// 16 bytes, q 8, scales 4), M or K == 0, K % 128, a row stride < K or not a multiple of 8,
// column-major m_aligned < M or not a multiple of 4, extents overflowing 64 bits, grids past
// CUDA's limits.
void validate_silu_mul_fp8_quant_args(const SiluMulFp8QuantArgs& args);
// The declaration's tensor rules (names, nulls, optional tensors, alignments) on a typed call
// (validate_*_args), through the op's argument list (silu_mul_fp8_quant_op.cpp; ArgFields::require_library_tensors).
void require_silu_mul_fp8_quant_tensors(const SiluMulFp8QuantArgs& args);

// Bytes of the parent's bf16 scratch h: M x K x 2.
std::uint64_t silu_mul_scratch_bytes(std::uint32_t m, std::uint32_t k);

// The op's compulsory DRAM bytes: gate and up read once (2 x M x K bf16), q (M x K e4m3) and the
// scales (M x K/128 fp32) written once; the parent moves h out and back in besides.
double silu_mul_fp8_quant_floor_bytes(std::uint32_t m, std::uint32_t k);

// The parent's first step's grid: (M, ceil(K / 8 / block), 1), one 16-byte vector per thread.
Dim3 silu_mul_bf16_grid(std::uint32_t m, std::uint32_t k, std::uint32_t block = kSiluMulBlock);

// The FP8 op's arguments of the parent's second step: x = the scratch h ([M][K], row stride K),
// q and scales and their layout and kind as `args`.
Fp8QuantArgs silu_mul_quant_step_args(const SiluMulFp8QuantArgs& args, DevicePtr scratch);

// The parent's two steps alone (what launch_silu_mul_parent runs, for a profile that prices each):
// silu_mul_bf16 writing h into `scratch`, then the FP8 shared kernel over it. Neither validates.
void launch_silu_mul_bf16(GpuBackend& gpu, const SiluMulFp8QuantKernels& kernels, const SiluMulFp8QuantArgs& args,
                          DevicePtr scratch, std::uint64_t stream = 0);
void launch_silu_mul_quant_step(GpuBackend& gpu, const SiluMulFp8QuantKernels& kernels, const SiluMulFp8QuantArgs& args,
                                DevicePtr scratch, std::uint64_t stream = 0);

// The two launches of the parent, in order on `stream`; `scratch` holds silu_mul_scratch_bytes
// (16-byte aligned; an ArgumentError otherwise). Validates `args`.
void launch_silu_mul_parent(GpuBackend& gpu, const SiluMulFp8QuantKernels& kernels, const SiluMulFp8QuantArgs& args,
                            DevicePtr scratch, std::uint64_t stream = 0);
// The twin's one launch on fp8_quant_grid(true, M, K, params.groups). Validates `args`.
void launch_silu_mul_twin(GpuBackend& gpu, KernelHandle twin, const KernelParams& params,
                          const SiluMulFp8QuantArgs& args, std::uint64_t stream = 0);

// The op: validates, runs the guard with the device's SM count, picks, logs once per slot and
// launches the pick (`scratch` is read only when the parent runs). `requested` is the resolved
// silu_mul_fp8_quant_fused lever. Throws ArgumentError for bad arguments, BackendError when no
// kernel can run.
SiluMulFp8QuantPick silu_mul_fp8_quant(GpuBackend& gpu, const SiluMulFp8QuantKernels& kernels, bool requested,
                                       const SiluMulFp8QuantArgs& args, DevicePtr scratch, std::uint64_t stream = 0);

}  // namespace metrale::ops

// ---- CPU references of the SiLU-and-mul FP8 quant op, written from
// the spec (DESIGN.md "Kernel C"), not from the templates.
// Invariants: silu_mul_h_reference computes h = bf16(silu(g) * u) in float, silu(g) =
// g / (1 + exp(-g)) with the C library's float exp, and rounds with ref::bf16_from_float, so on
// the host backend (whose expf is the same function) its h is the kernels' bit for bit; the
// quantised result is ref::fp8_act_quant_reference over that h, so its bytes are the FP8 op's;
// silu_mul_h_oracle is the same h in float64, unrounded (a check of the float one, within half
// a bf16 ulp plus exp's error).
namespace metrale::ref {

struct SiluMulRefShape {
  std::uint32_t m = 0, k = 0, gate_row_stride = 0, up_row_stride = 0;
  bool pow2_scale = false;
};

// h as bf16 bits, [m][k] (row stride k). ArgumentError for K % 128, a stride < K or a short input.
std::vector<std::uint16_t> silu_mul_h_reference(std::span<const std::uint16_t> gate, std::span<const std::uint16_t> up,
                                                const SiluMulRefShape& shape);

// silu(g) * u in float64, [m][k].
std::vector<double> silu_mul_h_oracle(std::span<const std::uint16_t> gate, std::span<const std::uint16_t> up,
                                      const SiluMulRefShape& shape);

// q [m][k] and row-major scales [m][k/128] of h.
Fp8RefResult silu_mul_fp8_quant_reference(std::span<const std::uint16_t> gate, std::span<const std::uint16_t> up,
                                          const SiluMulRefShape& shape);

}  // namespace metrale::ref
