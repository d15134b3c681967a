// tests/support/host_jit_support.hpp: the host JIT tests' engine kernel (engine_mirror.cuh from
// tests/data/engine), a host backend whose JIT keeps objects in a given folder, and one run of
// the kernel on random input checked against its reference.
#pragma once

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "host/host_backend.hpp"
#include "metrale/gpu/kernel_launch.hpp"
#include "ref/bf16.hpp"
#include "support/isolated_runtime.hpp"

namespace metrale::test {

using Sources = std::map<std::string, std::string, std::less<>>;

inline Sources engine_sources() {
  std::ifstream in(std::string(METRALE_SOURCE_DIR) + "/tests/data/engine/templates/engine_mirror.cuh");
  REQUIRE(in.good());
  std::ostringstream text;
  text << in.rdbuf();
  return Sources{{"engine_mirror.cuh", text.str()}};
}

inline metrale::HostBackendOptions jit_options(const std::filesystem::path& cache,
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

inline metrale::KernelHandle load_parent(metrale::HostBackend& gpu, const Sources& sources,
                                         const std::string& source = "engine_mirror.cuh") {
  return gpu.load(metrale::LoadRequest{"engine_mirror",
                                       metrale::KernelParams{64, 0, 0},
                                       "engine::mirror_scale<64>",
                                       {},
                                       {},
                                       metrale::ImageKind::kCubin,
                                       source,
                                       &sources});
}

// Runs the mirror kernel on random input and checks it against the reference.
inline void check_runs(metrale::HostBackend& gpu, metrale::KernelHandle kernel, std::uint64_t seed) {
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

}  // namespace metrale::test
