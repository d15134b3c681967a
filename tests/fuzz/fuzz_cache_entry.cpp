// fuzz_cache_entry.cpp: the disk-cache entry parser never crashes or reads out of bounds,
// and an entry it accepts re-encodes to the same bytes (no two readings of one file).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <span>
#include <string>

#include "jit/cache_entry.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  const metrale::CacheEntryParse parsed = metrale::parse_cache_entry(bytes, nullptr);
  if (parsed.ok()) {
    const std::string again = metrale::encode_cache_entry(parsed.key, parsed.sections);
    if (again.size() != size || std::memcmp(again.data(), data, size) != 0) {
      std::abort();
    }
    // The stored key must also be accepted as the expected key.
    if (!metrale::parse_cache_entry(bytes, &parsed.key).ok()) {
      std::abort();
    }
  }
  return 0;
}
