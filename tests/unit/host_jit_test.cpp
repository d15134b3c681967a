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
#include "support/host_jit_support.hpp"
#include "support/isolated_runtime.hpp"
#include "support/temp_dir.hpp"

using metrale::test::check_runs;
using metrale::test::engine_sources;
using metrale::test::jit_options;
using metrale::test::load_parent;
using Sources = metrale::test::Sources;

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
