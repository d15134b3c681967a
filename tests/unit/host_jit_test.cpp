// The host backend's run-time compiler (src/host/host_jit.hpp): a variant without a built-in
// instantiation is compiled by the system compiler, its object cached so a second backend loads
// it without a compiler run; an edited source is a new key; no compiler is a reason; the object
// reaches the prelude through the loader's table, never through symbols the executable exports.
#include "host/host_jit.hpp"

#include <dlfcn.h>

#include <array>
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
#include "host/prelude_table.hpp"
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
                       Catch::Contains("extern \"C\"") && Catch::Contains("bind_prelude(table)"));
  CHECK(unit.find("cuda_host_prelude.hpp") < unit.find("k.cuh"));
  // The prelude's functions go through the loader's table only if the unit says so first.
  CHECK(unit.find("#define METRALE_HOST_JIT_UNIT") < unit.find("cuda_host_prelude.hpp"));
}

TEST_CASE("a host-JIT kernel runs in an executable that exports none of the prelude's functions",
          "[host][jit][engine]") {
  // This executable links the static library without --export-dynamic: the object cannot have
  // resolved the prelude against it, only through the table.
  const std::array<const char*, 3> prelude = {"_ZN7metrale4host12sync_threadsERKNS0_8CallSiteE",
                                              "_ZN7metrale4host9warp_syncERKNS0_15WarpSyncRequestE",
                                              "_ZN7metrale4host6detail19running_coordinatesEPKc"};
  for (const char* symbol : prelude) {
    INFO(symbol);
    CHECK(::dlsym(RTLD_DEFAULT, symbol) == nullptr);
  }
  metrale::test::TempDir cache("metrale-host-jit-table");
  const Sources sources = engine_sources();
  metrale::HostBackend gpu(jit_options(cache.path()));
  const metrale::KernelHandle kernel = load_parent(gpu, sources);
  REQUIRE(kernel.present());
  check_runs(gpu, kernel, 11);

  // The object exports its entry and nothing of the prelude it defines (hidden forwarders).
  std::filesystem::path object;
  for (const auto& entry : std::filesystem::directory_iterator(cache.path())) {
    if (entry.path().extension() == ".so") {
      object = entry.path();
    }
  }
  REQUIRE_FALSE(object.empty());
  void* library = ::dlopen(object.c_str(), RTLD_NOW | RTLD_LOCAL);
  REQUIRE(library != nullptr);
  for (const char* symbol : prelude) {
    INFO(symbol);
    CHECK(::dlsym(library, symbol) == nullptr);
  }
  using Entry = std::size_t (*)(const metrale::host::PreludeTable*, void (**)(const metrale::KernelArg*), std::size_t*,
                                std::size_t);
  const auto entry = reinterpret_cast<Entry>(::dlsym(library, "metrale_host_kernel_v2"));
  REQUIRE(entry != nullptr);
  std::array<std::size_t, 8> sizes{};
  void (*invoke)(const metrale::KernelArg*) = nullptr;
  // A table from other headers (another fingerprint) is refused before anything is handed out.
  metrale::host::PreludeTable other = metrale::host::prelude_table();
  other.fingerprint ^= 1U;
  CHECK(entry(&other, &invoke, sizes.data(), sizes.size()) == static_cast<std::size_t>(-1));
  CHECK(invoke == nullptr);
  CHECK(entry(nullptr, &invoke, sizes.data(), sizes.size()) == static_cast<std::size_t>(-1));
  // The library's table: mirror_scale(const float*, float*, float, int).
  REQUIRE(entry(&metrale::host::prelude_table(), &invoke, sizes.data(), sizes.size()) == 4);
  CHECK(invoke != nullptr);
  CHECK(sizes[0] == sizeof(const float*));
  CHECK(sizes[2] == sizeof(float));
  CHECK(sizes[3] == sizeof(int));
  ::dlclose(library);
}
