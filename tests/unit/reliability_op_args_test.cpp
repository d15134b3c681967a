// reliability_op_args_test.cpp: hostile arguments to the public op entries on a HostBackend with
// the shipped kernels loaded. Each bad argument must be an ArgumentError whose message names the
// op, the argument and the constraint, for both picks (lever off: parent/shared; lever on: the
// twin), and nothing may run: the poisoned output is still poison afterwards. The valid
// arguments the cases start from are run first, so a refusal is never the fixture's fault.
#include <catch2/catch.hpp>
#include <functional>
#include <string>
#include <vector>

#include "metrale/error.hpp"
#include "ref/bf16.hpp"
#include "support/reliability_host_ops.hpp"

using namespace metrale;
using namespace metrale::ops;
using namespace metrale::reliability_test;

namespace {

constexpr float kPoison = -12345.0f;

// M = 4 tokens, N = 8 outputs (nv = 4, two v-heads per group), K = 64.
struct BaFixture {
  HostBackend gpu{small_host()};
  BaGatesKernels kernels = load_ba_kernels(gpu);
  BaGatesArgs valid;
  std::size_t out_count = 0;

  BaFixture() {
    const std::uint32_t m = 4, n = 8, k = 64, nv = 4;
    out_count = std::size_t{m} * 2 * nv;
    valid = BaGatesArgs{upload(gpu, ref::random_bf16(std::size_t{m} * k, 1)),
                        upload(gpu, ref::random_bf16(std::size_t{n} * k, 2, 0.1f)),
                        upload(gpu, ref::random_floats(nv, 3, -1.0f, 1.0f)),
                        upload(gpu, ref::random_floats(nv, 4, -1.0f, 1.0f)),
                        upload(gpu, std::vector<float>(out_count, kPoison)),
                        m,
                        n,
                        k,
                        k,
                        2 * nv,
                        nv,
                        2};
  }
  [[nodiscard]] bool output_untouched() {
    for (const float value : download<float>(gpu, valid.gate_out, out_count)) {
      if (value != kPoison) {
        return false;
      }
    }
    return true;
  }
};

// M = 6 tokens, K = 256 (two groups of 128).
struct Fp8Fixture {
  HostBackend gpu{small_host()};
  Fp8QuantKernels kernels = load_fp8_kernels(gpu);
  Fp8QuantArgs valid;
  std::size_t q_bytes = 0;

  Fp8Fixture() {
    const std::uint32_t m = 6, k = 256;
    q_bytes = std::size_t{m} * k;
    valid.x = upload(gpu, ref::random_bf16(q_bytes, 5, 3.0f));
    valid.q = upload(gpu, std::vector<std::uint8_t>(q_bytes, 0xAB));
    valid.scales = upload(gpu, std::vector<float>(std::size_t{8} * (k / 128), kPoison));
    valid.m = m;
    valid.k = k;
    valid.x_row_stride = k;
  }
  [[nodiscard]] bool output_untouched() {
    for (const std::uint8_t byte : download<std::uint8_t>(gpu, valid.q, q_bytes)) {
      if (byte != 0xAB) {
        return false;
      }
    }
    return true;
  }
};

std::string contains_all(const std::vector<std::string>& needles) {
  std::string joined;
  for (const auto& needle : needles) {
    joined += "[" + needle + "] ";
  }
  return joined;
}

void require_ba_refused(const std::function<void(BaGatesArgs&)>& mutate, const std::vector<std::string>& needles) {
  BaFixture fixture;
  BaGatesArgs args = fixture.valid;
  mutate(args);
  for (const bool requested : {false, true}) {
    INFO("lever " << requested << "; expected an ArgumentError containing " << contains_all(needles));
    std::string message;
    try {
      ssm_ba_gates(fixture.gpu, fixture.kernels, requested, args);
    } catch (const ArgumentError& error) {
      message = error.what();
    }
    INFO("message: " << message);
    REQUIRE(message.starts_with("ssm_ba_gates: "));
    for (const auto& needle : needles) {
      CHECK_THAT(message, Catch::Contains(needle));
    }
  }
  CHECK(fixture.output_untouched());
}

void require_fp8_refused(const std::function<void(Fp8QuantArgs&)>& mutate, const std::vector<std::string>& needles) {
  Fp8Fixture fixture;
  Fp8QuantArgs args = fixture.valid;
  mutate(args);
  for (const bool requested : {false, true}) {
    INFO("lever " << requested << "; expected an ArgumentError containing " << contains_all(needles));
    std::string message;
    try {
      fp8_act_quant(fixture.gpu, fixture.kernels, requested, args);
    } catch (const ArgumentError& error) {
      message = error.what();
    }
    INFO("message: " << message);
    REQUIRE(message.starts_with("fp8_act_quant: "));
    for (const auto& needle : needles) {
      CHECK_THAT(message, Catch::Contains(needle));
    }
  }
  CHECK(fixture.output_untouched());
}

}  // namespace

TEST_CASE("reliability: the op fixtures' valid arguments run both kernels of each op", "[reliability][ops]") {
  BaFixture ba;
  CHECK_FALSE(ssm_ba_gates(ba.gpu, ba.kernels, false, ba.valid).twin);
  CHECK(ssm_ba_gates(ba.gpu, ba.kernels, true, ba.valid).twin);
  CHECK_FALSE(ba.output_untouched());
  Fp8Fixture fp8;
  CHECK_FALSE(fp8_act_quant(fp8.gpu, fp8.kernels, false, fp8.valid).twin);
  CHECK(fp8_act_quant(fp8.gpu, fp8.kernels, true, fp8.valid).twin);
  CHECK_FALSE(fp8.output_untouched());
}

TEST_CASE("reliability: ssm_ba_gates refuses null and misaligned pointers by name", "[reliability][ops]") {
  require_ba_refused([](BaGatesArgs& a) { a.x = DevicePtr{}; }, {"x is a null pointer"});
  require_ba_refused([](BaGatesArgs& a) { a.weight = DevicePtr{}; }, {"weight is a null pointer"});
  require_ba_refused([](BaGatesArgs& a) { a.a_log = DevicePtr{}; }, {"a_log is a null pointer"});
  require_ba_refused([](BaGatesArgs& a) { a.dt_bias = DevicePtr{}; }, {"dt_bias is a null pointer"});
  require_ba_refused([](BaGatesArgs& a) { a.gate_out = DevicePtr{}; }, {"gate_out is a null pointer"});
  require_ba_refused([](BaGatesArgs& a) { a.x.address += 2; }, {"x (0x", "is not 16-byte aligned"});
  require_ba_refused([](BaGatesArgs& a) { a.weight.address += 8; }, {"weight (0x", "is not 16-byte aligned"});
  require_ba_refused([](BaGatesArgs& a) { a.a_log.address += 2; }, {"a_log (0x", "is not 4-byte aligned"});
  require_ba_refused([](BaGatesArgs& a) { a.dt_bias.address += 1; }, {"dt_bias (0x", "is not 4-byte aligned"});
  require_ba_refused([](BaGatesArgs& a) { a.gate_out.address += 2; }, {"gate_out (0x", "is not 4-byte aligned"});
}

TEST_CASE("reliability: ssm_ba_gates refuses empty and inconsistent shapes by name", "[reliability][ops]") {
  require_ba_refused([](BaGatesArgs& a) { a.m = 0; }, {"M=0", "must be positive"});
  require_ba_refused([](BaGatesArgs& a) { a.n = 0; }, {"N=0", "must be positive"});
  require_ba_refused([](BaGatesArgs& a) { a.k = 0; }, {"K=0", "must be positive"});
  require_ba_refused([](BaGatesArgs& a) { a.k = 60; }, {"K=60 is not a multiple of 8"});
  require_ba_refused([](BaGatesArgs& a) { a.k_stride = 56; }, {"K_stride=56 < K=64"});
  require_ba_refused([](BaGatesArgs& a) { a.k_stride = 68; }, {"K_stride=68 is not a multiple of 8"});
  require_ba_refused([](BaGatesArgs& a) { a.gate_stride = 7; }, {"gate_stride=7 < 2*nv=8"});
  require_ba_refused([](BaGatesArgs& a) { a.nv = 3; }, {"N=8 and nv=3", "nv == N/2"});
  // nv above N/2 would index gate_out and a_log past their ends: refused, not launched.
  require_ba_refused(
      [](BaGatesArgs& a) {
        a.nv = 5;
        a.gate_stride = 10;
      },
      {"N=8 and nv=5", "nv == N/2"});
  require_ba_refused([](BaGatesArgs& a) { a.n = 7; }, {"N=7", "N must be even"});
  require_ba_refused([](BaGatesArgs& a) { a.vheads_per_group = 0; }, {"vheads_per_group=0 must be positive"});
  require_ba_refused([](BaGatesArgs& a) { a.vheads_per_group = 3; }, {"vheads_per_group=3", "divide nv=4"});
  require_ba_refused([](BaGatesArgs& a) { a.vheads_per_group = 8; }, {"vheads_per_group=8", "divide nv=4"});
}

TEST_CASE("reliability: ssm_ba_gates refuses extents past 64 bits and grids past CUDA's limits", "[reliability][ops]") {
  require_ba_refused(
      [](BaGatesArgs& a) {
        a.m = 0xffffffffu;
        a.k_stride = 0xfffffff8u;
      },
      {"x extent (M x K_stride bf16)", "overflows 64 bits"});
  require_ba_refused(
      [](BaGatesArgs& a) {
        a.n = 0xfffffffeu;
        a.nv = 0x7fffffffu;
        a.gate_stride = 0xfffffffeu;
        a.vheads_per_group = 1;
        a.k = 0xfffffff8u;
        a.k_stride = a.k;
        a.m = 1;
      },
      {"weight extent (N x K bf16)", "overflows 64 bits"});
  require_ba_refused(
      [](BaGatesArgs& a) {
        a.m = 0x7fffffffu;
        a.gate_stride = 0xfffffff0u;
      },
      {"gate_out extent (M x gate_stride fp32)", "overflows 64 bits"});
  require_ba_refused([](BaGatesArgs& a) { a.m = 0x80000000u; }, {"M=2147483648 exceeds the largest grid.x"});
}

TEST_CASE("reliability: the BA parent refuses an N whose grid.y passes 65535", "[reliability][ops]") {
  // Without a twin nothing can take the shape: refused by name before anything runs. (With a twin,
  // the twin takes it: ops_ssm_ba_gates_op.cpp, on a recording backend, since these buffers are
  // sized for the valid shape.)
  BaFixture fixture;
  BaGatesKernels parent_only = fixture.kernels;
  parent_only.twin = KernelHandle{};
  BaGatesArgs args = fixture.valid;
  args.n = 4 * 65536 + 2;  // ceil(N/4) = 65537 blocks per token
  args.nv = args.n / 2;
  args.gate_stride = args.n;
  args.vheads_per_group = 1;
  CHECK_THROWS_WITH(ssm_ba_gates(fixture.gpu, parent_only, false, args),
                    Catch::Contains("N=262146 needs 65537 parent blocks per token, more than grid.y allows"));
  CHECK(fixture.output_untouched());
}

TEST_CASE("reliability: fp8_act_quant refuses null and misaligned pointers by name", "[reliability][ops]") {
  require_fp8_refused([](Fp8QuantArgs& a) { a.x = DevicePtr{}; }, {"x is a null pointer"});
  require_fp8_refused([](Fp8QuantArgs& a) { a.q = DevicePtr{}; }, {"q is a null pointer"});
  require_fp8_refused([](Fp8QuantArgs& a) { a.scales = DevicePtr{}; }, {"scales is a null pointer"});
  require_fp8_refused([](Fp8QuantArgs& a) { a.x.address += 8; }, {"x (0x", "is not 16-byte aligned"});
  require_fp8_refused([](Fp8QuantArgs& a) { a.q.address += 4; }, {"q (0x", "is not 8-byte aligned"});
  require_fp8_refused([](Fp8QuantArgs& a) { a.scales.address += 2; }, {"scales (0x", "is not 4-byte aligned"});
}

TEST_CASE("reliability: fp8_act_quant refuses bad shapes and column-major m_aligned by name", "[reliability][ops]") {
  require_fp8_refused([](Fp8QuantArgs& a) { a.m = 0; }, {"M=0", "must be positive"});
  require_fp8_refused([](Fp8QuantArgs& a) { a.k = 0; }, {"K=0", "must be positive"});
  require_fp8_refused([](Fp8QuantArgs& a) { a.k = 200; }, {"K=200 is not a multiple of the group size 128"});
  require_fp8_refused([](Fp8QuantArgs& a) { a.x_row_stride = 128; }, {"x_row_stride=128 < K=256"});
  require_fp8_refused([](Fp8QuantArgs& a) { a.x_row_stride = 260; }, {"x_row_stride=260 is not a multiple of 8"});
  for (const std::uint32_t bad : {0u, 4u, 5u, 10u}) {  // below M = 6, or not a multiple of 4
    INFO("m_aligned " << bad);
    require_fp8_refused(
        [bad](Fp8QuantArgs& a) {
          a.scale_layout = Fp8ScaleLayout::kColumnMajor;
          a.m_aligned = bad;
        },
        {"column-major scales need m_aligned >= M and a multiple of 4", "m_aligned=" + std::to_string(bad)});
  }
  require_fp8_refused(
      [](Fp8QuantArgs& a) {
        a.m = 0xffffffffu;
        a.k = 0xffffff80u;
        a.x_row_stride = a.k;
      },
      {"x extent (M x x_row_stride bf16)", "overflows 64 bits"});
  require_fp8_refused([](Fp8QuantArgs& a) { a.m = 0x80000000u; }, {"M=2147483648 exceeds the largest grid.x"});
  require_fp8_refused(
      [](Fp8QuantArgs& a) {
        a.k = 128u * 65536u;
        a.x_row_stride = a.k;
      },
      {"65536 groups per row, more than grid.y allows (65535)"});
}

TEST_CASE("reliability: an op with no kernel loaded is a BackendError, not a launch", "[reliability][ops]") {
  BaFixture ba;
  CHECK_THROWS_AS(ssm_ba_gates(ba.gpu, BaGatesKernels{}, true, ba.valid), BackendError);
  CHECK(ba.output_untouched());
  Fp8Fixture fp8;
  CHECK_THROWS_AS(fp8_act_quant(fp8.gpu, Fp8QuantKernels{}, false, fp8.valid), BackendError);
  CHECK(fp8.output_untouched());
}
