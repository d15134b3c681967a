// jit_disk_store_test.cpp: the registry over the real DiskCache: a new registry (and a new
// process) hits disk with no NVRTC call; a bit-flipped or truncated entry is rebuilt; an
// unusable directory means memory only and every kernel still builds.
#include <sys/stat.h>
#include <unistd.h>

#define XXH_INLINE_ALL
#include <fmt/format.h>
#include <xxhash.h>

#include <catch2/catch.hpp>

#include "jit/compiled_entry.hpp"
#include "jit/compiled_memory_cache.hpp"
#include "jit/disk_entry_store.hpp"
#include "metrale/jit/kernel_registry.hpp"
#include "support/cache_test_support.hpp"
#include "support/jit_test_support.hpp"

using namespace metrale;
using cache_test::TempDir;

namespace {

KernelRegistry::Options disk_options(const std::filesystem::path& dir) {
  KernelRegistry::Options options;
  options.store = std::make_shared<EntryStore>(disk_entry_store(std::make_shared<DiskCache>(DiskCache::open_at(dir))));
  options.memory = std::make_shared<CompiledMemoryCache>();
  options.parallelism = 2;
  return options;
}

// `sources`: the test kernels as already read (a child that may not read the checkout); null: read now.
std::vector<BuildRecord> build_two(const std::filesystem::path& dir, RegistryStats* stats = nullptr,
                                   const SourceSet* sources = nullptr) {
  KernelRegistry registry(sources != nullptr ? *sources : jit_test_support::test_sources(), disk_options(dir));
  registry.declare({"scale", "jit_test_kernels.cuh", "jit_test::scale<64>", KernelParams{64, 0, 0}, false});
  registry.declare({"to_bf16", "jit_test_kernels.cuh", "jit_test::to_bf16<32>", KernelParams{0, 32, 0}, false});
  auto records = registry.build("sm_90");
  if (stats != nullptr) {
    *stats = registry.stats();
  }
  return records;
}

std::vector<std::filesystem::path> entries(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> out;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() == ".cubin") {
      out.push_back(entry.path());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

TEST_CASE("the entry key folds in the name expression and keeps the digests entries were written under",
          "[jit][disk]") {
  EntryKey key{"scale", "b64", "sm_90", "13-0", "-std=c++17", "abc", "jit_test::scale<64>"};
  EntryKey other = key;
  other.name_expression = "jit_test::scale<65>";
  CHECK(key.file_name().starts_with("scale.b64.sm_90.nvrtc13-0."));
  CHECK(key.digest() != other.digest());
  CHECK(key.joined() != other.joined());
  // The one key type keeps the digest entries were written under (the expression folded into the
  // options): a key spelled folded by hand digests the same, and XXH3-128 over the length-prefixed
  // fields, computed here, is that digest.
  const EntryKey folded{"scale", "b64", "sm_90", "13-0", "-std=c++17 #name-expression=jit_test::scale<64>", "abc", ""};
  CHECK(key.stored() == folded);
  CHECK(folded.stored() == folded);
  CHECK(key.digest() == folded.digest());
  CHECK(key.file_name() == folded.file_name());
  std::string buffer;
  for (const std::string* field : {&folded.kernel, &folded.params_tag, &folded.arch, &folded.nvrtc_version,
                                   &folded.options, &folded.source_digest}) {
    for (int i = 0; i < 8; ++i) {
      buffer.push_back(static_cast<char>((field->size() >> (8 * i)) & 0xFFU));
    }
    buffer += *field;
  }
  const XXH128_hash_t hash = XXH3_128bits(buffer.data(), buffer.size());
  CHECK(key.digest() == fmt::format("{:016x}{:016x}", hash.high64, hash.low64));
  // A bundle's digest leaves the compiler out and keeps the expression apart.
  EntryKey other_compiler = key;
  other_compiler.nvrtc_version = "12-8";
  CHECK(other_compiler.bundle_digest() == key.bundle_digest());
  CHECK(other_compiler.digest() != key.digest());
  CHECK(other.bundle_digest() != key.bundle_digest());
  CHECK_FALSE(disk_entry_store(nullptr).enabled());
  CHECK_FALSE(disk_entry_store(std::make_shared<DiskCache>(DiskCache::disabled("off"))).enabled());
}

TEST_CASE("a new registry and a new process hit the disk, with no NVRTC call", "[jit][disk]") {
  TempDir dir;
  RegistryStats stats;
  const auto first = build_two(dir.path(), &stats);
  REQUIRE(first[0].ok());
  REQUIRE(first[1].ok());
  CHECK(stats.nvrtc_programs == 1);
  REQUIRE(entries(dir.path()).size() == 2);

  const auto second = build_two(dir.path(), &stats);
  CHECK(second[0].origin == BuildOrigin::kDisk);
  CHECK(second[1].origin == BuildOrigin::kDisk);
  CHECK(second[0].entry->lowered_name == first[0].entry->lowered_name);
  CHECK(*second[1].entry->cubin == *first[1].entry->cubin);
  CHECK(stats.disk_hits == 2);
  CHECK(stats.nvrtc_programs == 0);

  const int child = cache_test::run_in_child([&] {
    RegistryStats child_stats;
    const auto records = build_two(dir.path(), &child_stats);
    const bool ok = records[0].ok() && records[1].ok() && child_stats.disk_hits == 2 &&
                    child_stats.nvrtc_programs == 0 && records[0].entry->lowered_name == first[0].entry->lowered_name;
    return ok ? 0 : 1;
  });
  CHECK(child == 0);
}

TEST_CASE("a bit-flipped or truncated entry is detected and rebuilt", "[jit][disk]") {
  TempDir dir;
  const auto first = build_two(dir.path());
  REQUIRE(first[0].ok());
  const auto files = entries(dir.path());
  REQUIRE(files.size() == 2);
  std::string flipped = cache_test::read_all(files[0]);
  flipped[flipped.size() / 2] = static_cast<char>(flipped[flipped.size() / 2] ^ 0x10);
  cache_test::write_all(files[0], flipped);
  const std::string whole = cache_test::read_all(files[1]);
  cache_test::write_all(files[1], whole.substr(0, whole.size() / 3));

  RegistryStats stats;
  const auto rebuilt = build_two(dir.path(), &stats);
  CHECK(rebuilt[0].ok());
  CHECK(rebuilt[1].ok());
  CHECK(rebuilt[0].origin == BuildOrigin::kNvrtc);
  CHECK(rebuilt[1].origin == BuildOrigin::kNvrtc);
  CHECK(stats.disk_hits == 0);
  CHECK(*rebuilt[0].entry->cubin == *first[0].entry->cubin);  // NVRTC is deterministic
  DiskCache cache = DiskCache::open_at(dir.path());
  for (const CacheVerifyResult& verified : cache.verify()) {
    INFO(verified.path << ": " << verified.problem);
    CHECK(verified.ok);
  }
  build_two(dir.path(), &stats);
  CHECK(stats.disk_hits == 2);
}

// Builds the two kernels (from `sources`, read beforehand) into `dir` and returns the number of the
// first check that failed (0: all held): both records ok, one NVRTC program, and the directory
// really read-only to this process.
int build_read_only(const std::filesystem::path& dir, const SourceSet& sources) {
  RegistryStats stats;
  const auto records = build_two(dir, &stats, &sources);
  if (records.size() != 2 || !records[0].ok() || !records[1].ok()) {
    return 2;
  }
  if (stats.nvrtc_programs != 1) {
    return 3;
  }
  if (::access(dir.c_str(), W_OK) == 0) {
    return 4;  // the premise failed: this process may write the directory
  }
  return 0;
}

TEST_CASE("a read-only cache directory still builds every kernel", "[jit][disk]") {
  TempDir temp;
  const auto dir = temp.path() / "cache";
  std::filesystem::create_directories(dir);
  // Read here, before the child drops to nobody: the checkout may lie under a folder nobody may
  // enter (a 0700 home), and the child must read nothing from it.
  const SourceSet sources = jit_test_support::test_sources();
  int code = 0;
  if (::geteuid() == 0) {
    // Root ignores permission bits (CI runs as root): build in a child that drops to nobody, who
    // owns the directory but may only read it.
    REQUIRE(::chmod(temp.path().c_str(), 0711) == 0);
    REQUIRE(::chown(dir.c_str(), 65534, 65534) == 0);
    REQUIRE(::chmod(dir.c_str(), 0500) == 0);
    code = cache_test::run_in_child([&] {
      if (::setgid(65534) != 0 || ::setuid(65534) != 0) {
        return 1;
      }
      return build_read_only(dir, sources);
    });
  } else {
    REQUIRE(::chmod(dir.c_str(), 0500) == 0);
    code = build_read_only(dir, sources);
    ::chmod(dir.c_str(), 0700);
  }
  CHECK(code == 0);
  CHECK(entries(dir).empty());
}
