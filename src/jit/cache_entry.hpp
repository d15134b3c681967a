// jit/cache_entry.hpp: the binary format of one disk-cache entry, encoded and parsed
// by pure functions (the parser is the libFuzzer entry point).
//
// Layout (integers little-endian):
//   magic "MTRLJITC" (8 bytes) | u32 format version
//   6 key fields of EntryKey::stored(), each u32 length + bytes (kernel, params_tag, arch,
//   nvrtc_version, options with the name expression folded in, source_digest) | u32 section count | per section: u32
//   name length + name, u64 size + bytes | u64 XXH3-64 of every byte before it.
// Invariants: the parser never reads past the buffer, checks every length against the bytes
// that remain and against the limits below, and accepts a buffer only if it ends exactly after
// the checksum. The full key is stored, so an entry from another NVRTC version or arch, or a
// digest collision, is told apart from the one requested.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "jit/entry_key.hpp"

namespace metrale {

// Named byte blobs ("cubin", "ptx", "lowered_name", "log", ...), in the caller's order.
using CacheSections = std::vector<std::pair<std::string, std::string>>;

inline constexpr std::uint32_t kCacheFormatVersion = 1;
inline constexpr std::size_t kCacheMaxKeyField = std::size_t{64} * 1024;
inline constexpr std::size_t kCacheMaxSections = 64;
inline constexpr std::size_t kCacheMaxSectionName = 256;
inline constexpr std::uint64_t kCacheMaxSectionBytes = 256ull << 20;
inline constexpr std::uint64_t kCacheMaxEntryBytes = 512ull << 20;

enum class CacheEntryProblem {
  none,
  too_short,            // shorter than magic + version + checksum
  bad_magic,            // not a metrale cache entry
  unsupported_version,  // written by another format version
  truncated,            // a length points past the end of the buffer
  field_too_long,       // a key field or section name longer than its limit
  too_many_sections,
  section_too_large,
  bad_section_name,  // empty or repeated section name
  trailing_bytes,    // bytes between the last section and the checksum
  checksum_mismatch,
  key_mismatch,  // a valid entry, but for another key (arch, NVRTC version, collision)
};

// "checksum mismatch", ... Pure.
std::string_view cache_entry_problem_name(CacheEntryProblem problem);

struct CacheEntryParse {
  CacheEntryProblem problem = CacheEntryProblem::none;
  std::string detail;  // what exactly was wrong (offset, lengths, the differing key field)
  EntryKey key;        // the stored key, in its stored() form (filled once the header parsed)
  CacheSections sections;

  [[nodiscard]] bool ok() const { return problem == CacheEntryProblem::none; }
  // "checksum mismatch: stored 0x..., computed 0x..."
  [[nodiscard]] std::string message() const;
};

// Parses one entry. With `expected`, a stored key that differs from expected->stored() is
// key_mismatch. Pure; never
// throws on any input (except std::bad_alloc).
CacheEntryParse parse_cache_entry(std::span<const std::byte> bytes, const EntryKey* expected);

// Why these sections cannot be stored (empty string when they can). Pure.
std::string cache_sections_problem(const EntryKey& key, const CacheSections& sections);

// Encodes one entry. The caller checks cache_sections_problem() first. Pure.
std::string encode_cache_entry(const EntryKey& key, const CacheSections& sections);

}  // namespace metrale
