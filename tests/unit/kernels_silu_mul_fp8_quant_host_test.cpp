// kernels_silu_mul_fp8_quant_host_test.cpp: the SiLU-and-mul FP8 quant parent (silu_mul_bf16, then
// the FP8 shared kernel) and its fused twin from src/ops/silu_mul_fp8_quant/, on the host backend of a hopper
// runtime: the parent's scratch h equals the reference's h (and the float64 oracle within one
// bf16 rounding), its codes and scales equal the reference, and the twin's bytes equal the
// parent's, for both scale layouts and kinds, strided and interleaved ([M][2K]) rows, K = 128,
// 5120 and 17408; inputs with negative, large, equal and non-finite values; outputs poisoned first.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>

#include "ops/op_kernels.hpp"
#include "ops/silu_mul_fp8_quant/silu_mul_fp8_quant.hpp"
#include "support/kernels_support.hpp"

using namespace metrale;
using kernels_test::DeviceBuffer;

namespace {

constexpr std::uint16_t kScratchPoison = 0x7fa5;  // a bf16 NaN silu_mul_bf16 never writes

struct SiluCase {
  std::uint32_t m = 0, k = 0, gate_stride = 0, up_stride = 0;
  bool interleaved = false;  // gate and up the two halves of one [M][2K] row (strides 2K)
  ops::Fp8ScaleLayout layout = ops::Fp8ScaleLayout::kRowMajor;
  std::uint32_t m_aligned = 0;
  bool pow2 = false;
  std::vector<std::uint16_t> gate, up;  // interleaved: gate holds the [M][2K] rows, up is empty

  [[nodiscard]] std::span<const std::uint16_t> gate_span() const { return gate; }
  [[nodiscard]] std::span<const std::uint16_t> up_span() const {
    return interleaved ? std::span<const std::uint16_t>(gate).subspan(k) : std::span<const std::uint16_t>(up);
  }
  [[nodiscard]] std::uint32_t groups() const { return k / ops::kFp8QuantGroupSize; }
  [[nodiscard]] std::size_t scale_slots() const {
    return std::size_t{layout == ops::Fp8ScaleLayout::kColumnMajor ? m_aligned : m} * groups();
  }
  [[nodiscard]] ref::SiluMulRefShape ref_shape() const { return {m, k, gate_stride, up_stride, pow2}; }
  [[nodiscard]] std::string describe() const {
    std::ostringstream out;
    out << "M=" << m << " K=" << k << " gate_stride=" << gate_stride << " up_stride=" << up_stride
        << (interleaved ? " interleaved" : "") << " pow2=" << pow2
        << (layout == ops::Fp8ScaleLayout::kColumnMajor ? " column-major m_aligned=" + std::to_string(m_aligned)
                                                        : std::string(" row-major"));
    return out.str();
  }
};

// Random gate in [-8, 8] and up in [-4, 4] (never zero); row 1, when present, holds large values
// (|gate| up to 1e6: silu(-1e6) is -0, whole groups of h zero) and row 2 one value repeated.
SiluCase make_case(std::uint32_t m, std::uint32_t k, std::uint32_t pad, bool interleaved, std::uint64_t seed) {
  SiluCase c;
  c.m = m;
  c.k = k;
  c.interleaved = interleaved;
  c.gate_stride = c.up_stride = interleaved ? 2 * k : k + pad;
  c.gate = ref::random_bf16(std::size_t{m} * c.gate_stride, seed, 8.0f);
  if (!interleaved) {
    c.up_stride = k + 2 * pad;
    c.up = ref::random_bf16(std::size_t{m} * c.up_stride, seed + 1, 4.0f);
  }
  auto* up_rows = interleaved ? c.gate.data() + k : c.up.data();
  if (m > 1) {
    const auto large = ref::random_bf16(k, seed + 2, 1e6f);
    std::copy(large.begin(), large.end(), c.gate.begin() + c.gate_stride);
  }
  if (m > 2) {
    std::fill_n(c.gate.begin() + 2 * std::size_t{c.gate_stride}, k, ref::bf16_from_float(2.75f));
    std::fill_n(up_rows + 2 * std::size_t{c.up_stride}, k, ref::bf16_from_float(-1.5f));
  }
  return c;
}

struct Outputs {
  std::vector<std::uint8_t> q;
  std::vector<float> scales;            // as laid out on the device
  std::vector<float> row_major_scales;  // [m][groups]
  std::vector<std::uint16_t> h;         // the parent's scratch (empty for the twin)
  std::optional<ops::SiluMulFp8QuantPick> pick;
};

enum class Run { kParent, kTwin, kOp };

ops::SiluMulFp8QuantKernels runtime_kernels(const Runtime& runtime) {
  ops::SiluMulFp8QuantKernels kernels;
  kernels.silu_mul = runtime.kernel_handle(ops::kSiluMulParentKernel);
  kernels.quant = runtime.kernel_handle(ops::kFp8QuantSharedKernel);
  kernels.twin = runtime.kernel_handle(ops::kSiluMulTwinKernel);
  kernels.silu_mul_params = runtime.target().find_kernel(ops::kSiluMulParentKernel)->params;
  kernels.quant_params = runtime.target().find_kernel(ops::kFp8QuantSharedKernel)->params;
  kernels.twin_params = runtime.target().find_kernel(ops::kSiluMulTwinKernel)->params;
  return kernels;
}

Outputs run(Runtime& runtime, const SiluCase& c, Run which, bool lever = true) {
  GpuBackend& gpu = *runtime.backend();
  DeviceBuffer gate(gpu, c.gate);
  DeviceBuffer up(gpu, c.interleaved ? std::vector<std::uint16_t>(1, 1) : c.up);
  DeviceBuffer q(gpu, std::vector<std::uint8_t>(std::size_t{c.m} * c.k, kernels_test::kPoisonCode));
  DeviceBuffer scales(gpu, std::vector<float>(c.scale_slots(), kernels_test::poison_float()));
  DeviceBuffer scratch(gpu, std::vector<std::uint16_t>(std::size_t{c.m} * c.k, kScratchPoison));
  ops::SiluMulFp8QuantArgs args{gate.ptr(),
                                c.interleaved ? DevicePtr{gate.ptr().address + std::uint64_t{c.k} * 2} : up.ptr(),
                                q.ptr(),
                                scales.ptr(),
                                c.m,
                                c.k,
                                c.gate_stride,
                                c.up_stride,
                                c.layout,
                                c.m_aligned,
                                c.pow2 ? ops::Fp8ScaleKind::kPow2 : ops::Fp8ScaleKind::kFp32};
  const ops::SiluMulFp8QuantKernels kernels = runtime_kernels(runtime);
  Outputs out;
  switch (which) {
    case Run::kParent:
      ops::launch_silu_mul_parent(gpu, kernels, args, scratch.ptr());
      out.h = scratch.read<std::uint16_t>(std::size_t{c.m} * c.k);
      break;
    case Run::kTwin:
      ops::launch_silu_mul_twin(gpu, kernels.twin, kernels.twin_params, args);
      break;
    case Run::kOp:
      out.pick = ops::silu_mul_fp8_quant(gpu, kernels, lever, args, scratch.ptr());
      break;
  }
  out.q = q.read<std::uint8_t>(std::size_t{c.m} * c.k);
  out.scales = scales.read<float>(c.scale_slots());
  const ops::Fp8ScaleStrides strides = ops::fp8_scale_strides(ops::silu_mul_quant_step_args(args, DevicePtr{}));
  for (std::size_t t = 0; t < c.m; ++t) {
    for (std::size_t g = 0; g < c.groups(); ++g) {
      out.row_major_scales.push_back(out.scales[t * strides.m + g * strides.g]);
    }
  }
  return out;
}

std::size_t padding_written(const SiluCase& c, const Outputs& o) {
  std::size_t written = 0;
  for (std::size_t slot = 0; slot < o.scales.size(); ++slot) {
    const std::size_t token = c.layout == ops::Fp8ScaleLayout::kColumnMajor ? slot % c.m_aligned : 0;
    written += token >= c.m && !kernels_test::is_poison(o.scales[slot]) ? 1 : 0;
  }
  return written;
}

// Parent against the references, twin bytes against the parent's; returns the parent's outputs.
Outputs check_parent_and_twin(Runtime& runtime, const SiluCase& c, bool finite = true) {
  INFO(c.describe());
  const Outputs parent = run(runtime, c, Run::kParent);
  const Outputs twin = run(runtime, c, Run::kTwin);
  const std::vector<std::uint16_t> h = ref::silu_mul_h_reference(c.gate_span(), c.up_span(), c.ref_shape());
  CHECK(parent.h == h);
  const ref::Fp8RefResult want = ref::silu_mul_fp8_quant_reference(c.gate_span(), c.up_span(), c.ref_shape());
  CHECK(parent.q == want.q);
  CHECK(std::memcmp(parent.row_major_scales.data(), want.scales.data(), want.scales.size() * sizeof(float)) == 0);
  CHECK(twin.q == parent.q);
  CHECK(std::memcmp(twin.scales.data(), parent.scales.data(), twin.scales.size() * sizeof(float)) == 0);
  CHECK(padding_written(c, parent) == 0);
  CHECK(padding_written(c, twin) == 0);
  if (finite) {
    // Every code written (a NaN code 0x7f only comes from a non-finite h), and the float h within
    // one bf16 rounding (half an ulp, at most 2^-8 relative) plus exp's error of the float64 oracle.
    CHECK(std::count(twin.q.begin(), twin.q.end(), kernels_test::kPoisonCode) == 0);
    const std::vector<double> oracle = ref::silu_mul_h_oracle(c.gate_span(), c.up_span(), c.ref_shape());
    std::size_t far = 0;
    for (std::size_t i = 0; i < h.size(); ++i) {
      const double got = ref::bf16_to_float(h[i]);
      far += std::fabs(got - oracle[i]) <= std::fabs(oracle[i]) * (0x1p-8 + 0x1p-20) + 1e-38 ? 0 : 1;
    }
    CHECK(far == 0);
  }
  return parent;
}

}  // namespace

TEST_CASE("SiLU-mul FP8 quant on the host: parent == reference, twin bytes == parent bytes", "[kernels][silu_mul]") {
  auto runtime = Runtime::open(kernels_test::runtime_options(BackendChoice::kHost, 2));
  REQUIRE(runtime->has_device());
  const ops::SiluMulFp8QuantKernels kernels = runtime_kernels(*runtime);
  REQUIRE(kernels.parent_present());
  REQUIRE(kernels.twin.present());
  struct Shape {
    std::uint32_t m, k, pad;
    bool interleaved;
    ops::Fp8ScaleLayout layout;
    std::uint32_t m_aligned;
    bool pow2;
  };
  const Shape shapes[] = {
      {3, 128, 0, false, ops::Fp8ScaleLayout::kRowMajor, 0, false},       // one group, contiguous
      {4, 128, 8, false, ops::Fp8ScaleLayout::kColumnMajor, 4, true},     // m_aligned == M, UE8M0
      {3, 5120, 0, true, ops::Fp8ScaleLayout::kRowMajor, 0, false},       // one [M][2K] buffer
      {5, 5120, 0, true, ops::Fp8ScaleLayout::kColumnMajor, 8, true},     // padded column-major, UE8M0
      {5, 1152, 16, false, ops::Fp8ScaleLayout::kRowMajor, 0, true},      // strided rows, 9 groups (twin tail)
      {6, 1152, 8, false, ops::Fp8ScaleLayout::kColumnMajor, 12, false},  // strided, column-major padding
      {3, 17408, 0, true, ops::Fp8ScaleLayout::kRowMajor, 0, true},       // Qwen3.5-27B's K
  };
  std::uint64_t seed = 24000;
  for (const Shape& s : shapes) {
    SiluCase c = make_case(s.m, s.k, s.pad, s.interleaved, seed += 10);
    c.layout = s.layout;
    c.m_aligned = s.m_aligned;
    c.pow2 = s.pow2;
    const Outputs parent = check_parent_and_twin(*runtime, c);
    if (c.pow2) {
      for (float scale : parent.row_major_scales) {
        int exponent = 0;
        REQUIRE(std::frexp(scale, &exponent) == 0.5f);
      }
    }
  }
}

TEST_CASE("SiLU-mul FP8 quant on the host: non-finite and overflowing h, twin == parent == reference",
          "[kernels][silu_mul]") {
  auto runtime = Runtime::open(kernels_test::runtime_options(BackendChoice::kHost, 2));
  SiluCase c = make_case(3, 256, 0, false, 24500);
  const std::uint16_t specials[] = {0x7f80, 0xff80, 0x7fc0, 0x7f7f, 0xff7f, 0x0001, 0x8000, 0x0000};
  for (std::size_t i = 0; i < std::size(specials); ++i) {
    c.gate[i * 17] = specials[i];                         // row 0, group 0
    c.up[c.up_stride + 128 + i * 13] = specials[i];       // row 1, group 1
    c.gate[2 * std::size_t{c.gate_stride} + i] = 0x7f7f;  // row 2: silu(big) * up overflows
    c.up[2 * std::size_t{c.up_stride} + i] = 0x7f7f;
  }
  check_parent_and_twin(*runtime, c, false);
}

TEST_CASE("SiLU-mul FP8 quant on the host: the op picks by its floor and both picks write the same bytes",
          "[kernels][silu_mul]") {
  const std::uint32_t sm_count = 16;
  auto runtime = Runtime::open(kernels_test::runtime_options(BackendChoice::kHost, sm_count));
  const std::uint32_t k = 5120;
  const std::uint32_t floor = ops::silu_mul_fused_min_m(k, sm_count);
  REQUIRE(floor == 7);  // 2 x 16 CTAs at 5 CTAs per row
  for (const std::uint32_t m : {floor - 1, floor}) {
    const SiluCase c = make_case(m, k, 0, true, 25000 + m);
    INFO(c.describe());
    const Outputs parent = run(*runtime, c, Run::kParent);
    const Outputs op = run(*runtime, c, Run::kOp);
    REQUIRE(op.pick.has_value());
    CHECK(op.pick->twin == (m >= floor));
    CHECK(op.pick->reject == (m >= floor ? std::nullopt : std::optional(ops::kSiluMulTooFewCtas)));
    CHECK(op.q == parent.q);
    CHECK(op.scales == parent.scales);
    const Outputs off = run(*runtime, c, Run::kOp, false);
    CHECK_FALSE(off.pick->twin);
    CHECK(off.pick->reject == std::optional(ops::kSiluMulRejects[0]));
    CHECK(off.q == parent.q);
  }
}
