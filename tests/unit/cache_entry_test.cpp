// Pure parts of the disk cache: key digest and file name, the entry format under corruption,
// the cache directory choice and the trust rules (no file system access).
#include "jit/cache_entry.hpp"

#include <algorithm>
#include <catch2/catch.hpp>
#include <map>
#include <random>
#include <set>

#include "jit/cache_location.hpp"
#include "jit/entry_key.hpp"
#include "metrale/jit/source_set.hpp"
#include "support/cache_test_support.hpp"

using namespace metrale;
using cache_test::random_bytes;
using cache_test::sample_key;
using cache_test::sample_sections;

namespace {

std::span<const std::byte> bytes_of(const std::string& text) {
  return std::as_bytes(std::span(text.data(), text.size()));
}

}  // namespace

TEST_CASE("cache key digest covers every field unambiguously", "[cache]") {
  const EntryKey base = sample_key();
  std::set<std::string> digests{base.digest()};
  CHECK(base.digest().size() == 32);
  CHECK(base.digest() == sample_key().digest());
  for (std::string EntryKey::*field : {&EntryKey::kernel, &EntryKey::params_tag, &EntryKey::arch,
                                       &EntryKey::nvrtc_version, &EntryKey::options, &EntryKey::source_digest}) {
    EntryKey changed = base;
    changed.*field += "x";
    CHECK(digests.insert(changed.digest()).second);
  }
  // Moving a byte from one field to the next must change the digest (length prefixes).
  EntryKey shifted = base;
  shifted.kernel.pop_back();
  shifted.params_tag = base.kernel.back() + shifted.params_tag;
  CHECK(digests.insert(shifted.digest()).second);
}

TEST_CASE("cache file names are readable and safe", "[cache]") {
  const EntryKey key = sample_key();
  const std::string name = key.file_name();
  CHECK(name == "ssm_ba_gates_hopper.b256l64g8.sm_90.nvrtc13-0." + key.digest().substr(0, 16) + ".cubin");

  EntryKey hostile = key;
  hostile.kernel = "../../etc/passwd\n";
  hostile.params_tag = "";
  hostile.arch = std::string(1000, 'a');
  const std::string safe = hostile.file_name();
  CHECK(safe.find('/') == std::string::npos);
  CHECK(safe.front() != '.');
  CHECK(safe.size() < 255);
  CHECK(std::all_of(safe.begin(), safe.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
  }));
  CHECK(safe.starts_with("_._.._etc_passwd_._.aaaa"));
}

TEST_CASE("cache entries round trip every byte", "[cache]") {
  std::mt19937_64 rng(0xC0FFEE);
  const EntryKey key = sample_key();
  const CacheSections sections = sample_sections(rng);
  const std::string encoded = encode_cache_entry(key, sections);
  CacheEntryParse parsed = parse_cache_entry(bytes_of(encoded), &key);
  REQUIRE(parsed.ok());
  CHECK(parsed.key == key);
  CHECK(parsed.sections == sections);
  CHECK(parse_cache_entry(bytes_of(encoded), nullptr).ok());
  // No sections at all is a valid entry too.
  CHECK(parse_cache_entry(bytes_of(encode_cache_entry(key, {})), &key).ok());
}

TEST_CASE("every truncation of an entry is detected", "[cache]") {
  std::mt19937_64 rng(7);
  const EntryKey key = sample_key();
  const std::string encoded = encode_cache_entry(key, {{"cubin", random_bytes(rng, 300)}, {"log", "ok"}});
  for (std::size_t length = 0; length < encoded.size(); ++length) {
    INFO("length " << length);
    CacheEntryParse parsed = parse_cache_entry(bytes_of(encoded.substr(0, length)), &key);
    CHECK_FALSE(parsed.ok());
    CHECK(parsed.sections.empty());
  }
}

TEST_CASE("a flipped bit anywhere in an entry is detected", "[cache]") {
  std::mt19937_64 rng(11);
  const EntryKey key = sample_key();
  const std::string encoded = encode_cache_entry(key, {{"cubin", random_bytes(rng, 200)}, {"ptx", "x"}});
  std::map<CacheEntryProblem, int> seen;
  for (std::size_t offset = 0; offset < encoded.size(); ++offset) {
    std::string flipped = encoded;
    flipped[offset] = static_cast<char>(flipped[offset] ^ (1 << (rng() % 8)));
    CacheEntryParse parsed = parse_cache_entry(bytes_of(flipped), &key);
    INFO("offset " << offset);
    CHECK_FALSE(parsed.ok());
    ++seen[parsed.problem];
  }
  CHECK(seen[CacheEntryProblem::bad_magic] == 8);
  CHECK(seen[CacheEntryProblem::unsupported_version] == 4);
  CHECK(seen[CacheEntryProblem::checksum_mismatch] > 100);
}

TEST_CASE("an entry for another key is a key mismatch naming the field", "[cache]") {
  const EntryKey stored = sample_key("k", "sm_90", "13-0");
  const std::string encoded = encode_cache_entry(stored, {{"cubin", "abc"}});
  const EntryKey other_arch = sample_key("k", "sm_100", "13-0");
  const EntryKey other_nvrtc = sample_key("k", "sm_90", "12-8");
  CacheEntryParse arch = parse_cache_entry(bytes_of(encoded), &other_arch);
  CHECK(arch.problem == CacheEntryProblem::key_mismatch);
  CHECK(arch.message() == "key mismatch: stored arch 'sm_90', requested 'sm_100'");
  CacheEntryParse nvrtc = parse_cache_entry(bytes_of(encoded), &other_nvrtc);
  CHECK(nvrtc.problem == CacheEntryProblem::key_mismatch);
  CHECK(nvrtc.detail.find("nvrtc_version") != std::string::npos);
}

TEST_CASE("hostile lengths and counts are refused without reading past the buffer", "[cache]") {
  const EntryKey key = sample_key();
  const std::string good = encode_cache_entry(key, {{"cubin", "abcd"}});
  auto patch_u32 = [&](std::size_t offset, std::uint32_t value) {
    std::string out = good;
    for (int i = 0; i < 4; ++i) {
      out[offset + static_cast<std::size_t>(i)] = static_cast<char>((value >> (8 * i)) & 0xFFu);
    }
    return parse_cache_entry(bytes_of(out), &key).problem;
  };
  CHECK(patch_u32(12, 0xFFFFFFFFu) == CacheEntryProblem::field_too_long);
  CHECK(patch_u32(12, 60000) == CacheEntryProblem::truncated);
  std::size_t count_offset = 12;
  for (const std::string* field :
       {&key.kernel, &key.params_tag, &key.arch, &key.nvrtc_version, &key.options, &key.source_digest}) {
    count_offset += 4 + field->size();
  }
  CHECK(patch_u32(count_offset, 1000) == CacheEntryProblem::too_many_sections);
  CHECK(patch_u32(count_offset, 2) == CacheEntryProblem::truncated);
  CHECK(patch_u32(count_offset, 0) == CacheEntryProblem::trailing_bytes);
  CHECK(patch_u32(count_offset + 4, 0) == CacheEntryProblem::bad_section_name);
  CHECK(patch_u32(count_offset + 4, 100000) == CacheEntryProblem::field_too_long);
  const std::size_t size_offset = count_offset + 4 + 4 + 5;
  CHECK(patch_u32(size_offset + 4, 1) == CacheEntryProblem::section_too_large);  // high half of the u64
  CHECK(patch_u32(size_offset, 5000) == CacheEntryProblem::truncated);

  std::string wrong_magic = good;
  wrong_magic.replace(0, 8,
                      "\x7f"
                      "ELF\x02\x01\x01\x00");
  CHECK(parse_cache_entry(bytes_of(wrong_magic), &key).problem == CacheEntryProblem::bad_magic);
  std::mt19937_64 rng(3);
  for (int i = 0; i < 200; ++i) {
    CHECK_FALSE(parse_cache_entry(bytes_of(random_bytes(rng, rng() % 300)), nullptr).ok());
    CHECK_FALSE(parse_cache_entry(bytes_of("MTRLJITC" + random_bytes(rng, rng() % 300)), nullptr).ok());
  }
}

TEST_CASE("sections the format cannot hold are named before writing", "[cache]") {
  const EntryKey key = sample_key();
  CHECK(cache_sections_problem(key, {{"cubin", "x"}, {"ptx", "y"}}).empty());
  CHECK_FALSE(cache_sections_problem(key, {{"cubin", "x"}, {"cubin", "y"}}).empty());
  CHECK_FALSE(cache_sections_problem(key, {{"", "x"}}).empty());
  CHECK_FALSE(cache_sections_problem(key, CacheSections(65, {"a", "b"})).empty());
}

TEST_CASE("the cache directory comes from the environment in order", "[cache]") {
  std::map<std::string, std::string> vars;
  EnvLookup env = [&](const char* name) -> std::optional<std::string> {
    auto it = vars.find(name);
    return it == vars.end() ? std::nullopt : std::optional<std::string>(it->second);
  };
  CHECK_FALSE(choose_cache_dir(env).dir.has_value());
  vars["HOME"] = "/home/u";
  CHECK(*choose_cache_dir(env).dir == "/home/u/.cache/metrale");
  vars["XDG_CACHE_HOME"] = "relative/cache";  // ignored, per the XDG specification
  CHECK(*choose_cache_dir(env).dir == "/home/u/.cache/metrale");
  vars["XDG_CACHE_HOME"] = "/xdg";
  CHECK(*choose_cache_dir(env).dir == "/xdg/metrale");
  vars["METRALE_CACHE_DIR"] = "";  // empty means unset
  CHECK(*choose_cache_dir(env).dir == "/xdg/metrale");
  vars["METRALE_CACHE_DIR"] = "/var/cache/m";
  CHECK(*choose_cache_dir(env).dir == "/var/cache/m");
  CHECK(choose_cache_dir(env).source == "METRALE_CACHE_DIR");
  vars["METRALE_CACHE_DIR"] = "cache";
  CacheDirChoice relative = choose_cache_dir(env);
  CHECK_FALSE(relative.dir.has_value());
  CHECK(relative.problem == "METRALE_CACHE_DIR='cache' is not an absolute path");
  vars["METRALE_CACHE_DIR"] = std::string("/a\0b", 4);
  CHECK(choose_cache_dir(env).problem == "METRALE_CACHE_DIR contains a NUL byte");
  vars["METRALE_CACHE_DIR"] = "/" + std::string(5000, 'a');
  CHECK_FALSE(choose_cache_dir(env).dir.has_value());
}

TEST_CASE("only private directories and entries of the current user are trusted", "[cache]") {
  struct stat dir {};
  dir.st_mode = S_IFDIR | 0700;
  dir.st_uid = 1000;
  CHECK(cache_dir_refusal(dir, 1000) == CachePathRefusal::none);
  CHECK(cache_dir_refusal(dir, 1001) == CachePathRefusal::owned_by_other_user);
  dir.st_mode = S_IFDIR | 0755;
  CHECK(cache_dir_refusal(dir, 1000) == CachePathRefusal::none);
  dir.st_mode = S_IFDIR | 0770;
  CHECK(cache_dir_refusal(dir, 1000) == CachePathRefusal::writable_by_others);
  dir.st_mode = S_IFDIR | 01777;
  CHECK(cache_dir_refusal(dir, 1000) == CachePathRefusal::writable_by_others);
  CHECK(describe_refusal(CachePathRefusal::writable_by_others, "/c", dir, 1000).starts_with("/c has mode 1777"));
  dir.st_mode = S_IFREG | 0600;
  CHECK(cache_dir_refusal(dir, 1000) == CachePathRefusal::not_a_directory);
  CHECK(cache_entry_refusal(dir, 1000) == CachePathRefusal::none);
  dir.st_mode = S_IFREG | 0622;
  CHECK(cache_entry_refusal(dir, 1000) == CachePathRefusal::writable_by_others);
  dir.st_mode = S_IFLNK | 0777;
  CHECK(cache_entry_refusal(dir, 1000) == CachePathRefusal::not_a_regular_file);
}

TEST_CASE("every JIT digest is spelled by one formatter: 32 lowercase hex digits, high half first", "[cache]") {
  CHECK(hex_digest(0x1, 0xab) == "000000000000000100000000000000ab");
  CHECK(hex_digest(0xFEDCBA9876543210ULL, 0) == "fedcba98765432100000000000000000");
  SourceSet sources;
  sources.add_source("a.cuh", "int a;\n");
  const std::string source_digest = sources.digest("a.cuh").value();
  const std::string key_digest = EntryKey{"k", "b1", "sm_90", "13-0", "", source_digest, ""}.digest();
  for (const std::string& digest : {source_digest, key_digest}) {
    INFO(digest);
    CHECK(digest.size() == 32);
    CHECK(digest.find_first_not_of("0123456789abcdef") == std::string::npos);
  }
}
