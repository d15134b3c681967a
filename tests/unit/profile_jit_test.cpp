// Profiles of kernel variants the host backend has no profiled built-in of: the host JIT compiles
// them as profiled objects (src/host/host_jit.hpp, the built-in profiled unit's flags). A
// profiled JIT object of the built-in's own parameters records exactly the built-in's traffic;
// a `--variant` reaches the profile's launch and its registers' target (profile/variant_override.hpp)
// and its traffic matches the bytes and MMAs counted by hand; bad specs are refused by name.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "hardware/hardware_loader.hpp"
#include "hardware/target_selection.hpp"
#include "host/host_backend.hpp"
#include "host/host_jit.hpp"
#include "metrale/error.hpp"
#include "metrale/jit/source_set.hpp"
#include "metrale/ops/op_declaration.hpp"
#include "metrale/ops/ssm_ba_gates.hpp"
#include "ops/op_kernels.hpp"
#include "ops/ssm_ba_gates/ssm_ba_gates.hpp"
#include "profile/op_profile.hpp"
#include "profile/target_resources.hpp"
#include "profile/variant_override.hpp"
#include "ref/bf16.hpp"
#include "support/hopper_target.hpp"
#include "support/isolated_runtime.hpp"
#include "support/profile_ba_args.hpp"
#include "support/temp_dir.hpp"

namespace {

constexpr float kPoison = -12345.0F;

const metrale::HardwareTarget& hopper() { return metrale::test::hopper_target(); }

// CXX unset, PATH the default: the system compiler CI installs (tools/install_deps.sh: g++).
std::optional<std::string> no_environment(const char* /*name*/) { return std::nullopt; }

struct ProfiledRun {
  metrale::LaunchTraffic traffic;
  std::vector<float> out;
};

// One profiled launch of the tensor-core BA kernel loaded as `kernel` at `params`, on random
// inputs, its output poisoned first.
ProfiledRun run_mma(metrale::HostBackend& gpu, std::string_view kernel, const metrale::KernelParams& params) {
  const std::uint32_t m = 100, n = 96, k = 1024, nv = 48;
  const auto x = metrale::ref::random_bf16(std::size_t{m} * k, 31);
  const auto w = metrale::ref::random_bf16(std::size_t{n} * k, 32);
  const auto a_log = metrale::ref::random_floats(nv, 33, -1.0F, 1.0F);
  const auto dt_bias = metrale::ref::random_floats(nv, 34, -1.0F, 1.0F);
  const metrale::ops::BaGatesArgs args =
      metrale::test::upload_ba_args(gpu, {m, n, k, &x, &w, &a_log, &dt_bias, kPoison});
  metrale::LoadRequest load;
  load.kernel = kernel;
  load.params = params;
  const metrale::KernelHandle handle = gpu.load(load);
  gpu.begin_profile({0, 1});
  metrale::ops::launch_ba_gates_mma(gpu, handle, params, args);
  std::vector<metrale::LaunchTraffic> launches = gpu.end_profile();
  REQUIRE(launches.size() == 1);
  ProfiledRun run{launches[0], std::vector<float>(std::size_t{m} * n)};
  gpu.copy_to_host(run.out.data(), args.gate_out, run.out.size() * sizeof(float));
  for (metrale::DevicePtr ptr : {args.x, args.weight, args.a_log, args.dt_bias, args.gate_out}) {
    gpu.free(ptr);
  }
  return run;
}

bool any_file_named(const std::filesystem::path& dir, std::string_view part) {
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().filename().string().find(part) != std::string::npos) {
      return true;
    }
  }
  return false;
}

}  // namespace

TEST_CASE("profile: a profiled host-JIT object records what the profiled built-in records", "[profile][jit]") {
  metrale::test::TempDir cache("metrale-profile-jit");
  metrale::HostBackendOptions options;
  options.profiled_kernels = true;
  options.worker_threads = 2;
  options.jit_cache_dir = cache.path();
  options.jit_env = no_environment;
  metrale::HostBackend gpu(options);
  // The built-in's own parameters, compiled through the JIT path under another name: the
  // backend's table already holds the built-in, so only a second name forces the compiler.
  const metrale::KernelParams params{256, 128, 6};
  const auto variant = metrale::ops::op_kernel_variant(metrale::ops::kBaGatesMmaKernel, params);
  REQUIRE(variant);
  metrale::SourceSet sources;
  sources.add_embedded_templates(no_environment);
  metrale::host::HostJit jit(cache.path(), no_environment);
  metrale::host::HostJitResult built =
      jit.build({"ssm_ba_gates_mma_jit", params, variant->name_expression, variant->source, &sources.sources(), true});
  INFO(built.reason);
  REQUIRE(built.kernel);
  gpu.add_kernel(std::move(*built.kernel));
  CHECK(any_file_named(cache.path(), ".host-profiled."));

  const ProfiledRun builtin = run_mma(gpu, metrale::ops::kBaGatesMmaKernel, params);
  const ProfiledRun jitted = run_mma(gpu, "ssm_ba_gates_mma_jit", params);
  CHECK(std::none_of(builtin.out.begin(), builtin.out.end(), [](float v) { return v == kPoison; }));
  CHECK(std::memcmp(builtin.out.data(), jitted.out.data(), builtin.out.size() * sizeof(float)) == 0);
  const metrale::LaunchTraffic& a = builtin.traffic;
  const metrale::LaunchTraffic& b = jitted.traffic;
  // Something was recorded at all (an object whose kernel bound to the executable's plain copy
  // would record nothing), and all of it equally.
  CHECK(a.dram_read_bytes > 0);
  CHECK(a.tensor_flops > 0);
  CHECK(a.async_bytes > 0);
  CHECK(b.dram_read_bytes == a.dram_read_bytes);
  CHECK(b.dram_write_bytes == a.dram_write_bytes);
  CHECK(b.l2_read_bytes == a.l2_read_bytes);
  CHECK(b.l2_write_bytes == a.l2_write_bytes);
  CHECK(b.load_requests == a.load_requests);
  CHECK(b.store_requests == a.store_requests);
  CHECK(b.load_sectors == a.load_sectors);
  CHECK(b.store_sectors == a.store_sectors);
  CHECK(b.async_bytes == a.async_bytes);
  CHECK(b.async_in_flight_bytes == a.async_in_flight_bytes);
  CHECK(b.tensor_flops == a.tensor_flops);
  CHECK(b.fma == a.fma);
  CHECK(b.flops == a.flops);
  CHECK(b.special_functions == a.special_functions);
  CHECK(b.shuffles == a.shuffles);
}

TEST_CASE("profile: a --variant is what the profile launches, compiled by the host JIT", "[profile][jit]") {
  metrale::test::TempDir cache("metrale-profile-variant");
  const std::vector<metrale::VariantOverride> overrides{
      metrale::parse_variant_override("ssm_ba_gates_mma:lanes=128,groups=4")};
  const metrale::HardwareTarget target =
      metrale::with_variant_overrides(hopper(), metrale::ops::library_ops().get("ssm_ba_gates"), overrides);
  REQUIRE(target.find_kernel("ssm_ba_gates_mma") != nullptr);
  CHECK(target.find_kernel("ssm_ba_gates_mma")->params == metrale::KernelParams{256, 128, 4});
  CHECK(target.find_kernel("ssm_ba_gates_hopper")->params == hopper().find_kernel("ssm_ba_gates_hopper")->params);

  const std::uint32_t m = 256, n = 96, k = 1024;
  metrale::ProfileRequest request;
  request.op = &metrale::ops::library_ops().get("ssm_ba_gates");
  request.shape = {m, n, k, 0};
  request.kernels = {"mma"};
  request.full_grid = true;
  request.wave_blocks = 1;
  request.worker_threads = 2;
  request.jit_cache_dir = cache.path();
  const auto rows = metrale::profile_op(target, request);
  REQUIRE(rows.size() == 1);
  CHECK(rows[0].params == metrale::KernelParams{256, 128, 4});
  CHECK(any_file_named(cache.path(), "ssm_ba_gates_mma.b256l128g4.host-profiled."));
  const metrale::LaunchTraffic& t = rows[0].traffic;
  // Two tiles of 128 tokens, each split over a cluster of 8 CTAs (16 chunks of 64 K): a tile's
  // CTAs stream the whole weight (96 x 1024 bf16) and its 128 x rows once between them, and each
  // reads a_log and dt_bias for its 16 rows of the epilogue.
  const double weight = 96.0 * 1024 * 2, x = 256.0 * 1024 * 2, gates = 2 * 48 * 4;
  CHECK(t.grid.x == 16);
  CHECK(t.l2_read_bytes == 2 * weight + x + 16 * gates);
  CHECK(t.async_bytes == 2 * weight + x);
  CHECK(t.dram_read_bytes == x + weight + gates);
  CHECK(t.dram_write_bytes == 256.0 * 96 * 4);
  // 8 token tiles x 6 output tiles x 64 k-steps of 16 per tile, 2 x 16^3 FLOPs each.
  CHECK(t.tensor_flops == 2.0 * 8 * 6 * 64 * 2 * 16 * 16 * 16);
  CHECK(t.async_in_flight_bytes > 0);
}

TEST_CASE("profile: --variant specs the catalog refuses are named errors", "[profile]") {
  using metrale::parse_variant_override;
  const auto apply = [](std::string_view spec, std::string_view op = "ssm_ba_gates") {
    const std::vector<metrale::VariantOverride> one{parse_variant_override(spec)};
    return metrale::with_variant_overrides(hopper(), metrale::ops::library_ops().get(op), one);
  };
  CHECK_THROWS_WITH(parse_variant_override("ssm_ba_gates_mma"), Catch::Contains("expected KERNEL:"));
  CHECK_THROWS_WITH(parse_variant_override("ssm_ba_gates_mma:"), Catch::Contains("no parameters"));
  CHECK_THROWS_WITH(parse_variant_override("ssm_ba_gates_mma:warps=4"), Catch::Contains("unknown key 'warps'"));
  CHECK_THROWS_WITH(parse_variant_override("ssm_ba_gates_mma:groups"), Catch::Contains("expected key=value"));
  CHECK_THROWS_WITH(parse_variant_override("ssm_ba_gates_mma:groups=4,groups=5"),
                    Catch::Contains("groups given twice"));
  CHECK_THROWS_WITH(parse_variant_override("ssm_ba_gates_mma:groups=-4"), Catch::Contains("not a positive integer"));
  CHECK_THROWS_WITH(parse_variant_override("ssm_ba_gates_mma:groups=0"), Catch::Contains("not a positive integer"));
  CHECK_THROWS_WITH(
      apply("ssm_ba_gates_mma:lanes=100"),
      Catch::Contains("--variant ssm_ba_gates_mma:lanes=100: kernels.ssm_ba_gates_mma.lanes: lanes = 100"));
  CHECK_THROWS_WITH(apply("ssm_ba_gates_mma:groups=40"), Catch::Contains("kernels.ssm_ba_gates_mma.groups"));
  CHECK_THROWS_WITH(apply("ssm_ba_gates:groups=4"), Catch::Contains("kernels.ssm_ba_gates.groups: groups = 4"));
  CHECK_THROWS_WITH(apply("fp8_act_quant_hopper:groups=4"), Catch::Contains("not a kernel of ba-gates"));
  CHECK_THROWS_WITH(apply("ssm_ba_gates_mma:groups=4", "fp8_act_quant"), Catch::Contains("not a kernel of fp8-quant"));
  const std::vector<metrale::VariantOverride> twice{parse_variant_override("ssm_ba_gates_mma:groups=4"),
                                                    parse_variant_override("ssm_ba_gates_mma:groups=6")};
  CHECK_THROWS_WITH(metrale::with_variant_overrides(hopper(), metrale::ops::library_ops().get("ssm_ba_gates"), twice),
                    Catch::Contains("one per kernel"));
  // A kernel the target does not ship is added, in name order (find_kernel searches sorted).
  metrale::HardwareTarget without = hopper();
  std::erase_if(without.kernels, [](const metrale::KernelEntry& e) { return e.name == "ssm_ba_gates_mma"; });
  const std::vector<metrale::VariantOverride> add{
      parse_variant_override("ssm_ba_gates_mma:block=256,lanes=64,groups=2")};
  const metrale::HardwareTarget added =
      metrale::with_variant_overrides(without, metrale::ops::library_ops().get("ssm_ba_gates"), add);
  REQUIRE(added.find_kernel("ssm_ba_gates_mma") != nullptr);
  CHECK(added.find_kernel("ssm_ba_gates_mma")->params == metrale::KernelParams{256, 64, 2});
  CHECK(added.find_kernel("ssm_ba_gates_hopper") != nullptr);
  // Left out of the spec and shipped by no one: the catalog says which parameter is missing.
  const std::vector<metrale::VariantOverride> partial{parse_variant_override("ssm_ba_gates_mma:groups=2")};
  CHECK_THROWS_WITH(metrale::with_variant_overrides(without, metrale::ops::library_ops().get("ssm_ba_gates"), partial),
                    Catch::Contains("kernels.ssm_ba_gates_mma."));
}

TEST_CASE("the host JIT's profiled unit and flags are the built-in profiled unit's", "[host][jit]") {
  const std::string unit = metrale::host::host_jit_unit("k.cuh", "::engine::k<3, 4>", true);
  CHECK_THAT(unit, Catch::Contains("namespace metrale_profiled_jit {\n#include \"k.cuh\"") &&
                       Catch::Contains("&metrale_profiled_jit::engine::k<3, 4>;"));
  // Standard headers first: the profiled prelude turns the special functions into macros.
  CHECK(unit.find("metrale/host/host_kernel.hpp") < unit.find("cuda_host_prelude.hpp"));
  const auto has = [](const std::vector<std::string>& flags, std::string_view flag) {
    return std::find(flags.begin(), flags.end(), flag) != flags.end();
  };
  const auto plain = metrale::host::host_jit_flags("g++ (Debian 12.2.0-14) 12.2.0", false);
  const auto gnu = metrale::host::host_jit_flags("g++ (Debian 12.2.0-14) 12.2.0", true);
  const auto clang = metrale::host::host_jit_flags("Debian clang version 14.0.6", true);
  CHECK_FALSE(has(plain, "-fsanitize=kernel-address"));
  CHECK_FALSE(has(plain, "-DMETRALE_HOST_PROFILED=1"));
  for (const auto* flags : {&gnu, &clang}) {
    CHECK(has(*flags, "-fsanitize=kernel-address"));
    CHECK(has(*flags, "-fsanitize-recover=kernel-address"));
    CHECK(has(*flags, "-DMETRALE_HOST_PROFILED=1"));
    CHECK(has(*flags, "-shared"));
  }
  CHECK(has(gnu, "--param=asan-instrumentation-with-call-threshold=0"));
  CHECK(has(clang, "-asan-instrumentation-with-call-threshold=0"));
  CHECK_FALSE(has(clang, "--param=asan-instrumentation-with-call-threshold=0"));
  // Exactly one family may build profiled objects: the one the profiled built-ins came from.
  const std::string gnu_refusal = metrale::host::host_jit_profiled_refusal("g++ (Debian 12.2.0-14) 12.2.0");
  const std::string clang_refusal = metrale::host::host_jit_profiled_refusal("Debian clang version 14.0.6");
  CHECK(gnu_refusal.empty() != clang_refusal.empty());
  CHECK_THAT(gnu_refusal + clang_refusal, Catch::Contains("profiled built-ins"));
}

TEST_CASE("profile: a --variant's registers are ptxas's for the variant, not the shipped one", "[profile][nvrtc]") {
  const std::vector<metrale::VariantOverride> overrides{
      metrale::parse_variant_override("ssm_ba_gates_mma:block=512,lanes=128,groups=6")};
  const metrale::HardwareTarget target =
      metrale::with_variant_overrides(hopper(), metrale::ops::library_ops().get("ssm_ba_gates"), overrides);
  const auto resources = metrale::target_kernel_resources(target);
  const auto found = resources.find("ssm_ba_gates_mma");
  REQUIRE(found != resources.end());
  // The lowered name spells the template arguments: <512u, 128u, 6u>.
  CHECK_THAT(found->second.entry, Catch::Contains("ssm_ba_gates_mma") && Catch::Contains("Lj512ELj128ELj6E"));
  CHECK(found->second.registers > 0);
}
