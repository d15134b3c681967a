// jit/cache_secret.hpp: a cache's secret key and the keyed checksums (MACs) made with it, so a
// file this library wrote can be told from one someone else edited or planted.
// Invariants: the key is 32 random bytes kept as 64 hex digits in one file of a trusted cache
// folder (cache_trust.hpp), mode 0600, owned by the current user (or root); a key file readable
// or writable by anyone else, of another form, or a link is refused, never used. The first
// process to need the key creates it atomically (temp file, then link(2), so the first of racing
// writers wins and every process ends with the same key). The MAC is libsodium's crypto_auth
// (HMAC-SHA-512-256); comparisons are constant time.
#pragma once

#include <array>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace metrale {

struct CacheSecret {
  std::array<unsigned char, 32> bytes{};
};

struct CacheSecretResult {
  std::optional<CacheSecret> secret;  // absent: see problem
  std::string problem;                // "/c/verdicts/key has mode 0644: ..."
};

// The key in dir/name, created there on first use. `dir` must already be trusted.
CacheSecretResult load_or_create_cache_secret(const std::filesystem::path& dir, std::string_view name);

// The MAC of `text` under `secret`, as 64 hex digits. Pure.
std::string keyed_checksum(const CacheSecret& secret, std::string_view text);
// Whether `hex` is the MAC of `text` under `secret` (constant time). Pure.
bool keyed_checksum_matches(const CacheSecret& secret, std::string_view text, std::string_view hex);

}  // namespace metrale
