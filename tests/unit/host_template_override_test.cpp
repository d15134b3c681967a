// host_template_override_test.cpp: what you give it is what runs, on the host backend too. A
// template folder (METRALE_TEMPLATE_DIR) whose FP8 twin is edited to pass the other scale kind
// writes the edited kernel's bytes (power-of-two scales where fp32 ones were asked for), because
// a source whose digest differs from the embedded template's is compiled by the host JIT; with
// the library's own templates the built-in instantiation runs and no compiler is started.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <string>

#include "ground/embedded_files.hpp"
#include "host/host_backend.hpp"
#include "metrale/jit/kernel_registry.hpp"
#include "ops/fp8_act_quant/fp8_act_quant.hpp"
#include "ops/op_kernels.hpp"
#include "support/edited_templates.hpp"
#include "support/kernels_support.hpp"
#include "support/temp_dir.hpp"

using namespace metrale;
using metrale::test::template_dir_env;
using metrale::test::write_edited_templates;

namespace {

// Where the host JIT keeps its objects across runs of these tests (a rerun loads, not compiles).
std::filesystem::path jit_cache() { return std::filesystem::path(METRALE_BINARY_DIR) / "test-cache" / "host-override"; }

struct TwinRun {
  kernels_test::Fp8Result result;
  host::HostJitStats jit;
};

// The twin alone, declared in a registry over the templates `env` names, run on a host backend.
TwinRun run_twin(const kernels_test::Fp8Case& c, const EnvLookup& env) {
  SourceSet sources;
  sources.add_embedded_templates(env);
  KernelRegistry::Options options;
  KernelRegistry registry(std::move(sources), options);
  const VariantId twin =
      registry.declare({std::string(ops::kFp8QuantTwinKernel), std::string(ops::kFp8QuantTemplateFile),
                        std::string(ops::kFp8QuantTwinTemplate) + "<16, 8>", KernelParams{0, 16, 8}, false});
  HostBackendOptions host_options;
  host_options.worker_threads = 2;
  host_options.jit_cache_dir = jit_cache();
  host_options.jit_env = env;
  HostBackend gpu(host_options);
  const DeviceIndex device = registry.load(gpu);
  const KernelHandle handle = registry.handle(device, twin);
  const std::optional<BuildRecord> record = registry.record(twin, "host");
  INFO((record ? record->load_error : std::string("no record")));
  REQUIRE(handle.present());

  kernels_test::DeviceBuffer x(gpu, c.x);
  kernels_test::DeviceBuffer q(gpu, std::vector<std::uint8_t>(std::size_t{c.m} * c.k, kernels_test::kPoisonCode));
  kernels_test::DeviceBuffer scales(gpu, std::vector<float>(c.scale_slots(), kernels_test::poison_float()));
  ops::Fp8QuantKernels kernels;
  kernels.twin = handle;  // a lone twin runs at any M
  ops::fp8_act_quant(gpu, kernels, true, c.args(x.ptr(), q.ptr(), scales.ptr()));
  TwinRun run;
  run.result.q = q.read<std::uint8_t>(std::size_t{c.m} * c.k);
  run.result.scales = scales.read<float>(c.scale_slots());
  run.jit = gpu.jit_stats();
  return run;
}

}  // namespace

TEST_CASE("on the host backend an edited template folder runs the edited twin", "[host][jit][override]") {
  const test::TempDir temp("metrale-override");
  const std::filesystem::path templates = temp.path() / "templates";
  write_edited_templates(templates);
  const kernels_test::Fp8Case asked(3, 1024, 1024, 0x5eed23);  // fp32 scales asked for (pow2 = false)
  kernels_test::Fp8Case pow2 = asked;
  pow2.pow2 = true;
  const ref::Fp8RefResult fp32_ref = kernels_test::fp8_reference(asked);
  const ref::Fp8RefResult pow2_ref = kernels_test::fp8_reference(pow2);
  REQUIRE(fp32_ref.scales != pow2_ref.scales);  // the edit is visible in the bytes

  SECTION("the library's templates: the built-in instantiation, no compiler run") {
    const TwinRun run = run_twin(asked, template_dir_env(std::nullopt));
    CHECK(run.result.q == fp32_ref.q);
    CHECK(run.result.scales == fp32_ref.scales);
    CHECK(run.jit.compiles == 0);
    CHECK(run.jit.cache_hits == 0);
  }
  SECTION("METRALE_TEMPLATE_DIR with the edited twin: the host JIT compiles and runs it") {
    const TwinRun run = run_twin(asked, template_dir_env(templates));
    CHECK(run.jit.compiles + run.jit.cache_hits == 1);  // compiled, or its object from an earlier run
    CHECK(run.result.q == pow2_ref.q);
    CHECK(run.result.scales == pow2_ref.scales);
  }
  SECTION("the same folder unedited is the built-in's source: no compiler run") {
    const std::filesystem::path plain = temp.path() / "plain";
    for (const EmbeddedFile& file : embedded_templates()) {
      std::filesystem::create_directories((plain / std::string(file.name)).parent_path());
      std::ofstream(plain / std::string(file.name), std::ios::binary) << file.text;
    }
    const TwinRun run = run_twin(asked, template_dir_env(plain));
    CHECK(run.jit.compiles == 0);
    CHECK(run.result.scales == fp32_ref.scales);
  }
}

TEST_CASE("one host backend keeps a built-in and an override of the same kernel apart", "[host][jit][override]") {
  // Two loads of one (kernel, params) with different sources get different handles, and a
  // second load of the overriding source reuses its compiled kernel.
  const test::TempDir temp("metrale-override");
  write_edited_templates(temp.path());
  SourceSet embedded;
  embedded.add_embedded_templates(template_dir_env(std::nullopt));
  SourceSet edited;
  edited.add_directory(temp.path().string());
  REQUIRE(edited.digest(ops::kFp8QuantTemplateFile) != embedded.digest(ops::kFp8QuantTemplateFile));
  HostBackendOptions options;
  options.worker_threads = 2;
  options.jit_cache_dir = jit_cache();
  options.jit_env = template_dir_env(std::nullopt);
  HostBackend gpu(options);
  const std::string expression = std::string(ops::kFp8QuantTwinTemplate) + "<16, 8>";
  auto load = [&](const SourceSet& sources) {
    return gpu.load(LoadRequest{ops::kFp8QuantTwinKernel,
                                KernelParams{0, 16, 8},
                                expression,
                                {},
                                {},
                                ImageKind::kCubin,
                                ops::kFp8QuantTemplateFile,
                                &sources.sources()});
  };
  auto jit_builds = [&] { return gpu.jit_stats().compiles + gpu.jit_stats().cache_hits; };
  const KernelHandle builtin = load(embedded);
  CHECK(jit_builds() == 0);
  const KernelHandle override_handle = load(edited);
  CHECK(jit_builds() == 1);
  CHECK(override_handle.value != builtin.value);
  CHECK(load(edited).value == override_handle.value);
  CHECK(load(embedded).value == builtin.value);
  CHECK(jit_builds() == 1);
}
