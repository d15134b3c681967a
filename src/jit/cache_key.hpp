// jit/cache_key.hpp: what makes one compiled kernel differ from another.
// Invariants: digest() covers every field, length-prefixed, so two keys that differ in any
// field (even by moving bytes between fields) have different digests; file_name() is a
// readable, single path component made only of [A-Za-z0-9._-], never starting with '.'
// (names starting with '.' are the cache's temp files), and never longer than NAME_MAX.
#pragma once

#include <compare>
#include <cstdint>
#include <initializer_list>
#include <string>

namespace metrale {

// A 128-bit digest (XXH3-128's high and low halves) as 32 lowercase hex digits, high first: the
// one spelling of every digest the JIT writes (cache keys, source digests). Pure.
std::string hex_digest(std::uint64_t high, std::uint64_t low);

// XXH3-128 over `fields`, each length-prefixed, as hex_digest spells it: the digest of every key
// made of text fields (cache keys, verdict keys). Pure.
std::string fields_digest(std::initializer_list<const std::string*> fields);

struct CacheKey {
  std::string kernel;         // "ssm_ba_gates_hopper"
  std::string params_tag;     // "b256l64g8"
  std::string arch;           // "sm_90"
  std::string nvrtc_version;  // "13-0"
  std::string options;        // compile options joined
  std::string source_digest;  // hex hash of the source and every header it includes (caller computes)

  friend auto operator<=>(const CacheKey&, const CacheKey&) = default;

  // XXH3-128 over all fields, 32 lowercase hex digits.
  [[nodiscard]] std::string digest() const;
  // "ssm_ba_gates_hopper.b256l64g8.sm_90.nvrtc13-0.<16 hex of digest>.cubin".
  [[nodiscard]] std::string file_name() const;
};

// The file-name suffix of every cache entry.
inline constexpr const char* kCacheEntrySuffix = ".cubin";

// Replaces every character outside [A-Za-z0-9._-] by '_', a leading '.' by '_', an empty
// text by "_", and keeps at most max_length characters. Pure.
std::string sanitize_cache_name_part(const std::string& text, std::size_t max_length);

}  // namespace metrale
