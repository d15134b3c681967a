// jit_bundle_test.cpp: the pure parts of bundles and of the NVRTC loader: manifest round trip
// and errors, the bundle key, the CUBIN arch reader, the directory list, the loader's
// candidates, and the disk lookup of a process without NVRTC. The end-to-end load is tests/cli/bundle_load.cpp.
#include <catch2/catch.hpp>

#include "jit/bundle.hpp"
#include "jit/disk_cache.hpp"
#include "jit/nvrtc_compiler.hpp"
#include "jit/nvrtc_library.hpp"
#include "metrale/error.hpp"
#include "ref/bf16.hpp"
#include "support/cache_test_support.hpp"

using namespace metrale;

namespace {

BundleEntry sample_entry(const std::string& kernel) {
  BundleEntry entry;
  entry.fields = EntryKey{.kernel = kernel,
                          .params_tag = "b256l64",
                          .arch = "sm_90",
                          .nvrtc_version = "",
                          .options = "-std=c++17 --fmad=false",
                          .source_digest = "abc123",
                          .name_expression = "ns::k<256, 64>"};
  entry.key = entry.fields.bundle_digest();
  entry.lowered_name = "_Z1kILi256EEvv";
  entry.built_by_nvrtc = "13-0+0badf00d";
  entry.cubin_file = kernel + ".cubin";
  entry.cubin_xxh3 = bundle_checksum("cubin bytes");
  entry.resources = KernelResources{entry.lowered_name, 72, 0, 0, 256, 0};
  entry.entry_xxh3 = entry.entry_checksum();
  return entry;
}

}  // namespace

TEST_CASE("a bundle manifest survives JSON and names what is wrong", "[jit][bundle]") {
  const BundleManifest manifest{"metrale-jit", {sample_entry("a"), sample_entry("b")}};
  const BundleManifest back = manifest_from_json(manifest_to_json(manifest), "m.json");
  REQUIRE(back.entries.size() == 2);
  CHECK(back.entries[1].fields.kernel == "b");
  CHECK(back.entries[0].key == manifest.entries[0].key);
  CHECK(back.entries[0].entry_xxh3 == back.entries[0].entry_checksum());
  CHECK(back.entries[0].resources->registers == 72);
  CHECK_THROWS_AS(manifest_from_json("{", "m.json"), ConfigError);
  CHECK_THROWS_AS(manifest_from_json(R"({"format":"other","version":1,"entries":[]})", "m.json"), ConfigError);
  CHECK_THROWS_AS(manifest_from_json(R"({"format":"metrale-bundle","version":99,"entries":[]})", "m.json"),
                  ConfigError);
  try {
    manifest_from_json(R"({"format":"metrale-bundle","version":1,"entries":[{"kernel":"x"}]})", "m.json");
    FAIL("an entry without its fields parsed");
  } catch (const ConfigError& error) {
    CHECK(std::string(error.what()).find("m.json: entry 0") != std::string::npos);
  }
}

TEST_CASE("the bundle key changes with every field and never with the compiler", "[jit][bundle]") {
  const EntryKey base = sample_entry("k").fields;
  for (std::string EntryKey::*field : {&EntryKey::kernel, &EntryKey::params_tag, &EntryKey::arch,
                                       &EntryKey::name_expression, &EntryKey::options, &EntryKey::source_digest}) {
    EntryKey changed = base;
    changed.*field += "x";
    CHECK(changed.bundle_digest() != base.bundle_digest());
  }
  EntryKey compiled_by = base;
  compiled_by.nvrtc_version = "13-0";
  CHECK(compiled_by.bundle_digest() == base.bundle_digest());
  // Moving a byte between fields changes the key too (length-prefixed).
  EntryKey moved = base;
  moved.kernel += moved.params_tag.substr(0, 1);
  moved.params_tag.erase(0, 1);
  CHECK(moved.bundle_digest() != base.bundle_digest());
}

TEST_CASE("the CUBIN arch is read from the ELF header of both ABI layouts", "[jit][bundle]") {
  std::string elf(64, '\0');
  elf.replace(0, 4,
              "\x7f"
              "ELF");
  elf[4] = 2;
  // Seeded SM numbers in [50, 130).
  for (const float drawn : ref::random_floats(16, 0xB0D1E, 50.0f, 130.0f)) {
    const auto sm = static_cast<unsigned>(drawn);
    elf[8] = 8;  // ABI 8: bits 8-15
    elf[48] = static_cast<char>(0x04);
    elf[49] = static_cast<char>(sm);
    CHECK(cubin_elf_arch(elf) == "sm_" + std::to_string(sm));
    elf[8] = 7;  // older: bits 0-7
    elf[48] = static_cast<char>(sm);
    CHECK(cubin_elf_arch(elf) == "sm_" + std::to_string(sm));
  }
  CHECK_FALSE(cubin_elf_arch("// PTX text").has_value());
  CHECK_FALSE(cubin_elf_arch(elf.substr(0, 40)).has_value());
}

TEST_CASE("bundle directories and NVRTC candidates", "[jit][bundle]") {
  const auto dirs = BundleSet::split_dirs("/a::/b/c:");
  REQUIRE(dirs.size() == 2);
  CHECK(dirs[0] == "/a");
  CHECK(dirs[1] == "/b/c");
  CHECK(BundleSet::split_dirs("").empty());
  // The NVRTC candidates' order is tests/unit/jit_cuda_search_test.cpp's.
}

TEST_CASE("without NVRTC the disk cache serves an entry any compiler wrote for the same key", "[jit][cache]") {
  cache_test::TempDir temp;
  std::mt19937_64 rng(0x5EED13);
  DiskCache cache = DiskCache::open_at(temp.path());
  REQUIRE(cache.enabled());
  const EntryKey old_compiler = cache_test::sample_key("ssm_ba_gates_hopper", "sm_90", "12-8+00000001");
  const EntryKey new_compiler = cache_test::sample_key("ssm_ba_gates_hopper", "sm_90", "13-0+00000002");
  const CacheSections old_sections = cache_test::sample_sections(rng);
  const CacheSections new_sections = cache_test::sample_sections(rng);
  REQUIRE(cache.store(old_compiler, old_sections));
  REQUIRE(cache.store(new_compiler, new_sections));
  // An older major version whose name sorts last as text ("9-2" > "13-0"): never preferred.
  REQUIRE(cache.store(cache_test::sample_key("ssm_ba_gates_hopper", "sm_90", "9-2+00000003"),
                      cache_test::sample_sections(rng)));
  // Another arch and another source of the same kernel must never be served.
  REQUIRE(cache.store(cache_test::sample_key("ssm_ba_gates_hopper", "sm_89", "13-0+00000002"),
                      cache_test::sample_sections(rng)));

  const EntryKey wanted = cache_test::sample_key("ssm_ba_gates_hopper", "sm_90", kNoNvrtcVersion);
  CHECK_FALSE(cache.load(wanted).has_value());  // the exact key names no compiler
  CHECK(cache.load_from_any_compiler(wanted) == new_sections);
  EntryKey other_source = wanted;
  other_source.source_digest += "0";
  CHECK_FALSE(cache.load_from_any_compiler(other_source).has_value());
  EntryKey other_arch = wanted;
  other_arch.arch = "sm_100";
  CHECK_FALSE(cache.load_from_any_compiler(other_arch).has_value());
  // A corrupt newest entry is passed over, not served.
  const auto newest = temp.path() / new_compiler.file_name();
  std::string bytes = cache_test::read_all(newest);
  bytes[bytes.size() / 2] = static_cast<char>(bytes[bytes.size() / 2] ^ 0x10);
  cache_test::write_all(newest, bytes);
  CHECK(cache.load_from_any_compiler(wanted) == old_sections);
}
