// jit_cuda_toolkit_test.cpp: NVRTC finds what nvcc finds. The toolkit's include folders as nvcc
// adds them (include, and include/cccl on CUDA 13; a CUDA 12 layout, built in a temp folder, gets
// include only), a key that names the toolkit (and
// changes with it) while the library's templates never ask for one, and ordinary kernels that
// include <cooperative_groups.h>, <cooperative_groups/reduce.h>, <cub/...>, <cuda/std/...> and
// <cuda_fp16.h> compiled through the registry for sm_80, sm_90 and sm_100.
#include <catch2/catch.hpp>
#include <fstream>
#include <map>

#include "jit/compile_target.hpp"
#include "jit/cuda_toolkit.hpp"
#include "jit/variant_builder.hpp"
#include "metrale/jit/kernel_registry.hpp"
#include "support/temp_dir.hpp"

using namespace metrale;

namespace {

void write_file(const std::filesystem::path& path, const std::string& text) {
  std::filesystem::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << text;
}

SourceSet toolkit_sources() {
  SourceSet sources;
  sources.add_directory(std::string(METRALE_SOURCE_DIR) + "/tests/data/toolkit");
  return sources;
}

}  // namespace

// The order the header set is chosen in (METRALE_CUDA_INCLUDE_DIR, the loaded NVRTC's place,
// then the search order) is tests/unit/jit_cuda_search_test.cpp's.

TEST_CASE("a CUDA 12 toolkit gets include only, a CUDA 13 one include and include/cccl", "[jit][arch][toolkit]") {
  const test::TempDir root("metrale-toolkit");
  const std::filesystem::path include = root.path() / "include";
  write_file(include / "cuda_bf16.h", "// bf16\n");
  write_file(include / "cuda.h", "#pragma once\n#define CUDA_VERSION 12080\n");
  const CudaToolkit cuda12 = read_cuda_toolkit(include.string());
  CHECK(cuda12.include_dirs == std::vector<std::string>{include.string()});
  CHECK(cuda12.identity.starts_with("cuda12080+"));

  // An empty cccl folder is not CUDA 13's layout; one holding cuda/std is.
  std::filesystem::create_directories(include / "cccl");
  CHECK(read_cuda_toolkit(include.string()).include_dirs.size() == 1);
  write_file(include / "cccl/cuda/std/__cccl/version.h", "#pragma once\n#define CCCL_VERSION 3000001\n");
  const CudaToolkit cuda13 = read_cuda_toolkit(include.string());
  CHECK(cuda13.include_dirs == std::vector<std::string>{include.string(), (include / "cccl").string()});
  CHECK(cuda13.identity.starts_with("cuda12080-cccl3000001+"));

  // An update in place (another release's cuda.h) is another toolkit.
  write_file(include / "cuda.h", "#pragma once\n#define CUDA_VERSION 13010\n");
  const CudaToolkit updated = read_cuda_toolkit(include.string());
  CHECK(updated.identity.starts_with("cuda13010-cccl3000001+"));
  CHECK(updated.identity != cuda13.identity);

  // This machine's toolkit (CUDA 13 in /usr/local/cuda): both folders, versions read.
  const std::optional<CudaToolkit>& here = cuda_toolkit();
  REQUIRE(here.has_value());
  REQUIRE(here->include_dirs.size() == 2);
  CHECK(here->include_dirs[1].ends_with("/cccl"));
  CHECK(here->identity.starts_with("cuda13"));
  CHECK(here->identity.find("-cccl") != std::string::npos);
  CHECK(cuda_include_dir() == here->include_dirs.front());
}

TEST_CASE("the identity is a pure function of versions, folders and stamps", "[jit][arch][toolkit]") {
  const std::vector<std::string> dirs{"/a/include", "/a/include/cccl"};
  const std::string base = toolkit_identity("13000", "3000001", dirs, "1:2");
  CHECK(base == toolkit_identity("13000", "3000001", dirs, "1:2"));
  CHECK(base != toolkit_identity("13000", "3000001", dirs, "1:3"));
  CHECK(base != toolkit_identity("13000", "3000001", std::vector<std::string>{"/b/include", "/b/include/cccl"}, "1:2"));
  CHECK(base != toolkit_identity("13010", "3000001", dirs, "1:2"));
  CHECK(toolkit_identity("", "", std::vector<std::string>{"/x"}, "").starts_with("cudaunknown+"));
}

TEST_CASE("the key names the toolkit of a source that includes its headers, and only of such a source",
          "[jit][arch][toolkit]") {
  SourceSet sources = toolkit_sources();
  sources.add_embedded_templates([](const char*) -> std::optional<std::string> { return std::nullopt; });
  const std::optional<CudaToolkit> first = CudaToolkit{{"/t1/include", "/t1/include/cccl"}, "cuda13000-cccl1+aaaa"};
  const std::optional<CudaToolkit> second = CudaToolkit{{"/t1/include", "/t1/include/cccl"}, "cuda13010-cccl2+bbbb"};
  int asked = 0;
  const auto use = [&](const std::optional<CudaToolkit>& toolkit) {
    return [&asked, &toolkit]() -> const std::optional<CudaToolkit>& {
      ++asked;
      return toolkit;
    };
  };
  const KernelVariant engine{"cg_tile_sum", "cg_tile_sum.cuh", "cg_tile_sum<256>", KernelParams{256, 0, 0}, false};
  const EntryKey one = detail::make_entry_key(engine, "sm_90", sources, {}, use(first));
  const EntryKey two = detail::make_entry_key(engine, "sm_90", sources, {}, use(second));
  CHECK(asked == 2);
  CHECK(one.options == two.options);  // the same folders: only the identity tells them apart
  CHECK(one.source_digest != two.source_digest);
  CHECK(one.source_digest.ends_with("+cuda13000-cccl1+aaaa"));
  CHECK(one.options.find("-I/t1/include -I/t1/include/cccl") != std::string::npos);
  CHECK(one.source_digest.starts_with(*sources.digest("cg_tile_sum.cuh")));

  // A library template includes nothing outside its set: its key neither asks for nor names a toolkit.
  asked = 0;
  const KernelVariant library{"per_token_group_quant_fp8", "fp8_act_quant.cuh",
                              "metrale::kernels::per_token_group_quant_fp8<16, 1>", KernelParams{0, 16, 1}, false};
  const EntryKey plain = detail::make_entry_key(library, "sm_90", sources, {}, use(first));
  CHECK(asked == 0);
  CHECK(plain.source_digest == *sources.digest("fp8_act_quant.cuh"));
  CHECK(plain.options.find("-I") == std::string::npos);
}

TEST_CASE("NVRTC options carry one -I per toolkit folder, in order", "[jit][arch][toolkit]") {
  const std::vector<std::string> dirs{"/cuda/include", "/cuda/include/cccl"};
  const std::vector<std::string> options = nvrtc_options("sm_90", dirs, {});
  const auto include = std::find(options.begin(), options.end(), "-I/cuda/include");
  REQUIRE(include != options.end());
  CHECK(include + 1 != options.end());
  CHECK(*(include + 1) == "-I/cuda/include/cccl");
}

TEST_CASE("kernels written for nvcc with the toolkit's headers compile through the registry", "[jit][nvrtc][toolkit]") {
  const SourceSet sources = toolkit_sources();
  KernelRegistry registry(sources, KernelRegistry::Options{});
  registry.declare({"cg_tile_sum", "cg_tile_sum.cuh", "cg_tile_sum<256>", KernelParams{256, 0, 0}, false});
  registry.declare({"cub_block_sum", "cub_block_sum.cuh", "cub_block_sum<128, float>", KernelParams{128, 0, 0}, false});
  registry.declare({"half_axpy", "half_axpy.cuh", "half_axpy", KernelParams{}, false});
  REQUIRE(cuda_toolkit().has_value());
  // Without include/cccl, <cooperative_groups.h> and <cub/...> fail ("cannot open source file
  // cuda/std/type_traits"): each program compiles only when both folders are given.
  for (const std::string arch : {"sm_80", "sm_90", "sm_100"}) {
    for (const BuildRecord& record : registry.build(arch)) {
      INFO(arch << " " << record.kernel << ": " << (record.entry ? record.entry->log : std::string("no entry")));
      REQUIRE(record.ok());
      CHECK(record.entry->arch == arch);
      REQUIRE(record.entry->cubin != nullptr);
      CHECK_FALSE(record.entry->cubin->empty());
      CHECK(record.entry->ptx->find(record.entry->lowered_name) != std::string::npos);
    }
  }
}
