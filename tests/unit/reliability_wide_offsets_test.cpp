// reliability_wide_offsets_test.cpp: shapes whose element offsets pass 2^32 (M x K_stride,
// M x gate_stride, M x x_row_stride, group x m_aligned) are valid, so the ops must accept them
// and the kernels must index in 64 bits: run through the public op entries on a HostBackend,
// with the strided tensors in a reserved (not committed) virtual region, and compared byte for
// byte with the references on compact copies. A kernel computing an offset in 32 bits would
// read or write row 0 for row 2 (2 x 2^31 wraps to 0) and fail the comparison.
#include <catch2/catch.hpp>
#include <cstring>
#include <vector>

#include "ops/fp8_act_quant/fp8_act_quant.hpp"
#include "ops/ssm_ba_gates/ssm_ba_gates.hpp"
#include "ref/bf16.hpp"
#include "support/reliability_host_ops.hpp"

using namespace metrale;
using namespace metrale::ops;
using namespace metrale::reliability_test;

namespace {

constexpr std::uint32_t kWideStride = 0x80000000u;  // 2^31 elements: row 2 starts at 2^32 elements
constexpr float kPoison = -12345.0f;

}  // namespace

TEST_CASE("reliability: BA gates rows 2^31 elements apart run to the reference's bytes", "[reliability][ops]") {
  const std::uint32_t m = 3, n = 8, k = 64, nv = 4, vpg = 2;
  const std::uint64_t x_row_bytes = std::uint64_t{kWideStride} * 2;
  const std::uint64_t out_row_bytes = std::uint64_t{kWideStride} * 4;
  VirtualRegion x_region((m - 1) * x_row_bytes + k * 2);
  VirtualRegion out_region((m - 1) * out_row_bytes + 2 * nv * 4);
  REQUIRE(x_region.ok());
  REQUIRE(out_region.ok());

  const auto x = ref::random_bf16(std::size_t{m} * k, 31);
  const auto w = ref::random_bf16(std::size_t{n} * k, 32, 0.1f);
  const auto a_log = ref::random_floats(nv, 33, -1.0f, 1.0f);
  const auto dt_bias = ref::random_floats(nv, 34, -1.0f, 1.0f);
  std::vector<float> expected(std::size_t{m} * 2 * nv, 0.0f);
  ref::ssm_ba_gates_reference({x, w, a_log, dt_bias}, {m, n, k, k, 2 * nv, nv, vpg}, expected);

  HostBackend gpu(small_host());
  const BaGatesKernels kernels = load_ba_kernels(gpu);
  for (const bool requested : {false, true}) {
    INFO("lever " << requested);
    const std::vector<float> poison(2 * nv, kPoison);
    for (std::uint32_t t = 0; t < m; ++t) {
      x_region.write(t * x_row_bytes, x.data() + std::size_t{t} * k, k * 2);
      out_region.write(t * out_row_bytes, poison.data(), poison.size() * 4);
    }
    const BaGatesArgs args{x_region.at(0),
                           upload(gpu, w),
                           upload(gpu, a_log),
                           upload(gpu, dt_bias),
                           out_region.at(0),
                           m,
                           n,
                           k,
                           kWideStride,
                           kWideStride,
                           nv,
                           vpg};
    CHECK(ssm_ba_gates(gpu, kernels, requested, args).twin == requested);
    for (std::uint32_t t = 0; t < m; ++t) {
      INFO("token " << t);
      std::vector<float> row(2 * nv);
      out_region.read(t * out_row_bytes, row.data(), row.size() * 4);
      CHECK(std::memcmp(row.data(), expected.data() + std::size_t{t} * 2 * nv, row.size() * 4) == 0);
    }
  }
}

TEST_CASE("reliability: FP8 rows and column-major scales 2^31 elements apart run to the reference's bytes",
          "[reliability][ops]") {
  const std::uint32_t m = 3, k = 384, groups = k / 128;  // scale (t, g=2) lives at t + 2^32 elements
  const std::uint64_t x_row_bytes = std::uint64_t{kWideStride} * 2;
  const std::uint64_t scale_group_bytes = std::uint64_t{kWideStride} * 4;
  VirtualRegion x_region((m - 1) * x_row_bytes + k * 2);
  VirtualRegion scale_region((groups - 1) * scale_group_bytes + m * 4);
  REQUIRE(x_region.ok());
  REQUIRE(scale_region.ok());

  const auto x = ref::random_bf16(std::size_t{m} * k, 41, 5.0f);
  const auto expected = ref::fp8_act_quant_reference(x, {m, k, k, false});

  HostBackend gpu(small_host());
  const Fp8QuantKernels kernels = load_fp8_kernels(gpu);
  for (const bool requested : {false, true}) {
    INFO("lever " << requested);
    const std::vector<float> poison(m, kPoison);
    for (std::uint32_t t = 0; t < m; ++t) {
      x_region.write(t * x_row_bytes, x.data() + std::size_t{t} * k, k * 2);
    }
    for (std::uint32_t g = 0; g < groups; ++g) {
      scale_region.write(g * scale_group_bytes, poison.data(), m * 4);
    }
    Fp8QuantArgs args;
    args.x = x_region.at(0);
    args.q = upload(gpu, std::vector<std::uint8_t>(std::size_t{m} * k, 0xAB));
    args.scales = scale_region.at(0);
    args.m = m;
    args.k = k;
    args.x_row_stride = kWideStride;
    args.scale_layout = Fp8ScaleLayout::kColumnMajor;
    args.m_aligned = kWideStride;
    CHECK(fp8_act_quant(gpu, kernels, requested, args).twin == requested);
    CHECK(download<std::uint8_t>(gpu, args.q, std::size_t{m} * k) == expected.q);
    for (std::uint32_t g = 0; g < groups; ++g) {
      std::vector<float> column(m);
      scale_region.read(g * scale_group_bytes, column.data(), m * 4);
      for (std::uint32_t t = 0; t < m; ++t) {
        INFO("token " << t << " group " << g);
        CHECK(column[t] == expected.scales[std::size_t{t} * groups + g]);
      }
    }
  }
}
