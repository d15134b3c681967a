// ops/silu_mul_fp8_quant.hpp (private until the op's declaration lands): the SiLU-and-mul FP8
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
#pragma once

#include <cstdint>

#include "metrale/gpu/device_ptr.hpp"
#include "metrale/gpu/gpu_backend.hpp"
#include "metrale/gpu/kernel_handle.hpp"
#include "metrale/gpu/kernel_params.hpp"
#include "metrale/gpu/launch_config.hpp"
#include "metrale/ops/fp8_act_quant.hpp"
#include "ops/silu_mul_fp8_quant/silu_mul_fp8_quant_guard.hpp"
#include "ops/silu_mul_fp8_quant/silu_mul_fp8_quant_kernels.hpp"

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
