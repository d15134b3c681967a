// cache_entry.cpp: encoder and defensive parser of the disk-cache entry format.
// The parser reads through a bounds-checked cursor; every read either succeeds within the
// buffer or records a named problem, so no input can make it read out of bounds.
#include "jit/cache_entry.hpp"

#define XXH_INLINE_ALL
#include <fmt/format.h>
#include <xxhash.h>

#include <array>
#include <cstring>
#include <optional>
#include <set>

namespace metrale {

namespace {

constexpr std::array<char, 8> kMagic{'M', 'T', 'R', 'L', 'J', 'I', 'T', 'C'};
constexpr std::size_t kChecksumBytes = 8;

template <typename Int>
void put_int(std::string& out, Int value) {
  for (std::size_t i = 0; i < sizeof(Int); ++i) {
    out.push_back(static_cast<char>((static_cast<std::uint64_t>(value) >> (8 * i)) & 0xFFu));
  }
}

template <typename Int>
Int get_int(const std::byte* at) {
  std::uint64_t value = 0;
  for (std::size_t i = 0; i < sizeof(Int); ++i) {
    value |= static_cast<std::uint64_t>(std::to_integer<std::uint8_t>(at[i])) << (8 * i);
  }
  return static_cast<Int>(value);
}

std::uint64_t checksum_of(std::span<const std::byte> bytes) { return XXH3_64bits(bytes.data(), bytes.size()); }

// A read-only view with a position; every read checks the bytes that remain.
class Cursor {
 public:
  explicit Cursor(std::span<const std::byte> bytes) : bytes_(bytes) {}

  [[nodiscard]] std::size_t offset() const { return offset_; }
  [[nodiscard]] std::size_t remaining() const { return bytes_.size() - offset_; }

  template <typename Int>
  std::optional<Int> read_int() {
    if (remaining() < sizeof(Int)) {
      return std::nullopt;
    }
    Int value = get_int<Int>(bytes_.data() + offset_);
    offset_ += sizeof(Int);
    return value;
  }

  std::optional<std::string> read_bytes(std::uint64_t length) {
    if (length > remaining()) {
      return std::nullopt;
    }
    std::string out(reinterpret_cast<const char*>(bytes_.data() + offset_), static_cast<std::size_t>(length));
    offset_ += static_cast<std::size_t>(length);
    return out;
  }

 private:
  std::span<const std::byte> bytes_;
  std::size_t offset_ = 0;
};

CacheEntryParse fail(CacheEntryParse&& partial, CacheEntryProblem problem, std::string detail) {
  partial.problem = problem;
  partial.detail = std::move(detail);
  partial.sections.clear();
  return std::move(partial);
}

constexpr std::array<std::pair<const char*, std::string EntryKey::*>, 6> kKeyFields{{
    {"kernel", &EntryKey::kernel},
    {"params_tag", &EntryKey::params_tag},
    {"arch", &EntryKey::arch},
    {"nvrtc_version", &EntryKey::nvrtc_version},
    {"options", &EntryKey::options},
    {"source_digest", &EntryKey::source_digest},
}};

}  // namespace

std::string_view cache_entry_problem_name(CacheEntryProblem problem) {
  switch (problem) {
    case CacheEntryProblem::none:
      return "ok";
    case CacheEntryProblem::too_short:
      return "too short";
    case CacheEntryProblem::bad_magic:
      return "bad magic";
    case CacheEntryProblem::unsupported_version:
      return "unsupported format version";
    case CacheEntryProblem::truncated:
      return "truncated";
    case CacheEntryProblem::field_too_long:
      return "field too long";
    case CacheEntryProblem::too_many_sections:
      return "too many sections";
    case CacheEntryProblem::section_too_large:
      return "section too large";
    case CacheEntryProblem::bad_section_name:
      return "bad section name";
    case CacheEntryProblem::trailing_bytes:
      return "trailing bytes";
    case CacheEntryProblem::checksum_mismatch:
      return "checksum mismatch";
    case CacheEntryProblem::key_mismatch:
      return "key mismatch";
  }
  return "unknown problem";
}

std::string CacheEntryParse::message() const {
  std::string out(cache_entry_problem_name(problem));
  if (!detail.empty()) {
    out += ": " + detail;
  }
  return out;
}

CacheEntryParse parse_cache_entry(std::span<const std::byte> bytes, const EntryKey* expected) {
  CacheEntryParse result;
  if (bytes.size() < kMagic.size() + sizeof(std::uint32_t) + kChecksumBytes) {
    return fail(std::move(result), CacheEntryProblem::too_short, fmt::format("{} bytes", bytes.size()));
  }
  if (std::memcmp(bytes.data(), kMagic.data(), kMagic.size()) != 0) {
    return fail(std::move(result), CacheEntryProblem::bad_magic, "the file does not start with MTRLJITC");
  }
  // The checksum is the last 8 bytes; the body is parsed without them, so no length can reach it.
  const std::span<const std::byte> body = bytes.first(bytes.size() - kChecksumBytes);
  Cursor cursor(body.subspan(kMagic.size()));
  const auto version = cursor.read_int<std::uint32_t>();
  if (*version != kCacheFormatVersion) {
    return fail(std::move(result), CacheEntryProblem::unsupported_version,
                fmt::format("version {}, this build reads {}", *version, kCacheFormatVersion));
  }
  for (const auto& [name, member] : kKeyFields) {
    const auto length = cursor.read_int<std::uint32_t>();
    if (!length) {
      return fail(std::move(result), CacheEntryProblem::truncated, fmt::format("key field {} length", name));
    }
    if (*length > kCacheMaxKeyField) {
      return fail(std::move(result), CacheEntryProblem::field_too_long,
                  fmt::format("key field {} is {} bytes, limit {}", name, *length, kCacheMaxKeyField));
    }
    auto value = cursor.read_bytes(*length);
    if (!value) {
      return fail(std::move(result), CacheEntryProblem::truncated,
                  fmt::format("key field {} needs {} bytes, {} remain", name, *length, cursor.remaining()));
    }
    result.key.*member = std::move(*value);
  }
  const auto count = cursor.read_int<std::uint32_t>();
  if (!count) {
    return fail(std::move(result), CacheEntryProblem::truncated, "section count");
  }
  if (*count > kCacheMaxSections) {
    return fail(std::move(result), CacheEntryProblem::too_many_sections,
                fmt::format("{} sections, limit {}", *count, kCacheMaxSections));
  }
  std::set<std::string> seen;
  for (std::uint32_t i = 0; i < *count; ++i) {
    const auto name_length = cursor.read_int<std::uint32_t>();
    if (!name_length) {
      return fail(std::move(result), CacheEntryProblem::truncated, fmt::format("section {} name length", i));
    }
    if (*name_length > kCacheMaxSectionName) {
      return fail(std::move(result), CacheEntryProblem::field_too_long,
                  fmt::format("section {} name is {} bytes, limit {}", i, *name_length, kCacheMaxSectionName));
    }
    auto name = cursor.read_bytes(*name_length);
    if (!name) {
      return fail(std::move(result), CacheEntryProblem::truncated, fmt::format("section {} name", i));
    }
    if (name->empty() || !seen.insert(*name).second) {
      return fail(std::move(result), CacheEntryProblem::bad_section_name,
                  fmt::format("section {} name '{}' is empty or repeated", i, *name));
    }
    const auto size = cursor.read_int<std::uint64_t>();
    if (!size) {
      return fail(std::move(result), CacheEntryProblem::truncated, fmt::format("section '{}' size", *name));
    }
    if (*size > kCacheMaxSectionBytes) {
      return fail(std::move(result), CacheEntryProblem::section_too_large,
                  fmt::format("section '{}' is {} bytes, limit {}", *name, *size, kCacheMaxSectionBytes));
    }
    auto data = cursor.read_bytes(*size);
    if (!data) {
      return fail(std::move(result), CacheEntryProblem::truncated,
                  fmt::format("section '{}' needs {} bytes, {} remain", *name, *size, cursor.remaining()));
    }
    result.sections.emplace_back(std::move(*name), std::move(*data));
  }
  if (cursor.remaining() != 0) {
    return fail(std::move(result), CacheEntryProblem::trailing_bytes,
                fmt::format("{} bytes after the last section", cursor.remaining()));
  }
  const std::uint64_t stored = get_int<std::uint64_t>(bytes.data() + body.size());
  const std::uint64_t computed = checksum_of(body);
  if (stored != computed) {
    return fail(std::move(result), CacheEntryProblem::checksum_mismatch,
                fmt::format("stored {:#018x}, computed {:#018x}", stored, computed));
  }
  if (expected != nullptr) {
    const EntryKey want = expected->stored();
    for (const auto& [name, member] : kKeyFields) {
      if (result.key.*member != want.*member) {
        return fail(std::move(result), CacheEntryProblem::key_mismatch,
                    fmt::format("stored {} '{}', requested '{}'", name, result.key.*member, want.*member));
      }
    }
  }
  return result;
}

std::string cache_sections_problem(const EntryKey& unstored, const CacheSections& sections) {
  const EntryKey key = unstored.stored();
  for (const auto& [name, member] : kKeyFields) {
    if ((key.*member).size() > kCacheMaxKeyField) {
      return fmt::format("key field {} is {} bytes, limit {}", name, (key.*member).size(), kCacheMaxKeyField);
    }
  }
  if (sections.size() > kCacheMaxSections) {
    return fmt::format("{} sections, limit {}", sections.size(), kCacheMaxSections);
  }
  std::set<std::string> seen;
  std::uint64_t total = 0;
  for (const auto& [name, data] : sections) {
    if (name.empty() || name.size() > kCacheMaxSectionName || !seen.insert(name).second) {
      return fmt::format("section name '{}' is empty, longer than {} bytes or repeated", name, kCacheMaxSectionName);
    }
    if (data.size() > kCacheMaxSectionBytes) {
      return fmt::format("section '{}' is {} bytes, limit {}", name, data.size(), kCacheMaxSectionBytes);
    }
    total += data.size() + name.size() + 12;
  }
  if (total > kCacheMaxEntryBytes / 2) {
    return fmt::format("sections total {} bytes, limit {}", total, kCacheMaxEntryBytes / 2);
  }
  return {};
}

std::string encode_cache_entry(const EntryKey& unstored, const CacheSections& sections) {
  const EntryKey key = unstored.stored();
  std::string out(kMagic.data(), kMagic.size());
  put_int<std::uint32_t>(out, kCacheFormatVersion);
  for (const auto& [name, member] : kKeyFields) {
    put_int<std::uint32_t>(out, static_cast<std::uint32_t>((key.*member).size()));
    out += key.*member;
  }
  put_int<std::uint32_t>(out, static_cast<std::uint32_t>(sections.size()));
  for (const auto& [name, data] : sections) {
    put_int<std::uint32_t>(out, static_cast<std::uint32_t>(name.size()));
    out += name;
    put_int<std::uint64_t>(out, data.size());
    out += data;
  }
  put_int<std::uint64_t>(out, checksum_of(std::as_bytes(std::span(out.data(), out.size()))));
  return out;
}

}  // namespace metrale
