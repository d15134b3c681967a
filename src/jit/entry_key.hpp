// jit/entry_key.hpp: what makes one compiled kernel differ from another: the one key of the
// memory cache, the disk cache, the remote tier and the bundles (EntryKey), and its spellings.
// Invariants: every digest covers its fields length-prefixed, so two keys that differ in any
// covered field (even by moving bytes between fields) have different digests; the disk and
// remote tiers key on stored() (the name expression folded into the options, as entries
// written before the key was one type spell it), bundles on bundle_digest() (no NVRTC version:
// a bundle's cubins are checked by their own checksums); file_name() is a readable, single path
// component made only of [A-Za-z0-9._-], never starting with '.' (names starting with '.' are
// the cache's temp files), and never longer than NAME_MAX.
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

struct EntryKey {
  std::string kernel;           // "ssm_ba_gates_hopper"
  std::string params_tag;       // "b256l64g8"
  std::string arch;             // "sm_90"
  std::string nvrtc_version;    // "13-0"; empty in a bundle's key
  std::string options;          // compile options, space-joined
  std::string source_digest;    // hex hash of the source and every header it includes (caller computes)
  std::string name_expression;  // "ssm_ba_gates<256, 64, 8>"; empty for a host object

  friend auto operator<=>(const EntryKey&, const EntryKey&) = default;

  // The form the disk cache and the remote tier store and compare: the name expression folded
  // into the options (" #name-expression=<expr>") and cleared; a key without one is its own.
  [[nodiscard]] EntryKey stored() const;
  // XXH3-128 over stored()'s six fields, 32 lowercase hex digits: the disk and remote digest.
  [[nodiscard]] std::string digest() const;
  // "ssm_ba_gates_hopper.b256l64g8.sm_90.nvrtc13-0.<16 hex of digest>.cubin".
  [[nodiscard]] std::string file_name() const;
  // XXH3-128 over kernel, params, arch, name expression, options and source digest (no NVRTC
  // version): a bundle entry's key.
  [[nodiscard]] std::string bundle_digest() const;
  // Every field in one string, for the memory cache's map. Pure.
  [[nodiscard]] std::string joined() const;
};

// The file-name suffix of every cache entry.
inline constexpr const char* kCacheEntrySuffix = ".cubin";

// Replaces every character outside [A-Za-z0-9._-] by '_', a leading '.' by '_', an empty
// text by "_", and keeps at most max_length characters. Pure.
std::string sanitize_cache_name_part(const std::string& text, std::size_t max_length);

}  // namespace metrale
