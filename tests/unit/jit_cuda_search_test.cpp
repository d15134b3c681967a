// jit_cuda_search_test.cpp: where NVRTC and the CUDA headers are looked for (jit/cuda_search.hpp):
// the stated order (overrides, the Python environment's NVIDIA wheels in both layouts, CUDA_HOME,
// CUDA_PATH, the loader, /usr/local/cuda, the build's toolkit), an override as the only place for
// its part, NVRTC absent everywhere or present but not a library reported by name, the header
// set taken from the loaded NVRTC's place (a wheel's NVRTC without headers falls to the next
// place that has them), both wheel layouts read into a toolkit identity, and a cache key that an
// NVRTC 12.9 and an NVRTC 13.x never share.
#include <catch2/catch.hpp>
#include <fstream>
#include <map>
#include <random>

#include "jit/cuda_search.hpp"
#include "jit/cuda_toolkit.hpp"
#include "jit/entry_key.hpp"
#include "jit/nvrtc_library.hpp"
#include "support/temp_dir.hpp"

using metrale::CudaPlace;
using metrale::CudaSearchInputs;

namespace {

void write_file(const std::filesystem::path& path, const std::string& text) {
  std::filesystem::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << text;
}

struct FakeEnv {
  std::map<std::string, std::string> values;
  [[nodiscard]] CudaSearchInputs inputs(int major = 13) const {
    CudaSearchInputs in;
    in.getenv = [this](const char* name) -> const char* {
      auto it = values.find(name);
      return it == values.end() ? nullptr : it->second.c_str();
    };
    in.cuda_major = major;
    return in;
  }
};

std::vector<std::string> origins(const std::vector<CudaPlace>& places) {
  std::vector<std::string> out;
  for (const CudaPlace& place : places) {
    out.push_back(place.origin);
  }
  return out;
}

// A random folder name, so no test can pass by matching a fixed spelling.
std::string random_name(std::mt19937_64& rng) { return "d" + std::to_string(rng() % 1000000); }

}  // namespace

TEST_CASE("CUDA places follow the stated order", "[jit][toolkit][cuda_search]") {
  std::mt19937_64 rng(0xC0DA13);
  const std::string site = "/venv/" + random_name(rng) + "/site-packages";
  const std::string home = "/opt/" + random_name(rng);
  FakeEnv env;
  env.values = {{"METRALE_PYTHON_SITE_PACKAGES", site + "::/other"}, {"CUDA_HOME", home}, {"CUDA_PATH", "/cp"}};
  CudaSearchInputs in = env.inputs();
  in.library_site_dirs = {site + "/"};  // the same folder again (spelt otherwise): listed once
  in.build_nvrtc = "/usr/lib/x86_64-linux-gnu/libnvrtc.so.13.0.48";
  in.build_include = "/usr/include";
  const std::vector<CudaPlace> places = metrale::cuda_search_places(in);
  const std::vector<std::string> expected{"python wheel nvidia-cuda-nvrtc (cu13) in " + site,
                                          "python wheel nvidia-cuda-nvrtc-cu12 in " + site,
                                          "python wheel nvidia-cuda-nvrtc (cu13) in /other",
                                          "python wheel nvidia-cuda-nvrtc-cu12 in /other",
                                          "CUDA_HOME=" + home,
                                          "CUDA_PATH=/cp",
                                          "the loader's search path",
                                          "/usr/local/cuda",
                                          "the toolkit this library was built with"};
  CHECK(origins(places) == expected);
  REQUIRE(places.size() == expected.size());
  CHECK(places[0].nvrtc == std::vector<std::string>{site + "/nvidia/cu13/lib/libnvrtc.so.13"});
  CHECK(places[0].include_dirs ==
        std::vector<std::string>{site + "/nvidia/cu13/include", site + "/nvidia/cu13/include/cccl"});
  CHECK(places[1].nvrtc == std::vector<std::string>{site + "/nvidia/cuda_nvrtc/lib/libnvrtc.so.12"});
  CHECK(places[1].include_dirs ==
        std::vector<std::string>{site + "/nvidia/cuda_runtime/include", site + "/nvidia/cuda_cccl/include"});
  CHECK(places[4].nvrtc.front() == home + "/lib64/libnvrtc.so.13");
  CHECK(places[4].include_dirs.front() == home + "/include");
  CHECK(places[6].nvrtc == std::vector<std::string>{"libnvrtc.so.13", "libnvrtc.so.12"});
  CHECK(places[6].derive_includes);
  CHECK(places[8].nvrtc == std::vector<std::string>{in.build_nvrtc});

  // A CUDA 12 build tries its own major first, in the wheels and on the loader's path alike.
  const std::vector<CudaPlace> twelve = metrale::cuda_search_places(env.inputs(12));
  CHECK(twelve[0].origin == "python wheel nvidia-cuda-nvrtc-cu12 in " + site);
  CHECK(twelve[6].nvrtc == std::vector<std::string>{"libnvrtc.so.12", "libnvrtc.so.13"});
  CHECK(twelve[4].nvrtc.front() == home + "/lib64/libnvrtc.so.12");
}

TEST_CASE("a CUDA override is the only place for its part", "[jit][toolkit][cuda_search]") {
  FakeEnv env;
  env.values = {{"METRALE_NVRTC_LIBRARY", "/x/libnvrtc.so"}, {"CUDA_HOME", "/ch"}};
  std::vector<CudaPlace> places = metrale::cuda_search_places(env.inputs());
  REQUIRE(!places.empty());
  CHECK(places.front().origin == "METRALE_NVRTC_LIBRARY");
  CHECK(places.front().nvrtc == std::vector<std::string>{"/x/libnvrtc.so"});
  for (std::size_t i = 1; i < places.size(); ++i) {
    CHECK(places[i].nvrtc.empty());  // the headers of the other places stay
  }
  const std::vector<std::string> names = origins(places);
  CHECK(std::find(names.begin(), names.end(), "CUDA_HOME=/ch") != names.end());

  env.values = {{"METRALE_CUDA_INCLUDE_DIR", "/explicit"}, {"CUDA_HOME", "/ch"}};
  places = metrale::cuda_search_places(env.inputs());
  REQUIRE(places.size() >= 2);
  CHECK(places[0].origin == "METRALE_CUDA_INCLUDE_DIR");
  CHECK(places[0].include_dirs == std::vector<std::string>{"/explicit", "/explicit/cccl"});
  for (std::size_t i = 1; i < places.size(); ++i) {
    CHECK(places[i].include_dirs.empty());
    CHECK_FALSE(places[i].derive_includes);
  }
  env.values = {{"METRALE_CUDA_INCLUDE_DIR", "/rt/include:/cccl/include"}};
  CHECK(metrale::cuda_search_places(env.inputs())[0].include_dirs ==
        std::vector<std::string>{"/rt/include", "/cccl/include"});
}

TEST_CASE("a METRALE_NVRTC_LIBRARY naming a missing file is reported by name", "[jit][toolkit][cuda_search]") {
  std::mt19937_64 rng(0x4E5652);
  const std::string missing = "/nonexistent/" + random_name(rng) + "/libnvrtc.so.13";
  FakeEnv env;
  env.values = {{"METRALE_NVRTC_LIBRARY", missing}};
  const metrale::NvrtcLibrary loaded = metrale::load_nvrtc_library(metrale::cuda_search_places(env.inputs()));
  CHECK_FALSE(loaded.available());
  CHECK(loaded.reason.find(missing) != std::string::npos);
  CHECK(loaded.reason.find("METRALE_NVRTC_LIBRARY: no such file") != std::string::npos);
  CHECK(loaded.path.empty());
}

TEST_CASE("NVRTC found nowhere names every place looked in and every file that failed", "[jit][toolkit][cuda_search]") {
  const metrale::test::TempDir root("metrale-search");
  const std::string site = (root.path() / "site-packages").string();
  // A wheel layout whose libnvrtc is not a library: dlopen's reason is kept, with the file.
  const std::filesystem::path bogus = root.path() / "site-packages/nvidia/cu13/lib/libnvrtc.so.13";
  write_file(bogus, "not an ELF file\n");
  const std::vector<CudaPlace> places{
      {"python wheel nvidia-cuda-nvrtc (cu13) in " + site, {bogus.string()}, {}, false},
      {"CUDA_HOME=" + root.path().string(), {(root.path() / "lib64/libnvrtc.so.13").string()}, {}, false}};
  const metrale::NvrtcLibrary loaded = metrale::load_nvrtc_library(places);
  CHECK_FALSE(loaded.available());
  CHECK(loaded.reason.starts_with("no NVRTC was found: looked in python wheel nvidia-cuda-nvrtc (cu13) in " + site +
                                  ", CUDA_HOME="));
  CHECK(loaded.reason.find(bogus.string() + " (") != std::string::npos);
  REQUIRE(loaded.tried.size() == 1);  // the absent CUDA_HOME file is skipped, not listed
}

TEST_CASE("the CUDA headers come from the loaded NVRTC's place when it has them", "[jit][toolkit][cuda_search]") {
  std::vector<std::string> existing;
  const auto has = [&](const std::string& dir) {
    return std::find(existing.begin(), existing.end(), dir) != existing.end();
  };
  const std::vector<CudaPlace> places{
      {"python wheel nvidia-cuda-nvrtc (cu13) in /s",
       {"/s/nvidia/cu13/lib/libnvrtc.so.13"},
       {"/s/nvidia/cu13/include", "/s/nvidia/cu13/include/cccl"},
       false},
      {"CUDA_HOME=/ch", {"/ch/lib64/libnvrtc.so.13"}, {"/ch/include", "/ch/include/cccl"}, false},
      {"the loader's search path", {"libnvrtc.so.13"}, {}, true}};
  existing = {"/s/nvidia/cu13/include", "/ch/include", "/real/include"};
  metrale::CudaHeaderChoice chosen =
      metrale::choose_cuda_headers(places, places[1].origin, places[1].include_dirs, has);
  REQUIRE(chosen.dirs);
  CHECK(*chosen.dirs == places[1].include_dirs);  // NVRTC's own, though the wheel comes first
  CHECK(chosen.origin == "CUDA_HOME=/ch");

  // Found by the loader: the pair beside the resolved file, not the one beside the symlink.
  const std::vector<std::string> derived{"/lib/include", "/lib/include/cccl", "/real/include", "/real/include/cccl"};
  chosen = metrale::choose_cuda_headers(places, "the loader's search path", derived, has);
  REQUIRE(chosen.dirs);
  CHECK(*chosen.dirs == std::vector<std::string>{"/real/include", "/real/include/cccl"});

  // A wheel's NVRTC without the runtime wheel's headers: the next place that has them.
  existing = {"/ch/include"};
  chosen = metrale::choose_cuda_headers(places, places[0].origin, places[0].include_dirs, has);
  REQUIRE(chosen.dirs);
  CHECK(chosen.origin == "CUDA_HOME=/ch");

  // None anywhere: the problem names every folder looked in.
  existing.clear();
  chosen = metrale::choose_cuda_headers(places, places[0].origin, places[0].include_dirs, has);
  CHECK_FALSE(chosen.dirs);
  CHECK(chosen.problem.find("/s/nvidia/cu13/include") != std::string::npos);
  CHECK(chosen.problem.find("/ch/include") != std::string::npos);

  // An explicit folder without the headers is a problem naming it, never a fall-through.
  existing = {"/ch/include"};
  std::vector<CudaPlace> overridden = places;
  overridden.insert(overridden.begin(), CudaPlace{"METRALE_CUDA_INCLUDE_DIR", {}, {"/typo/include"}, false});
  chosen = metrale::choose_cuda_headers(overridden, places[1].origin, places[1].include_dirs, has);
  CHECK_FALSE(chosen.dirs);
  CHECK(chosen.problem == "METRALE_CUDA_INCLUDE_DIR names /typo/include, which holds no cuda_bf16.h");
}

TEST_CASE("both wheel layouts read into a header set and an identity of their release", "[jit][toolkit][cuda_search]") {
  const metrale::test::TempDir root("metrale-wheels");
  const std::filesystem::path nvidia = root.path() / "nvidia";
  write_file(nvidia / "cuda_runtime/include/cuda.h", "#pragma once\n#define CUDA_VERSION 12090\n");
  write_file(nvidia / "cuda_runtime/include/cuda_bf16.h", "// bf16\n");
  write_file(nvidia / "cuda_cccl/include/cuda/std/__cccl/version.h", "#pragma once\n#define CCCL_VERSION 2008005\n");
  write_file(nvidia / "cu13/include/cuda.h", "#pragma once\n#define CUDA_VERSION 13050\n");
  write_file(nvidia / "cu13/include/cuda_bf16.h", "// bf16\n");
  write_file(nvidia / "cu13/include/cccl/cuda/std/__cccl/version.h", "#pragma once\n#define CCCL_VERSION 3003005\n");
  const FakeEnv env;  // outlives `in`, whose getenv refers to it
  CudaSearchInputs in = env.inputs();
  in.library_site_dirs = {root.path().string()};
  const std::vector<CudaPlace> places = metrale::cuda_search_places(in);
  REQUIRE(places.size() >= 2);
  const metrale::CudaToolkit cu13 = metrale::read_cuda_header_set(places[0].include_dirs);
  const metrale::CudaToolkit cu12 = metrale::read_cuda_header_set(places[1].include_dirs);
  CHECK(cu13.include_dirs == places[0].include_dirs);
  CHECK(cu12.include_dirs == places[1].include_dirs);
  CHECK(cu13.identity.starts_with("cuda13050-cccl3003005+"));
  CHECK(cu12.identity.starts_with("cuda12090-cccl2008005+"));
}

TEST_CASE("a cache key written by NVRTC 12.9 is not one NVRTC 13 reads", "[jit][toolkit][cuda_search][cache]") {
  std::mt19937_64 rng(0x129130);
  metrale::EntryKey key{"silu_mul", "b256l8g1", "sm_90", "12-9+1a2b3c4d", "-arch=sm_90", std::to_string(rng()), ""};
  metrale::EntryKey newer = key;
  newer.nvrtc_version = "13-5+1a2b3c4d";
  CHECK(key.digest() != newer.digest());
  CHECK(key.file_name() != newer.file_name());
  CHECK(key.file_name().find(".nvrtc12-9") != std::string::npos);
  // The same release installed elsewhere (another file): another identity, so another key.
  metrale::EntryKey moved = key;
  moved.nvrtc_version = "12-9+ffff0000";
  CHECK(key.digest() != moved.digest());
}
