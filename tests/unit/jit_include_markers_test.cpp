// jit_include_markers_test.cpp: the cache key against what NVRTC's preprocessor really opens.
// The markers are read out of real compiles (a macro include, an include in a subdirectory, an
// unused member); a kernel whose compile opened a source the key's #include scan missed is never
// served from disk (the scan alone served it stale after the header changed), nor its failure
// remembered in memory (a fixed header compiles); a template directory's subdirectories are
// members, so an edit there changes the key.
#include <catch2/catch.hpp>
#include <fstream>

#include "jit/compiled_entry.hpp"
#include "jit/compiled_memory_cache.hpp"
#include "jit/disk_entry_store.hpp"
#include "jit/include_markers.hpp"
#include "jit/nvrtc_compiler.hpp"
#include "metrale/jit/kernel_registry.hpp"
#include "support/cache_test_support.hpp"

using namespace metrale;
using cache_test::TempDir;

namespace {

// The value the kernel stores comes from the macro-included header, so a stale image shows.
SourceSet macro_include_sources(int helper_value) {
  SourceSet sources;
  sources.add_source("main.cuh",
                     "#define METRALE_TEST_HELPER \"helper.cuh\"\n#include METRALE_TEST_HELPER\n"
                     "#include \"sub/deep.cuh\"\n"
                     "template <int N> __global__ void store(int* out) { out[0] = kHelper + kDeep * N; }\n");
  sources.add_source("helper.cuh", "#pragma once\nconstexpr int kHelper = " + std::to_string(helper_value) + ";\n");
  sources.add_source("sub/deep.cuh", "#pragma once\n#include \"leaf.cuh\"\nconstexpr int kDeep = kLeaf + 1;\n");
  sources.add_source("leaf.cuh", "#pragma once\nconstexpr int kLeaf = 6;\n");
  sources.add_source("unused.cuh", "constexpr int kUnused = 1;\n");
  return sources;
}

std::vector<BuildRecord> build_store(const SourceSet& sources, const std::filesystem::path& dir) {
  KernelRegistry::Options options;
  options.store = std::make_shared<EntryStore>(disk_entry_store(std::make_shared<DiskCache>(DiskCache::open_at(dir))));
  options.memory = std::make_shared<CompiledMemoryCache>();
  KernelRegistry registry(sources, options);
  registry.declare({"store", "main.cuh", "store<3>", KernelParams{3, 0, 0}, false});
  return registry.build("sm_90");
}

std::size_t cubin_files(const std::filesystem::path& dir) {
  std::size_t count = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir)) {
    count += entry.path().extension() == ".cubin" ? 1 : 0;
  }
  return count;
}

}  // namespace

TEST_CASE("include markers are numbered, parsed out of a log, and silenced by -w", "[jit][markers]") {
  const std::string marked = with_include_marker(7, "int x;\n");
  CHECK(marked.find("#warning METRALE_INCLUDED 7\n") != std::string::npos);
  CHECK(marked.ends_with("#line 1\nint x;\n"));
  const std::string log =
      "a.cuh(2): warning #1105-D: #warning directive: METRALE_INCLUDED 3\n  #warning METRALE_INCLUDED 3\n   ^\n\n"
      "Remark: The warnings can be suppressed with \"-diag-suppress <warning-number>\"\n\n"
      "b.cuh(2): warning #1105-D: #warning directive: METRALE_INCLUDED 0\n  #warning METRALE_INCLUDED 0\n   ^\n\n";
  const MarkedLog only_markers = read_include_markers(log);
  CHECK(only_markers.opened == std::set<std::size_t>{0, 3});
  CHECK(only_markers.log.empty());
  const std::string real = "c.cuh(4): warning #177-D: variable \"y\" was declared but never referenced\n\n";
  const MarkedLog with_real = read_include_markers(log + real);
  CHECK(with_real.opened == std::set<std::size_t>{0, 3});
  CHECK(with_real.log.find("Remark") != std::string::npos);  // it explains the real warning
  CHECK(with_real.log.find("c.cuh(4)") != std::string::npos);
  CHECK(with_real.log.find("METRALE_INCLUDED") == std::string::npos);
  CHECK(include_markers_usable({"-std=c++17", "--gpu-architecture=sm_90"}));
  CHECK_FALSE(include_markers_usable({"-w"}));
  CHECK_FALSE(include_markers_usable({"--Werror=all-warnings"}));
  CHECK_FALSE(include_markers_usable({"--diag-suppress=1105"}));
}

TEST_CASE("NVRTC reports exactly the sources its preprocessor opened", "[jit][markers][nvrtc]") {
  const SourceSet sources = macro_include_sources(1234567);
  const CompileResult result = compile_with_nvrtc({"main.cuh", &sources, {"store<3>"}, "sm_90", {}});
  INFO(result.log);
  REQUIRE(result.ok);
  REQUIRE(result.included.has_value());
  // The macro include and the subdirectory's own include are there; the unused member is not.
  CHECK(*result.included == std::vector<std::string>{"helper.cuh", "leaf.cuh", "sub/deep.cuh"});
  CHECK(result.log.find("METRALE_INCLUDED") == std::string::npos);
  CHECK(result.ptx.find("1234588") != std::string::npos);  // 1234567 + 7 * 3
  // The scan cannot see the macro include: that is what the check is for.
  const std::vector<std::string> scanned = sources.digested_members("main.cuh");
  CHECK(std::find(scanned.begin(), scanned.end(), "helper.cuh") == scanned.end());

  const CompileResult silenced = compile_with_nvrtc({"main.cuh", &sources, {"store<3>"}, "sm_90", {"-w"}});
  REQUIRE(silenced.ok);
  CHECK_FALSE(silenced.included.has_value());
}

TEST_CASE("markers keep a header's error on its own line", "[jit][markers][nvrtc]") {
  SourceSet sources;
  sources.add_source("main.cuh", "#include \"bad.cuh\"\n__global__ void k(int* o) { *o = 1; }\n");
  sources.add_source("bad.cuh", "#pragma once\n\nconstexpr int kBad = no_such_name;\n");
  const CompileResult result = compile_with_nvrtc({"main.cuh", &sources, {"k"}, "sm_90", {}});
  REQUIRE_FALSE(result.ok);
  CHECK(result.log.find("bad.cuh(3)") != std::string::npos);
  CHECK(result.log.find("METRALE_INCLUDED") == std::string::npos);
}

TEST_CASE("a kernel whose compile opened a source its key does not cover is never served from disk",
          "[jit][markers][disk]") {
  TempDir dir;
  const auto first = build_store(macro_include_sources(1234567), dir.path());
  REQUIRE(first[0].ok());
  CHECK(first[0].origin == BuildOrigin::kNvrtc);
  CHECK(first[0].entry->unkeyed_includes == std::vector<std::string>{"helper.cuh"});
  CHECK(cubin_files(dir.path()) == 0);

  // The header behind the macro changes; the scanned key does not. A disk hit here would be the
  // old image (1234588); the rebuild has the new value.
  const auto edited = build_store(macro_include_sources(7654321), dir.path());
  REQUIRE(edited[0].ok());
  CHECK(edited[0].origin == BuildOrigin::kNvrtc);
  CHECK(edited[0].entry->ptx->find("7654342") != std::string::npos);
  CHECK(edited[0].entry->ptx->find("1234588") == std::string::npos);

  // The same sources with a plain include are covered by the key, so they are stored and reused.
  SourceSet plain = macro_include_sources(1234567);
  plain.add_source("main.cuh",
                   "#include \"helper.cuh\"\n#include \"sub/deep.cuh\"\n"
                   "template <int N> __global__ void store(int* out) { out[0] = kHelper + kDeep * N; }\n");
  const auto stored = build_store(plain, dir.path());
  REQUIRE(stored[0].ok());
  CHECK(stored[0].entry->unkeyed_includes.empty());
  CHECK(cubin_files(dir.path()) == 1);
  CHECK(build_store(plain, dir.path())[0].origin == BuildOrigin::kDisk);
}

TEST_CASE("a template directory's subdirectories are members, and an edit there changes the key",
          "[jit][markers][source_set]") {
  TempDir dir;
  std::filesystem::create_directories(dir.path() / "sub");
  auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream(dir.path() / name, std::ios::binary | std::ios::trunc) << text;
  };
  write("main.cuh", "#include \"sub/deep.cuh\"\n");
  write("sub/deep.cuh", "constexpr int kDeep = 1;\n");
  write("sub/notes.txt", "not a template");
  SourceSet before;
  before.add_directory(dir.path().string());
  CHECK(before.names() == std::vector<std::string>{"main.cuh", "sub/deep.cuh"});
  CHECK(before.digested_members("main.cuh") == std::vector<std::string>{"main.cuh", "sub/deep.cuh"});
  write("sub/deep.cuh", "constexpr int kDeep = 2;\n");
  SourceSet after;
  after.add_directory(dir.path().string());
  CHECK(after.digest("main.cuh") != before.digest("main.cuh"));
}

TEST_CASE("a failed compile through a macro include is not remembered: fixing the header compiles",
          "[jit][markers][memory]") {
  SourceSet broken = macro_include_sources(1);
  broken.add_source("helper.cuh", "#pragma once\nconstexpr int kHelper = not_declared_anywhere;\n");
  KernelRegistry::Options options;
  options.memory = std::make_shared<CompiledMemoryCache>();
  const auto memory = options.memory;
  {
    KernelRegistry registry(broken, options);
    registry.declare({"store", "main.cuh", "store<3>", KernelParams{3, 0, 0}, false});
    const auto records = registry.build("sm_90");
    REQUIRE_FALSE(records[0].ok());
  }
  KernelRegistry::Options again;
  again.memory = memory;  // the same process-wide memory: the scanned key is unchanged
  KernelRegistry registry(macro_include_sources(1), again);
  registry.declare({"store", "main.cuh", "store<3>", KernelParams{3, 0, 0}, false});
  const auto fixed = registry.build("sm_90");
  REQUIRE(fixed[0].ok());
  CHECK(fixed[0].origin == BuildOrigin::kNvrtc);
}
