// kernels_fused_add_rmsnorm_host_test.cpp: the fused residual-add + RMSNorm parent and its
// vectorised twin (src/ops/fused_add_rmsnorm/) on the host backend of a hopper runtime, called by
// name through Runtime::run with the role forced: residual_out equals the reference's bytes, y
// equals the kernel-order reference bit for bit (and the float64 oracle within one bf16 rounding),
// the FP8 output equals the FP8 reference of y, and the twin's every output byte equals the
// parent's; at M 1, 3 and 17, hidden 5120 (Qwen3.5-27B), 384 and 204 (not a multiple of 8: the
// parent alone), in place and apart, with and without the FP8 output; outputs poisoned first.
#include <catch2/catch.hpp>
#include <cmath>
#include <optional>

#include "metrale/runtime.hpp"
#include "ops/fused_add_rmsnorm/fused_add_rmsnorm.hpp"
#include "support/kernels_support.hpp"

using namespace metrale;
using kernels_test::DeviceBuffer;

namespace {

constexpr std::uint16_t kPoison = 0x7fa5;  // a bf16 NaN neither kernel computes from finite inputs

struct Case {
  std::uint32_t m = 0, hidden = 0, x_stride = 0, r_stride = 0;
  bool in_place = false, quantised = false, pow2 = false;
  std::vector<std::uint16_t> x, residual, weight;
  [[nodiscard]] ref::RmsnormRefShape shape() const { return {m, hidden, x_stride, r_stride, 1e-6F}; }
};

Case make_case(std::uint32_t m, std::uint32_t hidden, std::uint32_t pad, bool in_place, bool quantised,
               std::uint64_t seed) {
  Case c;
  c.m = m;
  c.hidden = hidden;
  c.x_stride = hidden + pad;
  c.r_stride = hidden + 2 * pad;
  c.in_place = in_place;
  c.quantised = quantised;
  c.x = ref::random_bf16(std::size_t{m} * c.x_stride, seed, 8.0F);
  c.residual = ref::random_bf16(std::size_t{m} * c.r_stride, seed + 1, 4.0F);
  c.weight = ref::random_bf16(hidden, seed + 2, 2.0F);
  return c;
}

struct Outputs {
  std::vector<std::uint16_t> y, residual_out;  // residual_out dense [m][hidden]
  std::vector<std::uint8_t> q;
  std::vector<float> scales;
  ops::Pick pick;
};

Outputs run(Runtime& runtime, const Case& c, std::string_view role) {
  GpuBackend& gpu = *runtime.backend();
  DeviceBuffer x(gpu, c.x);
  DeviceBuffer residual(gpu, c.residual);
  DeviceBuffer weight(gpu, c.weight);
  DeviceBuffer y(gpu, std::vector<std::uint16_t>(std::size_t{c.m} * c.hidden, kPoison));
  DeviceBuffer apart(gpu, std::vector<std::uint16_t>(c.residual.size(), kPoison));
  const std::size_t codes = std::size_t{c.m} * c.hidden;
  DeviceBuffer q(gpu, std::vector<std::uint8_t>(codes, kernels_test::kPoisonCode));
  DeviceBuffer scales(gpu, std::vector<float>(codes / 128 + 1, kernels_test::poison_float()));
  const DevicePtr residual_out = c.in_place ? residual.ptr() : apart.ptr();
  const ops::NamedArg args[] = {{"x", x.ptr().address},
                                {"residual", residual.ptr().address},
                                {"weight", weight.ptr().address},
                                {"y", y.ptr().address},
                                {"residual_out", residual_out.address},
                                {"q", c.quantised ? q.ptr().address : 0},
                                {"scales", c.quantised ? scales.ptr().address : 0},
                                {"m", c.m},
                                {"hidden", c.hidden},
                                {"x_row_stride", c.x_stride},
                                {"residual_row_stride", c.r_stride},
                                {"pow2_scales", c.pow2 ? 1U : 0U}};
  Outputs out;
  out.pick = runtime.run("fused_add_rmsnorm", args, 0, role);
  out.y = y.read<std::uint16_t>(std::size_t{c.m} * c.hidden);
  const auto rows = (c.in_place ? residual : apart).read<std::uint16_t>(c.residual.size());
  for (std::uint32_t t = 0; t < c.m; ++t) {
    const auto first = rows.begin() + static_cast<std::ptrdiff_t>(std::size_t{t} * c.r_stride);
    out.residual_out.insert(out.residual_out.end(), first, first + c.hidden);
  }
  if (c.quantised) {
    out.q = q.read<std::uint8_t>(codes);
    out.scales = scales.read<float>(codes / 128 + 1);
    CHECK(kernels_test::is_poison(out.scales.back()));  // nothing past the last scale
    out.scales.pop_back();
  }
  return out;
}

// The parent against the references, then the twin (when `twin`) against the parent's bytes.
void check_case(Runtime& runtime, const Case& c, bool twin) {
  INFO("M=" << c.m << " hidden=" << c.hidden << " strides " << c.x_stride << "/" << c.r_stride
            << (c.in_place ? " in place" : " apart") << (c.quantised ? " +fp8" : "") << (c.pow2 ? " pow2" : ""));
  const Outputs parent = run(runtime, c, "parent");
  CHECK(parent.pick.kernel == ops::kRmsnormParentKernel);
  const ref::RmsnormRefResult want = ref::rmsnorm_reference(c.x, c.residual, c.weight, c.shape(), ops::kRmsnormBlock);
  CHECK(parent.residual_out == want.residual_out);
  CHECK(parent.y == want.y);
  // The float reference within one bf16 rounding (2^-8 relative) plus float's error of the oracle.
  const std::vector<double> oracle = ref::rmsnorm_oracle(c.x, c.residual, c.weight, c.shape());
  std::size_t far = 0;
  for (std::size_t i = 0; i < want.y.size(); ++i) {
    const double got = ref::bf16_to_float(want.y[i]);
    far += std::fabs(got - oracle[i]) <= std::fabs(oracle[i]) * (0x1p-8 + 0x1p-16) + 1e-30 ? 0 : 1;
  }
  CHECK(far == 0);
  if (c.quantised) {
    const ref::Fp8RefResult fp8 = ref::fp8_act_quant_reference(want.y, {c.m, c.hidden, c.hidden, c.pow2});
    CHECK(parent.q == fp8.q);
    CHECK(kernels_test::same_bits(parent.scales, fp8.scales));
  }
  if (!twin) {
    return;
  }
  const Outputs vec = run(runtime, c, "twin");
  CHECK(vec.pick.kernel == ops::kRmsnormTwinKernel);
  CHECK(vec.residual_out == parent.residual_out);
  CHECK(vec.y == parent.y);
  CHECK(vec.q == parent.q);
  CHECK(kernels_test::same_bits(vec.scales, parent.scales));
}

}  // namespace

TEST_CASE("fused add-RMSNorm on the host: parent == reference, twin bytes == parent bytes", "[kernels][rmsnorm]") {
  auto runtime = Runtime::open(kernels_test::runtime_options(BackendChoice::kHost, 2));
  REQUIRE(runtime->has_device());
  struct Shape {
    std::uint32_t m, hidden, pad;
    bool in_place, quantised, pow2, twin;
  };
  const Shape shapes[] = {
      {1, 5120, 0, true, true, false, true},    // decode, Qwen3.5-27B, in place, FP8
      {3, 5120, 0, false, false, false, true},  // apart, no FP8
      {17, 5120, 16, false, true, true, true},  // padded strides, UE8M0 scales
      {3, 384, 8, true, false, false, true},    // a small hidden: 48 chunks < one block's 128
      {17, 384, 0, false, true, false, true},   // small hidden with FP8 (3 groups)
      {3, 204, 0, true, false, false, false},   // hidden % 8 != 0: the parent's short chunk, no twin
      {1, 1024, 0, false, true, false, true},   // exactly 128 chunks: one per thread
  };
  std::uint64_t seed = 41000;
  for (const Shape& s : shapes) {
    Case c = make_case(s.m, s.hidden, s.pad, s.in_place, s.quantised, seed += 10);
    c.pow2 = s.pow2;
    check_case(*runtime, c, s.twin);
  }
}

TEST_CASE("fused add-RMSNorm on the host: rows of zeros, large and tiny values, twin == parent == reference",
          "[kernels][rmsnorm]") {
  auto runtime = Runtime::open(kernels_test::runtime_options(BackendChoice::kHost, 2));
  Case c = make_case(3, 1024, 0, true, true, 41500);
  for (std::size_t e = 0; e < c.hidden; ++e) {
    c.residual[e] = c.x[e] ^ 0x8000;                         // row 0: x + residual = 0 (rsqrt(eps))
    c.x[c.hidden + e] = ref::bf16_from_float(3.0e38F);       // row 1: z overflows to infinity
    c.x[2 * c.hidden + e] = ref::bf16_from_float(1.0e-30F);  // row 2: tiny sums near eps
    c.residual[2 * c.hidden + e] = ref::bf16_from_float(e % 2 == 0 ? 1.0e-30F : -3.0e-30F);
  }
  const Outputs parent = run(*runtime, c, "parent");
  const Outputs twin = run(*runtime, c, "twin");
  const ref::RmsnormRefResult want = ref::rmsnorm_reference(c.x, c.residual, c.weight, c.shape(), ops::kRmsnormBlock);
  CHECK(parent.residual_out == want.residual_out);
  CHECK(parent.y == want.y);
  CHECK(twin.y == parent.y);
  CHECK(twin.residual_out == parent.residual_out);
  CHECK(twin.q == parent.q);
  CHECK(kernels_test::same_bits(twin.scales, parent.scales));
}

TEST_CASE("fused add-RMSNorm on the host: the op picks the twin by its lever and guard, same bytes either way",
          "[kernels][rmsnorm]") {
  auto runtime = Runtime::open(kernels_test::runtime_options(BackendChoice::kHost, 2));
  const Case c = make_case(5, 5120, 0, false, true, 42000);
  const Outputs picked = run(*runtime, c, "");
  CHECK(picked.pick.kernel == ops::kRmsnormTwinKernel);  // hopper sets fused_add_rmsnorm_vec
  const Outputs parent = run(*runtime, c, "parent");
  CHECK(picked.y == parent.y);
  CHECK(picked.q == parent.q);
  const Case odd = make_case(2, 204, 0, false, false, 42100);
  const Outputs refused = run(*runtime, odd, "");
  CHECK(refused.pick.kernel == ops::kRmsnormParentKernel);
  REQUIRE(refused.pick.verdict("twin") != nullptr);
  CHECK(refused.pick.verdict("twin")->reason == std::optional(ops::kRmsnormRejects[2]));
}
