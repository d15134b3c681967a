// entry_key.cpp: the entry key's digests, its stored form and its readable file name.
// The digest hashes each field as (u64 little-endian length, bytes), so field boundaries are
// unambiguous; the file name carries only a readable prefix, the digest is the identity.
#include "jit/entry_key.hpp"

#define XXH_INLINE_ALL
#include <fmt/format.h>
#include <xxhash.h>

#include <array>
#include <cstdint>

namespace metrale {

namespace {

// Each readable part is capped so the whole name stays far below NAME_MAX (255).
constexpr std::size_t kMaxNamePart = 48;

void append_length_prefixed(std::string& out, const std::string& field) {
  std::uint64_t length = field.size();
  for (int i = 0; i < 8; ++i) {
    out.push_back(static_cast<char>((length >> (8 * i)) & 0xFFu));
  }
  out += field;
}

bool is_name_char(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
}

}  // namespace

std::string sanitize_cache_name_part(const std::string& text, std::size_t max_length) {
  std::string out;
  out.reserve(std::min(text.size(), max_length));
  for (char c : text) {
    if (out.size() == max_length) {
      break;
    }
    out.push_back(is_name_char(c) ? c : '_');
  }
  if (out.empty()) {
    out.push_back('_');
  }
  if (out.front() == '.') {
    out.front() = '_';
  }
  return out;
}

std::string fields_digest(std::initializer_list<const std::string*> fields) {
  std::string buffer;
  for (const std::string* field : fields) {
    append_length_prefixed(buffer, *field);
  }
  const XXH128_hash_t hash = XXH3_128bits(buffer.data(), buffer.size());
  return hex_digest(hash.high64, hash.low64);
}

EntryKey EntryKey::stored() const {
  if (name_expression.empty()) {
    return *this;
  }
  EntryKey out = *this;
  out.options += " #name-expression=" + name_expression;
  out.name_expression.clear();
  return out;
}

std::string EntryKey::digest() const {
  if (!name_expression.empty()) {
    return stored().digest();
  }
  return fields_digest({&kernel, &params_tag, &arch, &nvrtc_version, &options, &source_digest});
}

std::string EntryKey::bundle_digest() const {
  return fields_digest({&kernel, &params_tag, &arch, &name_expression, &options, &source_digest});
}

std::string EntryKey::joined() const {
  // The unit separator never occurs in names, tags or options.
  static constexpr char kSeparator = '\x1f';
  return kernel + kSeparator + params_tag + kSeparator + arch + kSeparator + nvrtc_version + kSeparator + options +
         kSeparator + source_digest + kSeparator + name_expression;
}

std::string hex_digest(std::uint64_t high, std::uint64_t low) { return fmt::format("{:016x}{:016x}", high, low); }

std::string EntryKey::file_name() const {
  return fmt::format("{}.{}.{}.nvrtc{}.{}{}", sanitize_cache_name_part(kernel, kMaxNamePart),
                     sanitize_cache_name_part(params_tag, kMaxNamePart), sanitize_cache_name_part(arch, kMaxNamePart),
                     sanitize_cache_name_part(nvrtc_version, kMaxNamePart), digest().substr(0, 16), kCacheEntrySuffix);
}

}  // namespace metrale
