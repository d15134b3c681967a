// metrale/ops/fp8_act_quant.hpp: the per-token-group FP8 activation-quant op: validate,
// guard, pick, log, launch. Math and layouts: ARCHITECTURE.md "FP8 activation quantisation"; the kernels:
// src/ops/fp8_act_quant/fp8_act_quant.cuh.
// Invariants: a shape no kernel can take is an ArgumentError before anything launches; the
// grid launched is the pick's grid (fp8_quant_grid); both kernels take the same arguments.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "metrale/gpu/device_handles.hpp"
#include "metrale/gpu/gpu_backend.hpp"
#include "metrale/gpu/kernel_params.hpp"
#include "metrale/gpu/launch_config.hpp"

namespace metrale::ops {

class OpHost;  // metrale/ops/op_declaration.hpp
struct Pick;

// Elements per quantisation group.
inline constexpr std::uint32_t kFp8QuantGroupSize = 128;
// Lanes per group when a target names none (16 lanes x 8 bf16 = 128 elements; a target may ship
// 8 or 4, each lane then holding 16 or 32 elements).
inline constexpr std::uint32_t kFp8QuantLanes = 16;
// K-groups per twin CTA; the twin's block is kFp8QuantLanes x kFp8QuantGroups = 128 threads.
inline constexpr std::uint32_t kFp8QuantGroups = 8;

// The handles a target built (0 = absent) and their template parameters ({LANES, GROUPS}).
struct Fp8QuantKernels {
  KernelHandle shared;
  KernelHandle twin;
  KernelParams shared_params{0, kFp8QuantLanes, 1};
  KernelParams twin_params{0, kFp8QuantLanes, kFp8QuantGroups};
  // The target's sm_count: what the guard sees when the device cannot say.
  std::uint32_t fallback_sm_count = kFallbackSmCount;
  // A tuning table's threshold at the call's K (README "Tuning tables"): the smallest M the twin
  // takes instead of the predicted one; nullopt: the prediction.
  std::optional<std::uint32_t> twin_tuned_min_m = std::nullopt;
};

// Which kernel a launch runs, on what grid and block, and why the other did not.
struct Fp8QuantPick {
  KernelHandle kernel;
  Dim3 grid;
  Dim3 block;
  // True when `kernel` is the twin.
  bool twin = false;
  // nullopt when the twin runs; the refusal reason otherwise.
  std::optional<std::string_view> reject;
  // The lever value the pick was made with.
  bool requested = false;
};

// Row-major scales are [M][K/128]; column-major scales have strides (1, m_aligned), the
// layout DeepGEMM-style GEMMs read (m_aligned a multiple of 4, >= M).
enum class Fp8ScaleLayout { kRowMajor, kColumnMajor };
// kFp32: s = amax / 448; kPow2: the smallest power of two >= amax / 448 (UE8M0).
enum class Fp8ScaleKind { kFp32, kPow2 };

// x: bf16 rows of x_row_stride elements (the first k used); q: e4m3fn [m][k];
// scales: fp32, laid out by scale_layout (m_aligned is read for column-major only).
struct Fp8QuantArgs {
  DevicePtr x, q, scales;
  std::uint32_t m = 0, k = 0, x_row_stride = 0;
  Fp8ScaleLayout scale_layout = Fp8ScaleLayout::kRowMajor;
  std::uint32_t m_aligned = 0;
  Fp8ScaleKind scale_kind = Fp8ScaleKind::kFp32;
};

// Where scale (token t, group g) lives: t * m + g * g_stride elements from scales.
struct Fp8ScaleStrides {
  std::uint32_t m = 0;
  std::uint32_t g = 0;
  friend constexpr bool operator==(const Fp8ScaleStrides&, const Fp8ScaleStrides&) = default;
};
Fp8ScaleStrides fp8_scale_strides(const Fp8QuantArgs& args);

// Throws ArgumentError naming the argument and constraint: null or misaligned pointers (x 16
// bytes, q 8, scales 4), M or K == 0, K % 128, x_row_stride < K or not a multiple of 8,
// column-major m_aligned < M or not a multiple of 4, extents overflowing 64 bits, grids past
// CUDA's limits.
void validate_fp8_quant_args(const Fp8QuantArgs& args);

// Launches `pick.kernel` on `pick.grid` / `pick.block`.
void launch_fp8_quant(GpuBackend& gpu, const Fp8QuantPick& pick, const Fp8QuantArgs& args, std::uint64_t stream = 0);

// The op: validates, runs the guard with the device's SM count, picks, logs once per slot and
// launches. `requested` is the resolved fp8_act_quant_hopper lever. Throws ArgumentError for
// bad arguments, BackendError when no kernel can run.
Fp8QuantPick fp8_act_quant(GpuBackend& gpu, const Fp8QuantKernels& kernels, bool requested, const Fp8QuantArgs& args,
                           std::uint64_t stream = 0);

// The op on a runtime (or any OpHost): its declared kernels and lever, the guard or the role the
// caller forces ("parent" or "shared", "twin"; "" lets the guard pick). A forced kernel runs
// through the op's own pick with the other kernel blanked; KernelChoiceError, before anything
// launches, when the target did not build it or names a role the op lacks.
Fp8QuantPick fp8_act_quant(const OpHost& host, const Fp8QuantArgs& args, std::uint64_t stream = 0,
                           std::string_view role = {});
// The generic pick (ops/op_declaration.hpp) of a typed one.
Pick to_pick(const Fp8QuantPick& pick, bool forced);
// The op's kernels on a runtime as loaded now, with the parameters the target ships them with.
Fp8QuantKernels fp8_quant_kernels(const OpHost& host);

}  // namespace metrale::ops
