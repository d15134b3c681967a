// The read-back rules (src/jit/read_back_file.hpp) where bundles and the disk cache apply them:
// a FIFO, a link to /dev/zero or out of the folder, a directory, a file past the limit or of
// another size than its manifest records is refused at once, naming the path and the rule,
// never read, never waited on.
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <string>

#include "jit/bundle.hpp"
#include "jit/disk_cache.hpp"
#include "jit/read_back_file.hpp"
#include "metrale/error.hpp"
#include "support/cache_test_support.hpp"

using namespace metrale;

namespace {

struct Planted {
  const char* rule;  // what the refusal must say
  std::function<void(const std::filesystem::path&)> plant;
};

void write_bytes(const std::filesystem::path& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

// The odd file types, each planted at a path that held (or would hold) a file to read.
std::vector<Planted> odd_files(std::uint64_t limit) {
  return {{"a FIFO", [](const auto& path) { REQUIRE(::mkfifo(path.c_str(), 0600) == 0); }},
          {"symbolic link", [](const auto& path) { std::filesystem::create_symlink("/dev/zero", path); }},
          {"a directory", [](const auto& path) { std::filesystem::create_directory(path); }},
          {"past the limit", [limit](const auto& path) {
             write_bytes(path, "x");
             std::filesystem::resize_file(path, limit + 1);  // sparse: no disk used
           }}};
}

// A CUBIN-looking image for sm_90 (ELF64, ABI 0, SM in e_flags' low byte), random after the header.
std::string fake_cubin(std::mt19937_64& random) {
  std::string bytes(64 + random() % 512, '\0');
  for (std::size_t i = 52; i < bytes.size(); ++i) {
    bytes[i] = static_cast<char>(random());
  }
  bytes.replace(0, 4,
                "\x7f"
                "ELF");
  bytes[4] = 2;
  bytes[48] = 90;
  return bytes;
}

BundleEntry written_bundle(const std::filesystem::path& dir, std::mt19937_64& random) {
  BundleImage image;
  image.entry.fields = EntryKey{.kernel = "k",
                                .params_tag = "b64",
                                .arch = "sm_90",
                                .nvrtc_version = "",
                                .options = "-std=c++17",
                                .source_digest = "abc",
                                .name_expression = "ns::k<64>"};
  image.entry.lowered_name = "_Z1kILi64EEvv";
  image.cubin = std::make_shared<const std::string>(fake_cubin(random));
  write_bundle(dir, {image});
  const BundleManifest manifest = read_bundle_manifest(dir);
  REQUIRE(manifest.entries.size() == 1);
  REQUIRE(manifest.entries[0].cubin_bytes == image.cubin->size());
  REQUIRE(bundle_entry_problem(dir, manifest.entries[0]).empty());
  return manifest.entries[0];
}

// Each refusal comes back at once (a FIFO read would block forever, /dev/zero never ends).
template <typename Body>
void quickly(Body body) {
  const auto start = std::chrono::steady_clock::now();
  body();
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));
}

}  // namespace

TEST_CASE("bundle files that are not regular files of their recorded size are refused", "[jit][bundle][readback]") {
  cache_test::TempDir temp;
  std::mt19937_64 random(263);
  const BundleEntry entry = written_bundle(temp.path(), random);
  const std::filesystem::path cubin = temp.path() / entry.cubin_file;
  const std::string good = [&] {
    std::ifstream in(cubin, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }();
  std::filesystem::rename(cubin, temp.path() / "real.bin");
  for (const Planted& planted : odd_files(kBundleMaxFileBytes)) {
    INFO(planted.rule);
    planted.plant(cubin);
    quickly([&] {
      CHECK_THAT(bundle_entry_problem(temp.path(), entry),
                 Catch::Contains(cubin.string()) && Catch::Contains(planted.rule));
    });
    std::filesystem::remove_all(cubin);
  }
  // One byte more than the manifest records: refused before reading.
  write_bytes(cubin, good + "!");
  CHECK_THAT(bundle_entry_problem(temp.path(), entry),
             Catch::Contains(cubin.string()) && Catch::Contains("the record of it says"));
  std::filesystem::remove(cubin);
  // A link that stays in the bundle is fine (a bundle installed through links); one out is not.
  std::filesystem::create_symlink("real.bin", cubin);
  CHECK(bundle_entry_problem(temp.path(), entry).empty());
  std::filesystem::remove(cubin);
  cache_test::TempDir outside;
  write_bytes(outside.path() / "real.bin", good);
  std::filesystem::create_symlink(outside.path() / "real.bin", cubin);
  CHECK_THAT(bundle_entry_problem(temp.path(), entry), Catch::Contains("leads out of"));
}

TEST_CASE("a bundle manifest that is not a regular file is refused and the bundle skipped", "[jit][bundle][readback]") {
  cache_test::TempDir temp;
  std::mt19937_64 random(264);
  written_bundle(temp.path(), random);
  const std::filesystem::path manifest = temp.path() / kBundleManifestName;
  std::filesystem::remove(manifest);
  for (const Planted& planted : odd_files(kBundleMaxManifestBytes)) {
    INFO(planted.rule);
    planted.plant(manifest);
    quickly([&] {
      CHECK_THROWS_WITH(read_bundle_manifest(temp.path()),
                        Catch::Contains(manifest.string()) && Catch::Contains(planted.rule));
      CHECK(BundleSet({temp.path()}).empty());
    });
    std::filesystem::remove_all(manifest);
  }
}

TEST_CASE("cache entries that are not regular files are skipped and named by verify", "[cache][readback]") {
  cache_test::TempDir temp;
  DiskCache cache = DiskCache::open_at(temp.path());
  const EntryKey key = cache_test::sample_key("odd");
  const std::filesystem::path entry = temp.path() / key.file_name();
  for (const Planted& planted : odd_files(kCacheMaxEntryBytes)) {
    INFO(planted.rule);
    planted.plant(entry);
    quickly([&] {
      const auto verdicts = cache.verify();
      REQUIRE(verdicts.size() == 1);
      CHECK_FALSE(verdicts[0].ok);
      CHECK_THAT(verdicts[0].problem, Catch::Contains(entry.string()) && Catch::Contains(planted.rule));
      CHECK_FALSE(cache.load(key).has_value());  // (an oversize entry is removed by the load)
    });
    std::filesystem::remove_all(entry);
  }
}

TEST_CASE("read_back_file names the path and the rule", "[jit][readback]") {
  cache_test::TempDir temp;
  std::mt19937_64 random(265);
  std::string bytes(100 + random() % 100, '\0');
  for (char& c : bytes) {
    c = static_cast<char>(random());
  }
  write_bytes(temp.path() / "f", bytes);
  ReadBackFile read = read_back_file(temp.path() / "f", ReadBackRules{bytes.size(), bytes.size(), {}});
  REQUIRE(read.ok());
  CHECK(read.bytes == bytes);
  CHECK(read.fd.get() < 0);
  read = read_back_file(temp.path() / "f", ReadBackRules{bytes.size() - 1, {}, {}});
  CHECK(read.rule == ReadBackRule::too_large);
  CHECK(read.bytes.empty());
  read = read_back_file(temp.path() / "f", ReadBackRules{bytes.size(), bytes.size() + 1, {}});
  CHECK(read.rule == ReadBackRule::size_mismatch);
  read = read_back_file(temp.path() / "none", ReadBackRules{10, {}, {}});
  CHECK(read.rule == ReadBackRule::missing);
  std::filesystem::create_symlink("f", temp.path() / "link");
  read = read_back_file(temp.path() / "link", ReadBackRules{bytes.size(), {}, {}});
  CHECK(read.rule == ReadBackRule::link);
  read = read_back_file(temp.path() / "link", ReadBackRules{bytes.size(), {}, temp.path()});
  REQUIRE(read.ok());
  CHECK(read.bytes == bytes);
}

namespace {

// A manifest of one entry with every string field, plus `extra` ("name": value).
std::string full_entry(const std::string& extra) {
  return R"({"format": "metrale-bundle", "version": 1, "entries": [{"kernel": "k", "params": "p", "arch": "sm_90", )"
         R"("name_expression": "k", "options": "", "source_digest": "d", "key": "00", "lowered_name": "_Z1kv", )" +
         extra + "}]}";
}

}  // namespace

TEST_CASE("a manifest field of the wrong JSON type is a ConfigError naming the file", "[jit][bundle][readback]") {
  // Each used to escape as a nlohmann exception (the runtime catches ConfigError only).
  for (const std::string& text : std::vector<std::string>{
           R"({"format": 7, "version": 1, "entries": []})",
           R"({"format": "metrale-bundle", "version": "1", "entries": []})",
           R"({"format": "metrale-bundle", "version": 1, "library": [], "entries": []})",
           R"({"format": "metrale-bundle", "version": 1, "entries": [7]})",
           R"({"format": "metrale-bundle", "version": 1, "entries": [{"kernel": "k", "cubin_bytes": -1}]})",
           // A number past any double: nlohmann's parser throws out_of_range 406, not parse_error.
           R"({"format": "metrale-bundle", "version": 1, "entries": [{"kernel": "k", "cubin_bytes": 6)" +
               std::string(400, '6') + "}]}",
           // Numbers a field's type cannot hold (nlohmann's get<int>() casts them unchecked: UB).
           R"({"format": "metrale-bundle", "version": 1.5, "entries": []})",
           R"({"format": "metrale-bundle", "version": 1e300, "entries": []})", full_entry(R"("cubin_bytes": 1.5)"),
           full_entry(R"("cubin_bytes": -3)"),
           full_entry(R"("resources": {"registers": 1.2e79, "spill_stores": 0, "spill_loads": 0, )"
                      R"("shared_bytes": 0, "stack_bytes": 0})"),
           full_entry(R"("resources": {"registers": 3000000000, "spill_stores": 0, "spill_loads": 0, )"
                      R"("shared_bytes": 0, "stack_bytes": 0})")}) {
    INFO(text);
    CHECK_THROWS_WITH(manifest_from_json(text, "m.json"), Catch::StartsWith("m.json: "));
    CHECK_THROWS_AS(manifest_from_json(text, "m.json"), ConfigError);
  }
  // The same entry with numbers its fields hold is read as written.
  const BundleManifest held = manifest_from_json(
      full_entry(R"("cubin_bytes": 18446744073709551615, "resources": {"registers": 255, "spill_stores": 0, )"
                 R"("spill_loads": 1, "shared_bytes": 49152, "stack_bytes": 0})"),
      "m.json");
  REQUIRE(held.entries.size() == 1);
  CHECK(held.entries[0].cubin_bytes == 18446744073709551615ULL);
  REQUIRE(held.entries[0].resources.has_value());
  CHECK(held.entries[0].resources->registers == 255);
  CHECK(held.entries[0].resources->shared_bytes == 49152);
}
