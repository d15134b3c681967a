// kernels_ba_gates_mma_shape_test.cpp: the tensor-core BA kernel specialised on its output-tile
// count (src/ops/ssm_ba_gates/ssm_ba_gates_mma.cuh's TILES, KernelParams::shape) on the host backend: the
// specialised variant writes the generic form's bytes and is within 1e-5 of the float64 oracle
// (random normal inputs, poisoned outputs), for every N its tiles take; the launcher refuses it at
// another N; the rule mapping N to TILES names why an N stays generic; a shape variant compiles
// in an NVRTC program of its own.
#include <catch2/catch.hpp>
#include <cstring>
#include <vector>

#include "jit/variant_builder.hpp"
#include "metrale/error.hpp"
#include "metrale/jit/kernel_registry.hpp"
#include "ops/op_kernels.hpp"
#include "ops/ssm_ba_gates/ssm_ba_gates.hpp"
#include "support/kernels_support.hpp"

using namespace metrale;
using kernels_test::BaCase;
using kernels_test::DeviceBuffer;

namespace {

constexpr KernelParams kGeneric{256, 128, 6, 0};
constexpr KernelParams kSix{256, 128, 6, 6};  // N in (80, 96]: Qwen3.5-27B's 96

// One variant of ssm_ba_gates_mma declared to the runtime's registry and run through the op's
// launcher into a poisoned output (64 poisoned rows past M show a write past the last token).
struct VariantRun {
  std::vector<float> out;
  std::size_t guard_written = 0;
};

VariantRun run_variant(Runtime& runtime, const BaCase& c, const KernelParams& params) {
  KernelRegistry& registry = runtime.registry();
  const auto variant = ops::op_kernel_variant(ops::kBaGatesMmaKernel, params);
  REQUIRE(variant);
  const VariantId id = registry.declare(*variant);
  GpuBackend& gpu = *runtime.backend();
  // On request: the generic form of a kernel with pinned shapes is not in load()'s batch.
  registry.load_now(gpu, std::span<const VariantId>(&id, 1));
  const KernelHandle handle = registry.handle(*registry.device_index(gpu), id);
  REQUIRE(handle.value != 0);
  const auto& s = c.shape;
  DeviceBuffer x(gpu, c.x), w(gpu, c.w), a_log(gpu, c.a_log), dt_bias(gpu, c.dt_bias);
  const std::size_t guard = kernels_test::kBaGuardRows * s.gate_stride;
  DeviceBuffer out(gpu, std::vector<float>(c.out_size() + guard, kernels_test::poison_float()));
  const ops::BaGatesArgs args{x.ptr(), w.ptr(), a_log.ptr(), dt_bias.ptr(), out.ptr(), s.m,
                              s.n,     s.k,     s.k_stride,  s.gate_stride, s.nv,      s.vheads_per_group};
  ops::launch_ba_gates_mma(gpu, handle, params, args);
  VariantRun run;
  run.out = out.read<float>(c.out_size() + guard);
  for (std::size_t i = c.out_size(); i < run.out.size(); ++i) {
    run.guard_written += kernels_test::is_poison(run.out[i]) ? 0 : 1;
  }
  run.out.resize(c.out_size());
  return run;
}

}  // namespace

TEST_CASE("BA gates on tensor cores (host): the 6-tile variant writes the generic form's bytes, within 1e-5",
          "[kernels][ba_gates_mma][shape]") {
  auto runtime = Runtime::open(kernels_test::runtime_options(BackendChoice::kHost, 132));
  REQUIRE(runtime->has_device());
  const ref::BaGatesRefShape shapes[] = {
      {70, 96, 1024, 1024, 96, 48, 3},    // Qwen3.5-27B's N at a short K; a second block of 6 tokens
      {33, 96, 1000, 1016, 101, 48, 48},  // K % 64 == 40, padded rows and outputs, stacked [b; a]
      {20, 84, 520, 536, 87, 42, 7},      // N = 84: a partial last tile (6 tiles of 16 hold 96)
      {130, 90, 256, 264, 90, 45, 3},     // N = 90, two blocks, the second of 2 tokens
  };
  std::uint64_t seed = 9100;
  for (const ref::BaGatesRefShape& s : shapes) {
    INFO(kernels_test::describe(s));
    const BaCase c = BaCase::normal(s, seed += 10);
    const VariantRun generic = run_variant(*runtime, c, kGeneric);
    const VariantRun six = run_variant(*runtime, c, kSix);
    CHECK(six.guard_written == 0);
    const kernels_test::BaCoverage coverage = kernels_test::ba_coverage(s, six.out);
    CHECK(coverage.unwritten == 0);
    CHECK(coverage.padding_written == 0);
    // The same loop over the same tiles: the same sums in the same order, so the same bytes.
    CHECK(std::memcmp(six.out.data(), generic.out.data(), six.out.size() * sizeof(float)) == 0);
    const double error = kernels_test::ba_relative_frobenius_error(s, six.out, c.oracle());
    INFO("relative Frobenius error against the float64 oracle: " << error);
    CHECK(error < metrale::check::kBaGatesMmaMaxRelativeFrobenius);
  }
}

TEST_CASE("BA gates on tensor cores: a specialised variant is refused at an N its tiles do not take",
          "[kernels][ba_gates_mma][shape]") {
  auto runtime = Runtime::open(kernels_test::runtime_options(BackendChoice::kHost, 132));
  for (const std::uint32_t n : {80u, 98u, 128u}) {
    INFO("N " << n);
    const BaCase c({4, n, 64, 64, n, n / 2, 1}, 9300 + n);
    CHECK_THROWS_WITH(
        run_variant(*runtime, c, kSix),
        Catch::Contains("b256l128g6s6 is specialised for N in (80, 96]") && Catch::Contains("N=" + std::to_string(n)));
  }
}

TEST_CASE("BA gates on tensor cores: N maps to its output tiles, or stays generic with a reason", "[ops][shape]") {
  CHECK(ops::ba_gates_mma_shape_for(96).tiles == 6);
  CHECK(ops::ba_gates_mma_shape_for(96).refusal.empty());
  CHECK(ops::ba_gates_mma_shape_for(81).tiles == 6);
  CHECK(ops::ba_gates_mma_shape_for(80).tiles == 5);
  CHECK(ops::ba_gates_mma_shape_for(1).tiles == 1);
  CHECK(ops::ba_gates_mma_shape_for(128).tiles == 8);
  CHECK(ops::ba_gates_mma_shape_for(129).tiles == 0);
  CHECK(ops::ba_gates_mma_shape_for(129).refusal == ops::kMmaShapeTooWide);
  CHECK(ops::ba_gates_mma_shape_for(0).tiles == 0);
  CHECK(ops::ba_gates_mma_shape_for(0).refusal == ops::kMmaShapeNoOutputs);
  // The catalog takes a shape on the kernel that declares one, in range, and nowhere else.
  CHECK_FALSE(ops::kernel_params_violation(ops::kBaGatesMmaKernel, kSix));
  CHECK_THAT(*ops::kernel_params_violation(ops::kBaGatesMmaKernel, {256, 128, 6, 9}), Catch::Contains("shape = 9"));
  CHECK_THAT(*ops::kernel_params_violation(ops::kBaGatesTwinKernel, {256, 64, 8, 6}),
             Catch::Contains("shape = 6: must be absent"));
  CHECK(ops::op_kernel_variant(ops::kBaGatesMmaKernel, kSix)->name_expression ==
        "metrale::kernels::ssm_ba_gates_mma<256, 128, 6, 6>");
  CHECK(kSix.tag() == "b256l128g6s6");
}

TEST_CASE("a shape-specialised variant compiles in an NVRTC program of its own", "[jit][shape]") {
  // Misses of one source share a program, except a shape variant: its image then holds only its
  // own code and it does not lengthen its generic form's program.
  std::vector<detail::BuildJob> jobs;
  for (const KernelParams& params : {kGeneric, kSix, KernelParams{256, 64, 3, 0}, KernelParams{256, 64, 3, 5}}) {
    jobs.push_back(detail::BuildJob{
        static_cast<VariantId>(jobs.size()), *ops::op_kernel_variant(ops::kBaGatesMmaKernel, params), {}});
  }
  jobs.push_back(detail::BuildJob{4, *ops::op_kernel_variant(ops::kBaGatesParentKernel, {256, 64, 0}), {}});
  const std::vector<std::size_t> misses{0, 1, 2, 3, 4};
  const auto groups = detail::group_by_source(jobs, misses);
  REQUIRE(groups.size() == 4);
  CHECK(groups[0] == std::vector<std::size_t>{0, 2});  // the generic forms of ssm_ba_gates_mma.cuh
  CHECK(groups[1] == std::vector<std::size_t>{1});
  CHECK(groups[2] == std::vector<std::size_t>{3});
  CHECK(groups[3] == std::vector<std::size_t>{4});  // another source
}
