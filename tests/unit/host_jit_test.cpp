// The host backend's run-time compiler (src/host/host_jit.hpp): a variant without a built-in
// instantiation is compiled by the system compiler, its object cached so a second backend loads
// it without a compiler run; an edited source is a new key; no compiler is a reason.
#include "host/host_jit.hpp"

#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "host/host_backend.hpp"
#include "metrale/error.hpp"
#include "metrale/gpu/kernel_launch.hpp"
#include "ref/bf16.hpp"
#include "support/isolated_runtime.hpp"
#include "support/temp_dir.hpp"

namespace {

using Sources = std::map<std::string, std::string, std::less<>>;

Sources engine_sources() {
  std::ifstream in(std::string(METRALE_SOURCE_DIR) + "/tests/data/engine/templates/engine_mirror.cuh");
  REQUIRE(in.good());
  std::ostringstream text;
  text << in.rdbuf();
  return Sources{{"engine_mirror.cuh", text.str()}};
}

metrale::HostBackendOptions jit_options(const std::filesystem::path& cache,
                                        std::optional<std::string> cxx = std::nullopt) {
  metrale::HostBackendOptions options;
  options.worker_threads = 2;
  options.jit_cache_dir = cache;
  options.jit_env = [cxx](const char* name) -> std::optional<std::string> {
    if (std::string_view(name) == "CXX") {
      return cxx;
    }
    return std::nullopt;  // PATH falls back to /usr/local/bin:/usr/bin:/bin
  };
  return options;
}

metrale::KernelHandle load_parent(metrale::HostBackend& gpu, const Sources& sources) {
  return gpu.load(metrale::LoadRequest{"engine_mirror",
                                       metrale::KernelParams{64, 0, 0},
                                       "engine::mirror_scale<64>",
                                       {},
                                       {},
                                       metrale::ImageKind::kCubin,
                                       "engine_mirror.cuh",
                                       &sources});
}

// Runs the mirror kernel on random input and checks it against the reference.
void check_runs(metrale::HostBackend& gpu, metrale::KernelHandle kernel, std::uint64_t seed) {
  constexpr std::uint32_t kBlock = 64;
  constexpr std::uint32_t kChunks = 5;
  const std::vector<float> x = metrale::ref::random_floats(kBlock * kChunks, seed, -3, 3);
  const metrale::DevicePtr in = metrale::test::upload(gpu, x);
  const metrale::DevicePtr out =
      metrale::test::upload(gpu, std::vector<float>(x.size(), std::numeric_limits<float>::quiet_NaN()));
  metrale::KernelLaunch(gpu, kernel)
      .grid({kChunks, 1, 1})
      .block({kBlock, 1, 1})
      .arg_ptr(in)
      .arg_ptr(out)
      .arg_f32(0.5F)
      .arg_i32(kChunks)
      .launch();
  std::vector<float> got(x.size());
  gpu.copy_to_host(got.data(), out, got.size() * sizeof(float));
  for (std::uint32_t c = 0; c < kChunks; ++c) {
    for (std::uint32_t t = 0; t < kBlock; ++t) {
      INFO("chunk " << c << " thread " << t);
      REQUIRE(got[c * kBlock + t] == 0.5F * x[c * kBlock + kBlock - 1 - t]);
    }
  }
  gpu.free(in);
  gpu.free(out);
}

}  // namespace

TEST_CASE("the host JIT's second run of a kernel loads the cached object without compiling", "[host][jit][engine]") {
  metrale::test::TempDir cache("metrale-host-jit");
  const Sources sources = engine_sources();
  {
    metrale::HostBackend gpu(jit_options(cache.path()));
    const metrale::KernelHandle kernel = load_parent(gpu, sources);
    REQUIRE(kernel.present());
    CHECK(gpu.jit_stats().compiles == 1);
    CHECK(gpu.jit_stats().cache_hits == 0);
    check_runs(gpu, kernel, 7);
    // Loading again in the same backend is the table's, not the compiler's.
    CHECK(load_parent(gpu, sources) == kernel);
    CHECK(gpu.jit_stats().compiles == 1);
  }
  {
    metrale::HostBackend gpu(jit_options(cache.path()));
    const metrale::KernelHandle kernel = load_parent(gpu, sources);
    REQUIRE(kernel.present());
    CHECK(gpu.jit_stats().compiles == 0);
    CHECK(gpu.jit_stats().cache_hits == 1);
    check_runs(gpu, kernel, 8);
  }
  {
    // An edited source is another key: compiled again.
    Sources edited = sources;
    edited["engine_mirror.cuh"] += "\n// edited\n";
    metrale::HostBackend gpu(jit_options(cache.path()));
    REQUIRE(load_parent(gpu, edited).present());
    CHECK(gpu.jit_stats().compiles == 1);
    CHECK(gpu.jit_stats().cache_hits == 0);
  }
}

TEST_CASE("the host JIT loads no object others may write", "[host][jit][engine]") {
  metrale::test::TempDir cache("metrale-host-jit-perms");
  const Sources sources = engine_sources();
  {
    metrale::HostBackend gpu(jit_options(cache.path()));
    REQUIRE(load_parent(gpu, sources).present());
    CHECK(gpu.jit_stats().compiles == 1);
  }
  // An object made group-writable is not loaded: compiled again (and kept owner-writable only).
  std::filesystem::path object;
  for (const auto& entry : std::filesystem::directory_iterator(cache.path())) {
    if (entry.path().extension() == ".so") {
      object = entry.path();
    }
  }
  REQUIRE_FALSE(object.empty());
  std::filesystem::permissions(object, std::filesystem::perms::group_write, std::filesystem::perm_options::add);
  {
    metrale::HostBackend gpu(jit_options(cache.path()));
    const metrale::KernelHandle kernel = load_parent(gpu, sources);
    REQUIRE(kernel.present());
    CHECK(gpu.jit_stats().compiles == 1);
    CHECK(gpu.jit_stats().cache_hits == 0);
    check_runs(gpu, kernel, 9);
  }
  CHECK((std::filesystem::status(object).permissions() & std::filesystem::perms::group_write) ==
        std::filesystem::perms::none);
  // A cache folder anyone may write is not used: objects go to a private folder, not reused.
  std::filesystem::permissions(cache.path(), std::filesystem::perms::all);
  for (int run = 0; run < 2; ++run) {
    metrale::HostBackend gpu(jit_options(cache.path()));
    REQUIRE(load_parent(gpu, sources).present());
    CHECK(gpu.jit_stats().compiles == 1);
  }
}

TEST_CASE("no compiler, or a source not given, is a reason and no handle", "[host][jit][engine]") {
  metrale::test::TempDir cache("metrale-host-jit-none");
  const Sources sources = engine_sources();
  metrale::HostBackend gpu(jit_options(cache.path(), "/nonexistent/c++"));
  CHECK_THROWS_AS(load_parent(gpu, sources), metrale::BackendError);
  CHECK_THROWS_WITH(load_parent(gpu, sources), Catch::Contains("host JIT of engine_mirror<b64>") &&
                                                   Catch::Contains("CXX=/nonexistent/c++ is not an executable"));
  const Sources other{{"other.cuh", "// nothing"}};
  CHECK_THROWS_WITH(load_parent(gpu, other), Catch::Contains("its source 'engine_mirror.cuh' was not given"));
  CHECK(gpu.jit_stats().compiles == 0);
  CHECK(gpu.jit_stats().failures == 3);
  // A built-in kernel still loads without the compiler.
  CHECK(gpu.load(metrale::LoadRequest{"ssm_ba_gates", metrale::KernelParams{256, 64, 0}, {}, {}, {}}).present());
}

TEST_CASE("the host JIT's unit instantiates the expression behind a C entry", "[host][jit]") {
  const std::string unit = metrale::host::host_jit_unit("k.cuh", "engine::k<3, 4>");
  CHECK_THAT(unit, Catch::Contains("#include \"metrale/host/cuda_host_prelude.hpp\"") &&
                       Catch::Contains("#include \"k.cuh\"") && Catch::Contains("&engine::k<3, 4>;") &&
                       Catch::Contains("extern \"C\""));
  CHECK(unit.find("cuda_host_prelude.hpp") < unit.find("k.cuh"));
}
