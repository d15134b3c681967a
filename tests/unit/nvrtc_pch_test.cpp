// nvrtc_pch_test.cpp: NVRTC's automatic precompiled headers in compile_with_nvrtc (jit/nvrtc_pch.hpp):
// a later instantiation of a kernel that includes CUB and cooperative groups uses the PCH the first
// one created and yields the PTX of a compile without PCH; a damaged PCH is refused and the compile
// still right; METRALE_PCH=off makes no PCH file; a heap too small is grown. Needs NVRTC 12.8+ (CI
// has it in /usr/local/cuda): without it these tests fail, saying why. Each test salts the source's
// leading directives with a random macro, so its first compile cannot meet another test's PCH.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <random>
#include <regex>
#include <thread>

#include "jit/nvrtc_compiler.hpp"
#include "jit/nvrtc_library.hpp"
#include "jit/nvrtc_pch_folder.hpp"
#include "support/jit_test_support.hpp"
#include "support/scoped_env.hpp"

using namespace metrale;

namespace {

constexpr const char* kSource = "pch_engine.cu";

std::mt19937_64& rng() {
  static std::mt19937_64 engine(std::random_device{}());
  return engine;
}

void require_nvrtc_with_pch() {
  INFO("these tests need NVRTC 12.8+ (CUDA's /usr/local/cuda has it): " << nvrtc_unavailable_reason());
  REQUIRE(nvrtc_available());
  INFO("NVRTC " << nvrtc_library().version << " from " << nvrtc_library().path
                << " lacks the PCH entry points (nvrtcGetPCHCreateStatus, ...): CUDA 12.8+ has them");
  REQUIRE(nvrtc_library().api->pch_available());
}

// A block reduction through CUB, synchronised through cooperative groups; `salt` leads the file.
SourceSet engine_sources(std::uint64_t salt) {
  SourceSet sources;
  sources.add_source(kSource,
                     "#define PCH_TEST_SALT " + std::to_string(salt) +
                         "ull\n"
                         "#include <cub/block/block_reduce.cuh>\n"
                         "#include <cooperative_groups.h>\n"
                         "template <int kThreads>\n"
                         "__global__ void block_sum(const float* in, float* out) {\n"
                         "  using Reduce = cub::BlockReduce<float, kThreads>;\n"
                         "  __shared__ typename Reduce::TempStorage storage;\n"
                         "  const float total = Reduce(storage).Sum(in[blockIdx.x * kThreads + threadIdx.x]);\n"
                         "  cooperative_groups::this_thread_block().sync();\n"
                         "  if (threadIdx.x == 0) out[blockIdx.x] = total;\n"
                         "}\n");
  return sources;
}

CompileResult compile(const SourceSet& sources, int threads, PchChoice pch = PchChoice::kAuto) {
  CompileRequest request{kSource, &sources, {"block_sum<" + std::to_string(threads) + ">"}, "sm_90", {}};
  request.pch = pch;
  CompileResult result = compile_with_nvrtc(request);
  INFO(result.log);
  REQUIRE(result.ok);
  return result;
}

// Two distinct block sizes, multiples of 32 up to 1024.
std::pair<int, int> two_sizes() {
  std::uniform_int_distribution<int> warps(1, 32);
  const int first = 32 * warps(rng());
  int second = first;
  while (second == first) {
    second = 32 * warps(rng());
  }
  return {first, second};
}

// NVRTC names internal-linkage symbols after the file and a per-compile random hash
// (_INTERNAL_..._pch_engine_cu_<8 hex>_<pid>): the one difference between two correct compiles.
std::string normalised(const std::string& ptx) {
  static const std::regex hash("pch_engine_cu_[0-9a-f]{8}_");
  return std::regex_replace(ptx, hash, "pch_engine_cu_H_");
}

std::vector<std::filesystem::path> pch_files() {
  std::vector<std::filesystem::path> out;
  const std::optional<std::filesystem::path> folder = pch_folder(process_environment());
  std::error_code error;
  if (folder) {
    for (const auto& entry : std::filesystem::directory_iterator(*folder, error)) {
      out.push_back(entry.path());
    }
  }
  return out;
}

}  // namespace

TEST_CASE("a later instantiation of a CUB kernel uses the first one's PCH and compiles to the same PTX",
          "[pch][nvrtc]") {
  require_nvrtc_with_pch();
  const SourceSet sources = engine_sources(rng()());
  const auto [first_size, second_size] = two_sizes();
  const CompileResult first = compile(sources, first_size);
  CHECK(first.pch == PchUse::kCreated);
  const CompileResult second = compile(sources, second_size);
  CHECK(second.pch == PchUse::kUsed);
  const CompileResult without = compile(sources, second_size, PchChoice::kOff);
  CHECK(without.pch == PchUse::kNone);
  CHECK(second.lowered_names == without.lowered_names);
  REQUIRE(second.ptx.find(".entry " + second.lowered_names[0]) != std::string::npos);
  CHECK(normalised(second.ptx) == normalised(without.ptx));
  CHECK(second.cubin.size() == without.cubin.size());
  // The log the caller sees has no PCH chatter, and the options no PCH option.
  CHECK(second.log.find("precompiled header") == std::string::npos);
  for (const std::string& option : second.options) {
    CHECK(option.find("pch") == std::string::npos);
  }
}

TEST_CASE("a damaged PCH is refused and the compile still yields the right PTX", "[pch][nvrtc]") {
  require_nvrtc_with_pch();
  const SourceSet sources = engine_sources(rng()());
  const auto [first_size, second_size] = two_sizes();
  REQUIRE(compile(sources, first_size).pch == PchUse::kCreated);
  const std::vector<std::filesystem::path> files = pch_files();
  REQUIRE_FALSE(files.empty());
  // Its header overwritten with random bytes (what NVRTC checks; see nvrtc_pch_folder.hpp for
  // damage further in, which NVRTC does not survive and the private folder keeps out).
  for (const std::filesystem::path& file : files) {
    std::fstream stream(file, std::ios::in | std::ios::out | std::ios::binary);
    REQUIRE(stream);
    std::uniform_int_distribution<int> byte(0, 255);
    for (int i = 0; i < 64; ++i) {
      stream.put(static_cast<char>(byte(rng())));
    }
  }
  const CompileResult after = compile(sources, second_size);
  CHECK(after.pch != PchUse::kUsed);
  const CompileResult without = compile(sources, second_size, PchChoice::kOff);
  CHECK(normalised(after.ptx) == normalised(without.ptx));
}

TEST_CASE("METRALE_PCH=off makes no PCH file", "[pch][nvrtc]") {
  require_nvrtc_with_pch();
  const test::ScopedEnv off("METRALE_PCH", std::string("off"));
  const SourceSet sources = engine_sources(rng()());
  const auto [first_size, second_size] = two_sizes();
  const std::size_t before = pch_files().size();
  CHECK(compile(sources, first_size).pch == PchUse::kNone);
  CHECK(compile(sources, second_size).pch == PchUse::kNone);
  CHECK(pch_files().size() == before);
}

TEST_CASE("METRALE_PCH=off through a compile's own environment lookup makes no PCH", "[pch][nvrtc]") {
  require_nvrtc_with_pch();
  const test::ScopedEnv on("METRALE_PCH", std::nullopt);
  const SourceSet sources = engine_sources(rng()());
  const std::size_t before = pch_files().size();
  for (const int size : {two_sizes().first, two_sizes().second}) {
    CompileRequest request{kSource, &sources, {"block_sum<" + std::to_string(size) + ">"}, "sm_90", {}};
    request.env = [](const char* name) -> std::optional<std::string> {
      return std::string(name) == "METRALE_PCH" ? std::optional<std::string>("off") : std::nullopt;
    };
    const CompileResult result = compile_with_nvrtc(request);
    INFO(result.log);
    REQUIRE(result.ok);
    CHECK(result.pch == PchUse::kNone);
  }
  CHECK(pch_files().size() == before);
}

TEST_CASE("a PCH heap too small is grown and the next compile creates its PCH", "[pch][nvrtc]") {
  require_nvrtc_with_pch();
  const NvrtcApi& api = *nvrtc_library().api;
  REQUIRE(api.set_pch_heap_size(std::size_t{4} << 20) == NVRTC_SUCCESS);
  const SourceSet sources = engine_sources(rng()());
  const auto [first_size, second_size] = two_sizes();
  CHECK(compile(sources, first_size).pch == PchUse::kNone);  // the heap ran out: grown afterwards
  std::size_t heap = 0;
  REQUIRE(api.get_pch_heap_size(&heap) == NVRTC_SUCCESS);
  CHECK(heap > (std::size_t{4} << 20));
  CHECK(compile(sources, second_size).pch == PchUse::kCreated);
  CHECK(compile(sources, first_size).pch == PchUse::kUsed);
}

TEST_CASE("two threads compiling two CUB sources with PCH at once each get their PCH and the right PTX",
          "[pch][nvrtc][concurrency]") {
  require_nvrtc_with_pch();
  const SourceSet first_set = engine_sources(rng()());
  const SourceSet second_set = engine_sources(rng()());
  const auto [first_size, second_size] = two_sizes();
  struct Outcome {
    std::vector<CompileResult> results;
  };
  Outcome outcomes[2];
  auto work = [&](const SourceSet& sources, Outcome& out) {
    for (const int size : {first_size, second_size}) {
      out.results.push_back(
          compile_with_nvrtc({kSource, &sources, {"block_sum<" + std::to_string(size) + ">"}, "sm_90", {}}));
    }
  };
  std::thread other(work, std::cref(second_set), std::ref(outcomes[1]));
  work(first_set, outcomes[0]);
  other.join();
  const CompileResult without = compile(first_set, second_size, PchChoice::kOff);
  for (const Outcome& outcome : outcomes) {
    REQUIRE(outcome.results.size() == 2);
    for (const CompileResult& result : outcome.results) {
      INFO(result.log);
      REQUIRE(result.ok);
    }
    // The second instantiation of each source used a PCH unless a heap resize came between.
    CHECK(outcome.results[1].pch != PchUse::kCreated);
    CHECK(normalised(outcome.results[1].ptx) == normalised(without.ptx));
  }
}

TEST_CASE("a source that stays inside its set compiles without PCH unless asked", "[pch][nvrtc]") {
  require_nvrtc_with_pch();
  SourceSet sources;
  sources.add_source("own.cuh",
                     "#include \"own_math.cuh\"\ntemplate <int N> __global__ void fill(float* out) { "
                     "out[threadIdx.x] = twice(N); }\n");
  sources.add_source("own_math.cuh", "#pragma once\n__device__ inline float twice(int n) { return 2.0f * n; }\n");
  const std::string expression = "fill<" + std::to_string(rng()() % 1000) + ">";
  const CompileResult result = compile_with_nvrtc({"own.cuh", &sources, {expression}, "sm_90", {}});
  INFO(result.log);
  REQUIRE(result.ok);
  CHECK(result.pch == PchUse::kNone);
  // The include markers still say what was opened.
  REQUIRE(result.included);
  CHECK(*result.included == std::vector<std::string>{"own_math.cuh"});
  CompileRequest all{"own.cuh", &sources, {expression}, "sm_90", {}};
  all.pch = PchChoice::kAll;
  const CompileResult asked = compile_with_nvrtc(all);
  INFO(asked.log);
  REQUIRE(asked.ok);
  REQUIRE(asked.included);
  CHECK(*asked.included == std::vector<std::string>{"own_math.cuh"});
}

TEST_CASE("NVRTC's PCH messages are taken out of the log and read", "[pch]") {
  const PchOutcome used =
      strip_pch_messages("\"a.cu\": using precompiled header file \"/x/a_0.pch\"\na.cu(3): warning #177-D: unused\n");
  CHECK(used.use == PchUse::kUsed);
  CHECK(used.log == "a.cu(3): warning #177-D: unused\n");
  const PchOutcome created = strip_pch_messages("\"a.cu\": creating precompiled header file \"/x/a_0.pch\"\n");
  CHECK(created.use == PchUse::kCreated);
  CHECK(created.log.empty());
  CHECK(strip_pch_messages("a.cu(1): error: creating precompiled header file\n").use == PchUse::kNone);
}

TEST_CASE("METRALE_PCH is on unless it says off", "[pch]") {
  const auto env_with = [](std::optional<std::string> value) {
    return [value](const char* name) { return std::string(name) == "METRALE_PCH" ? value : std::nullopt; };
  };
  CHECK(pch_enabled(env_with(std::nullopt)));
  CHECK(pch_enabled(env_with("")));
  CHECK(pch_enabled(env_with("ON")));
  CHECK(pch_enabled(env_with("maybe")));  // logged, and PCH stays on
  CHECK_FALSE(pch_enabled(env_with("off")));
  CHECK_FALSE(pch_enabled(env_with("0")));
  CHECK_FALSE(pch_enabled(env_with("No")));
}

TEST_CASE("PCH folder names carry their process id", "[pch]") {
  CHECK(pch_folder_pid("1234-aB3xYz") == 1234L);
  CHECK(is_pch_folder_of("1234-aB3xYz", 1234));
  CHECK_FALSE(is_pch_folder_of("1234-aB3xYz", 123));
  CHECK_FALSE(pch_folder_pid("metrale-pch-1-aaaaaa"));
  CHECK_FALSE(pch_folder_pid("12-abc"));
  CHECK_FALSE(pch_folder_pid("-aaaaaa"));
  CHECK_FALSE(pch_folder_pid("0-aaaaaa"));
}
