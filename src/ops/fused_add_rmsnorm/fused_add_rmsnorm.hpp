// ops/fused_add_rmsnorm/fused_add_rmsnorm.hpp: the fused residual-add + RMSNorm op's private
// interface (vLLM's fused_add_rms_norm, with an optional FP8 per-token-group output): its
// arguments and launches, its kernels' names, the vectorised twin's guard, the CPU references its
// check compares the kernels with, and its declaration's two functions. Each section states its
// own invariants; the kernels' arithmetic and why the twin's bytes are the parent's:
// fused_add_rmsnorm.cuh.
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
#include "metrale/ops/op_declaration.hpp"
#include "ops/fp8_act_quant/fp8_act_quant.hpp"
#include "ops/op_guard_table.hpp"

// ---- The kernels and the op's arguments.
// Invariants: this folder is the only place that spells the op's kernel names and template
// expressions; the twin is declared same_shape (its block is the parent's: the reduction tree is
// a function of BLOCK) and background (until it arrives its guard says "kernel absent" and the
// parent, which computes the same bytes, runs).
namespace metrale::ops {

inline constexpr std::string_view kRmsnormParentKernel = "fused_add_rmsnorm";
inline constexpr std::string_view kRmsnormTwinKernel = "fused_add_rmsnorm_vec";
inline constexpr std::string_view kRmsnormParentTemplate = "metrale::kernels::fused_add_rmsnorm_bf16";
inline constexpr std::string_view kRmsnormTwinTemplate = "metrale::kernels::fused_add_rmsnorm_bf16_vec";
inline constexpr std::string_view kRmsnormTemplateFile = "fused_add_rmsnorm.cuh";
// The shipped block: 5120 / 8 = 640 chunks, 5 per thread.
inline constexpr std::uint32_t kRmsnormBlock = 128;
// Qwen3.5-27B's epsilon, the fallback of the eps_bits argument (IEEE float32 bits of 1e-6f).
inline constexpr std::uint32_t kRmsnormEpsBits = 0x358637bd;

// x, residual: bf16 rows of x_row_stride / residual_row_stride elements (the first `hidden`
// used); weight bf16 [hidden]; y bf16 [m][hidden]; residual_out bf16 rows of residual_row_stride
// (it may be residual itself: in place); q e4m3fn [m][hidden] and scales fp32 [m][hidden/128]
// row-major, both null for no FP8 output.
struct FusedAddRmsnormArgs {
  DevicePtr x, residual, weight, y, residual_out, q, scales;
  std::uint32_t m = 0, hidden = 0, x_row_stride = 0, residual_row_stride = 0;
  float eps = 1e-6F;
  bool pow2_scale = false;
  [[nodiscard]] bool quantised() const { return q.address != 0; }
};

// Throws ArgumentError naming the argument and the rule: a null or misaligned tensor (bf16 2
// bytes, q 8, scales 4), q without scales or the reverse, M or hidden 0, M past the grid's limit,
// a row stride < hidden, hidden % 128 with the FP8 output, eps negative or not finite, extents
// overflowing 64 bits.
void validate_fused_add_rmsnorm_args(const FusedAddRmsnormArgs& args);
// The declaration's tensor rules (names, nulls, optional tensors, alignments) on a typed call
// (validate_*_args), through the op's argument list (fused_add_rmsnorm_op.cpp; ArgFields::require_library_tensors).
void require_fused_add_rmsnorm_tensors(const FusedAddRmsnormArgs& args);

// The op's compulsory DRAM bytes: x, residual and weight read once, y and residual_out written
// once (2 bytes each), and with the FP8 output q (1 byte) and the scales (4 per 128).
double fused_add_rmsnorm_floor_bytes(std::uint32_t m, std::uint32_t hidden, bool quantised);

// {block}: whole warps in [32, 1024]; lanes and groups absent (both kernels).
std::optional<KernelParamsProblem> check_fused_add_rmsnorm(const KernelParams& p);

// One launch of `kernel` (either; grid (M), block params.block). Validates `args` and `params`.
void launch_fused_add_rmsnorm(GpuBackend& gpu, KernelHandle kernel, std::string_view kernel_name,
                              const KernelParams& params, const FusedAddRmsnormArgs& args, std::uint64_t stream = 0);

}  // namespace metrale::ops

// ---- When the vectorised twin (fused_add_rmsnorm_vec) takes a launch instead of the parent.
// Invariants: the reasons are tried in one order: twin absent; not requested (passed when the
// parent is absent: nothing else could run); then the twin's own shape rules, which hold whether
// or not the parent is there (a misaligned 16-byte load is a fault, not a slower run): hidden a
// multiple of 8, both row strides multiples of 8, every tensor 16-byte aligned. Pure: no device,
// no log.
namespace metrale::ops {

inline constexpr std::array<std::string_view, 5> kRmsnormRejects = {
    "not requested",
    "kernel absent from this image",
    "hidden is not a multiple of 8 (the twin loads 16-byte vectors of 8 bf16)",
    "a row stride is not a multiple of 8 elements (rows not 16-byte aligned)",
    "a tensor is not 16-byte aligned",
};

struct RmsnormPick {
  bool twin = false;
  std::optional<std::string_view> reject;  // nullopt when the twin runs
  bool requested = false;
};

std::optional<std::string_view> fused_add_rmsnorm_vec_reject(bool requested, bool twin_present, bool parent_present,
                                                             const FusedAddRmsnormArgs& args);
const GuardTable& rmsnorm_guard();
// The line the verdict logs if its slot is unclaimed in `said` (claiming it); nullopt otherwise.
std::optional<std::string> rmsnorm_log_line(const RmsnormPick& pick, const FusedAddRmsnormArgs& args, OnceSlots& said);

// The handles a target built (0 = absent) and their parameters.
struct RmsnormKernels {
  KernelHandle parent;
  KernelHandle twin;
  KernelParams parent_params{kRmsnormBlock, 0, 0};
  KernelParams twin_params{kRmsnormBlock, 0, 0};
};

RmsnormPick fused_add_rmsnorm_pick(bool requested, const RmsnormKernels& kernels, const FusedAddRmsnormArgs& args);

// The op: validates, guards, picks, logs once per slot (process-wide) and launches. BackendError
// when no kernel can run.
RmsnormPick fused_add_rmsnorm(GpuBackend& gpu, const RmsnormKernels& kernels, bool requested,
                              const FusedAddRmsnormArgs& args, std::uint64_t stream = 0);

// The declaration and the kernels' catalog entries (the line in ops/core/library_ops.cpp).
OpDeclaration fused_add_rmsnorm_declaration();
void add_fused_add_rmsnorm_kernels(KernelCatalog& catalog);
// The check hook (fused_add_rmsnorm_check.cpp).
std::vector<CheckResult> fused_add_rmsnorm_check(const OpContext& context, const CheckOptions& options);
// The profile's hook (OpDeclaration::profile, fused_add_rmsnorm_check.cpp).
std::shared_ptr<const OpProfile> fused_add_rmsnorm_profile();

}  // namespace metrale::ops

// ---- CPU references, written from the spec (the math and the reduction order stated in
// fused_add_rmsnorm.cuh's header), not from the templates.
// Invariants: rmsnorm_reference adds, squares, sums and scales in float with the kernels'
// documented order (thread t of `block` owns chunks t, t + block, ... of 8 elements; the xor
// butterfly per warp of 32, then over the warps' sums) and rounds with ref::bf16_from_float, so on
// the host backend (rsqrt = 1 / sqrt there) its y is the kernels' bit for bit; its FP8 output is
// ref::fp8_act_quant_reference over that y; rmsnorm_oracle is y in float64 from the same rounded
// z, unrounded (a check of the float one: within a bf16 rounding plus float's error).
namespace metrale::ref {

struct RmsnormRefShape {
  std::uint32_t m = 0, hidden = 0, x_row_stride = 0, residual_row_stride = 0;
  float eps = 1e-6F;
};

struct RmsnormRefResult {
  std::vector<std::uint16_t> y;             // [m][hidden]
  std::vector<std::uint16_t> residual_out;  // [m][hidden] (dense)
};

// ArgumentError for a stride < hidden, short inputs or a block that is not whole warps.
RmsnormRefResult rmsnorm_reference(std::span<const std::uint16_t> x, std::span<const std::uint16_t> residual,
                                   std::span<const std::uint16_t> weight, const RmsnormRefShape& shape,
                                   std::uint32_t block);
std::vector<double> rmsnorm_oracle(std::span<const std::uint16_t> x, std::span<const std::uint16_t> residual,
                                   std::span<const std::uint16_t> weight, const RmsnormRefShape& shape);

}  // namespace metrale::ref
