// tests/support/kernels_support.hpp: what the kernel tests share, on the host backend (tests/unit/kernels_*)
// and on a CUDA device (tests/gpu/): a runtime that ignores the process environment and the
// user's cache, device buffers, seeded inputs for both ops, runs of either kernel forced (or of
// the op's pick) into poisoned outputs, and the references computed over token slices in
// parallel.
// Invariants: every output buffer is poisoned before a launch (a NaN bit pattern no kernel
// writes for BA, the e4m3 NaN code 0x7f and the same NaN for FP8), so an element a kernel skips
// stays recognisable; inputs are random and never zero (ref::random_bf16).
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <future>
#include <optional>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "metrale/ops/fp8_act_quant.hpp"
#include "metrale/ops/ssm_ba_gates.hpp"
#include "metrale/runtime.hpp"
#include "ops/fp8_act_quant/fp8_act_quant.hpp"
#include "ops/ssm_ba_gates/ssm_ba_gates.hpp"
#include "ref/bf16.hpp"
#include "support/ba_gates_check.hpp"
#include "support/isolated_runtime.hpp"

namespace kernels_test {

// A BA shape as INFO text: every extent a failing case needs to be reproduced.
inline std::string describe(const metrale::ref::BaGatesRefShape& s) {
  std::ostringstream out;
  out << "M=" << s.m << " N=" << s.n << " K=" << s.k << " K_stride=" << s.k_stride << " gate_stride=" << s.gate_stride
      << " nv=" << s.nv << " vheads_per_group=" << s.vheads_per_group;
  return out.str();
}

inline constexpr std::uint32_t kPoisonBits = 0x7fa5a5a5u;  // a quiet NaN with a payload
inline constexpr std::uint8_t kPoisonCode = 0x7f;          // e4m3fn NaN: saturating kernels never write it

inline float poison_float() { return std::bit_cast<float>(kPoisonBits); }
inline bool is_poison(float value) { return std::bit_cast<std::uint32_t>(value) == kPoisonBits; }

// Bit-for-bit equality of two float arrays (NaN payloads and -0 included). std::equal over the
// bit patterns, not memcmp: an empty vector's data() may be null, which memcmp may not be given.
inline bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](float x, float y) {
    return std::bit_cast<std::uint32_t>(x) == std::bit_cast<std::uint32_t>(y);
  });
}

// The hopper target (it ships all four kernels), file levers only, memory-only registry.
inline metrale::RuntimeOptions runtime_options(metrale::BackendChoice backend, std::uint32_t host_sm_count = 132) {
  return metrale::test::isolated_runtime_options(backend, host_sm_count, "hopper");
}

// The same with METRALE_SSM_BA_GATES_TENSOR_CORE=0: the seeds' twin/parent pick alone.
inline metrale::RuntimeOptions runtime_options_seeds_only(metrale::BackendChoice backend,
                                                          std::uint32_t host_sm_count = 132) {
  metrale::RuntimeOptions options = runtime_options(backend, host_sm_count);
  options.env = [](const char* name) -> std::optional<std::string> {
    return std::string_view(name) == "METRALE_SSM_BA_GATES_TENSOR_CORE" ? std::optional<std::string>("0")
                                                                        : std::nullopt;
  };
  return options;
}

// One device allocation, freed on scope exit.
class DeviceBuffer {
 public:
  DeviceBuffer(metrale::GpuBackend& gpu, std::size_t bytes) : gpu_(&gpu), ptr_(gpu.alloc(bytes)) {}
  template <typename T>
  DeviceBuffer(metrale::GpuBackend& gpu, const std::vector<T>& values) : DeviceBuffer(gpu, values.size() * sizeof(T)) {
    gpu.copy_to_device(ptr_, values.data(), values.size() * sizeof(T));
  }
  ~DeviceBuffer() { gpu_->free(ptr_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  [[nodiscard]] metrale::DevicePtr ptr() const { return ptr_; }
  template <typename T>
  [[nodiscard]] std::vector<T> read(std::size_t count) const {
    gpu_->synchronize(0);
    std::vector<T> out(count);
    gpu_->copy_to_host(out.data(), ptr_, count * sizeof(T));
    return out;
  }

 private:
  metrale::GpuBackend* gpu_;
  metrale::DevicePtr ptr_;
};

// Runs fn(first_token, token_count) over slices of [0, m) on several threads.
template <typename Fn>
void for_token_slices(std::uint32_t m, Fn fn) {
  const std::uint32_t workers = std::max(1u, std::min(16u, std::thread::hardware_concurrency()));
  const std::uint32_t slice = (m + workers - 1) / workers;
  std::vector<std::future<void>> running;
  for (std::uint32_t first = 0; first < m; first += slice) {
    running.push_back(std::async(std::launch::async, fn, first, std::min(slice, m - first)));
  }
  for (auto& done : running) {
    done.get();
  }
}

// ---- BA gates ----

enum class BaRun { kParent, kTwin, kOp, kMma, kSplitK };

struct BaCase {
  metrale::ref::BaGatesRefShape shape;
  std::vector<std::uint16_t> x, w;
  std::vector<float> a_log, dt_bias;

  BaCase(const metrale::ref::BaGatesRefShape& s, std::uint64_t seed)
      : shape(s),
        x(metrale::ref::random_bf16(std::size_t{s.m} * s.k_stride, seed, 1.0f)),
        w(metrale::ref::random_bf16(std::size_t{s.n} * s.k, seed + 1, 0.05f)),
        a_log(metrale::ref::random_floats(s.nv, seed + 2, -2.0f, 1.0f)),
        dt_bias(metrale::ref::random_floats(s.nv, seed + 3, -1.0f, 1.0f)) {}

  // Normal inputs: x ~ N(0, 1), W ~ 0.02 N(0, 1) (the tensor-core kernel's accuracy contract).
  static BaCase normal(const metrale::ref::BaGatesRefShape& s, std::uint64_t seed) {
    BaCase c(s, seed);
    c.x = metrale::ref::random_normal_bf16(std::size_t{s.m} * s.k_stride, seed + 4, 1.0f);
    c.w = metrale::ref::random_normal_bf16(std::size_t{s.n} * s.k, seed + 5, 0.02f);
    return c;
  }

  [[nodiscard]] std::size_t out_size() const { return std::size_t{shape.m} * shape.gate_stride; }

  // The kernel-order reference, its rows computed in parallel slices; padding left poisoned.
  [[nodiscard]] std::vector<float> reference() const {
    std::vector<float> out(out_size(), poison_float());
    for_token_slices(shape.m, [&](std::uint32_t first, std::uint32_t count) {
      metrale::ref::BaGatesRefShape part = shape;
      part.m = count;
      const std::span<const std::uint16_t> rows(x.data() + std::size_t{first} * shape.k_stride,
                                                std::size_t{count} * shape.k_stride);
      metrale::ref::ssm_ba_gates_reference({rows, w, a_log, dt_bias}, part,
                                           std::span<float>(out).subspan(std::size_t{first} * shape.gate_stride,
                                                                         std::size_t{count} * shape.gate_stride));
    });
    return out;
  }

  [[nodiscard]] std::vector<double> oracle() const {
    return metrale::ref::ssm_ba_gates_oracle({x, w, a_log, dt_bias}, shape);
  }
};

struct BaResult {
  std::vector<float> out;                         // [m][gate_stride]
  std::optional<metrale::ops::BaGatesPick> pick;  // set for BaRun::kOp
  std::size_t guard_written = 0;                  // poisoned rows past M that lost their poison
};

// Rows of poisoned output past M: a tile kernel writing past its last token shows here.
inline constexpr std::size_t kBaGuardRows = 64;

// Runs one kernel (forced through its launcher) or the op, into a poisoned output.
inline BaResult run_ba(metrale::Runtime& runtime, const BaCase& c, BaRun which) {
  metrale::GpuBackend& gpu = *runtime.backend();
  const auto& s = c.shape;
  DeviceBuffer x(gpu, c.x), w(gpu, c.w), a_log(gpu, c.a_log), dt_bias(gpu, c.dt_bias);
  const std::size_t guard = kBaGuardRows * s.gate_stride;
  DeviceBuffer out(gpu, std::vector<float>(c.out_size() + guard, poison_float()));
  const metrale::ops::BaGatesArgs args{x.ptr(), w.ptr(), a_log.ptr(), dt_bias.ptr(), out.ptr(), s.m,
                                       s.n,     s.k,     s.k_stride,  s.gate_stride, s.nv,      s.vheads_per_group};
  const metrale::ops::BaGatesKernels kernels = metrale::ops::ba_gates_kernels(runtime);
  BaResult result;
  switch (which) {
    case BaRun::kParent:
      metrale::ops::launch_ba_gates_parent(gpu, kernels.parent, kernels.parent_params, args);
      break;
    case BaRun::kTwin:
      metrale::ops::launch_ba_gates_twin(gpu, kernels.twin, kernels.twin_params, args);
      break;
    case BaRun::kOp:
      result.pick = metrale::ops::ssm_ba_gates(runtime, args);
      break;
    case BaRun::kMma:
      metrale::ops::launch_ba_gates_mma(gpu, kernels.mma, kernels.mma_params, args);
      break;
    case BaRun::kSplitK:
      metrale::ops::launch_ba_gates_splitk(gpu, kernels.splitk, kernels.splitk_params, args);
      break;
  }
  result.out = out.read<float>(c.out_size() + guard);
  result.guard_written =
      static_cast<std::size_t>(std::count_if(result.out.begin() + static_cast<std::ptrdiff_t>(c.out_size()),
                                             result.out.end(), [](float v) { return !is_poison(v); }));
  result.out.resize(c.out_size());
  return result;
}

// Output columns [0, 2 nv) still holding the poison, and padding columns that lost it.
struct BaCoverage {
  std::size_t unwritten = 0;
  std::size_t padding_written = 0;
};

inline BaCoverage ba_coverage(const metrale::ref::BaGatesRefShape& s, std::span<const float> out) {
  BaCoverage coverage;
  for (std::size_t t = 0; t < s.m; ++t) {
    for (std::uint32_t col = 0; col < s.gate_stride; ++col) {
      const bool poison = is_poison(out[t * s.gate_stride + col]);
      if (col < 2 * s.nv) {
        coverage.unwritten += poison ? 1 : 0;
      } else {
        coverage.padding_written += poison ? 0 : 1;
      }
    }
  }
  return coverage;
}

// The largest |got - want| / |want| over the written columns; the oracle is [m][2 nv].
inline double ba_worst_relative_error(const metrale::ref::BaGatesRefShape& s, std::span<const float> out,
                                      std::span<const double> oracle) {
  double worst = 0.0;
  for (std::size_t t = 0; t < s.m; ++t) {
    for (std::uint32_t col = 0; col < 2 * s.nv; ++col) {
      const double want = oracle[t * 2 * s.nv + col];
      const double got = out[t * s.gate_stride + col];
      worst = std::max(worst, std::fabs(got - want) / std::max(std::fabs(want), 1e-30));
    }
  }
  return worst;
}

// ||got - oracle||_F / ||oracle||_F over the written columns of every row; the oracle is [m][2 nv].
inline double ba_relative_frobenius_error(const metrale::ref::BaGatesRefShape& s, std::span<const float> out,
                                          std::span<const double> oracle) {
  std::vector<std::uint32_t> rows(s.m);
  for (std::uint32_t t = 0; t < s.m; ++t) {
    rows[t] = t;
  }
  return metrale::check::ba_relative_frobenius(out, rows, oracle, s.gate_stride, s.nv);
}

// The largest relative difference between two float outputs over the written columns, by the
// gap the bench uses too (support/ba_gates_check.hpp: a NaN is an infinite gap).
inline double ba_worst_relative_gap(const metrale::ref::BaGatesRefShape& s, std::span<const float> got,
                                    std::span<const float> want) {
  double worst = 0.0;
  for (std::size_t t = 0; t < s.m; ++t) {
    for (std::uint32_t col = 0; col < 2 * s.nv; ++col) {
      worst =
          std::max(worst, metrale::check::ba_relative_gap(got[t * s.gate_stride + col], want[t * s.gate_stride + col]));
    }
  }
  return worst;
}

// ---- FP8 activation quant ----

enum class Fp8Run { kShared, kTwin, kOp };

struct Fp8Case {
  std::uint32_t m = 0, k = 0, x_row_stride = 0;
  metrale::ops::Fp8ScaleLayout layout = metrale::ops::Fp8ScaleLayout::kRowMajor;
  std::uint32_t m_aligned = 0;  // column-major only
  bool pow2 = false;
  std::vector<std::uint16_t> x;

  Fp8Case(std::uint32_t m_, std::uint32_t k_, std::uint32_t stride, std::uint64_t seed)
      : m(m_), k(k_), x_row_stride(stride), x(metrale::ref::random_bf16(std::size_t{m_} * stride, seed, 4.0f)) {}

  [[nodiscard]] std::uint32_t groups() const { return k / metrale::ops::kFp8QuantGroupSize; }
  [[nodiscard]] std::size_t scale_slots() const {
    const bool column = layout == metrale::ops::Fp8ScaleLayout::kColumnMajor;
    return std::size_t{column ? m_aligned : m} * groups();
  }
  [[nodiscard]] metrale::ref::Fp8RefShape ref_shape() const { return {m, k, x_row_stride, pow2}; }
  [[nodiscard]] metrale::ops::Fp8QuantArgs args(metrale::DevicePtr xp, metrale::DevicePtr qp,
                                                metrale::DevicePtr sp) const {
    return {xp,     qp,        sp,
            m,      k,         x_row_stride,
            layout, m_aligned, pow2 ? metrale::ops::Fp8ScaleKind::kPow2 : metrale::ops::Fp8ScaleKind::kFp32};
  }
};

struct Fp8Result {
  std::vector<std::uint8_t> q;          // [m][k]
  std::vector<float> scales;            // as laid out on the device (scale_slots())
  std::vector<float> row_major_scales;  // [m][groups], gathered through fp8_scale_strides
  std::optional<metrale::ops::Fp8QuantPick> pick;
};

// Runs the shared kernel or the twin (each forced by passing the op only that handle: a lone
// twin runs at any M, a lone shared kernel whatever the lever) or the op's own pick.
inline Fp8Result run_fp8(metrale::Runtime& runtime, const Fp8Case& c, Fp8Run which) {
  metrale::GpuBackend& gpu = *runtime.backend();
  DeviceBuffer x(gpu, c.x);
  DeviceBuffer q(gpu, std::vector<std::uint8_t>(std::size_t{c.m} * c.k, kPoisonCode));
  DeviceBuffer scales(gpu, std::vector<float>(c.scale_slots(), poison_float()));
  const metrale::ops::Fp8QuantArgs args = c.args(x.ptr(), q.ptr(), scales.ptr());
  metrale::ops::Fp8QuantKernels kernels = metrale::ops::fp8_quant_kernels(runtime);
  const bool lever = runtime.levers().on("fp8_act_quant_hopper");
  Fp8Result result;
  switch (which) {
    case Fp8Run::kShared:
      kernels.twin = {};
      result.pick = metrale::ops::fp8_act_quant(gpu, kernels, lever, args);
      break;
    case Fp8Run::kTwin:
      kernels.shared = {};
      result.pick = metrale::ops::fp8_act_quant(gpu, kernels, lever, args);
      break;
    case Fp8Run::kOp:
      result.pick = metrale::ops::fp8_act_quant(runtime, args);
      break;
  }
  result.q = q.read<std::uint8_t>(std::size_t{c.m} * c.k);
  result.scales = scales.read<float>(c.scale_slots());
  const metrale::ops::Fp8ScaleStrides strides = metrale::ops::fp8_scale_strides(args);
  result.row_major_scales.resize(std::size_t{c.m} * c.groups());
  for (std::size_t t = 0; t < c.m; ++t) {
    for (std::size_t g = 0; g < c.groups(); ++g) {
      result.row_major_scales[t * c.groups() + g] = result.scales[t * strides.m + g * strides.g];
    }
  }
  return result;
}

// Scale slots outside [0, M) x [0, groups) (column-major padding) that lost their poison.
inline std::size_t fp8_padding_written(const Fp8Case& c, const Fp8Result& r) {
  std::size_t written = 0;
  for (std::size_t slot = 0; slot < r.scales.size(); ++slot) {
    const std::size_t token = c.layout == metrale::ops::Fp8ScaleLayout::kColumnMajor ? slot % c.m_aligned : 0;
    if (token >= c.m && !is_poison(r.scales[slot])) {
      ++written;
    }
  }
  return written;
}

// The reference in parallel token slices (it is row-independent).
inline metrale::ref::Fp8RefResult fp8_reference(const Fp8Case& c) {
  metrale::ref::Fp8RefResult out;
  out.q.resize(std::size_t{c.m} * c.k);
  out.scales.resize(std::size_t{c.m} * c.groups());
  for_token_slices(c.m, [&](std::uint32_t first, std::uint32_t count) {
    metrale::ref::Fp8RefShape part = c.ref_shape();
    part.m = count;
    const std::span<const std::uint16_t> rows(c.x.data() + std::size_t{first} * c.x_row_stride,
                                              std::size_t{count} * c.x_row_stride);
    const metrale::ref::Fp8RefResult slice = metrale::ref::fp8_act_quant_reference(rows, part);
    std::copy(slice.q.begin(), slice.q.end(), out.q.begin() + static_cast<std::ptrdiff_t>(first) * c.k);
    std::copy(slice.scales.begin(), slice.scales.end(),
              out.scales.begin() + static_cast<std::ptrdiff_t>(first) * c.groups());
  });
  return out;
}

}  // namespace kernels_test
