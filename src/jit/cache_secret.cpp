// jit/cache_secret.cpp: the cache's secret key file and crypto_auth MACs (cache_secret.hpp).
#include "jit/cache_secret.hpp"

#include <fmt/format.h>
#include <sodium.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>

#include "jit/cache_file_io.hpp"

namespace metrale {

namespace {

static_assert(crypto_auth_KEYBYTES == 32, "CacheSecret holds a crypto_auth key");
constexpr std::size_t kHexBytes = 2 * crypto_auth_KEYBYTES;

std::string to_hex(const unsigned char* bytes, std::size_t size) {
  std::string hex(2 * size + 1, '\0');
  sodium_bin2hex(hex.data(), hex.size(), bytes, size);
  hex.pop_back();
  return hex;
}

// The key from a key file's text: 64 hex digits and an optional newline.
std::optional<CacheSecret> parse_secret(std::string_view text) {
  if (text.ends_with('\n')) {
    text.remove_suffix(1);
  }
  CacheSecret secret;
  std::size_t decoded = 0;
  if (text.size() != kHexBytes ||
      sodium_hex2bin(secret.bytes.data(), secret.bytes.size(), text.data(), text.size(), nullptr, &decoded, nullptr) !=
          0 ||
      decoded != secret.bytes.size()) {
    return std::nullopt;
  }
  return secret;
}

CacheSecretResult read_secret(const std::filesystem::path& path, bool& missing) {
  const CacheReadResult read = read_cache_file(path, ::geteuid());
  missing = read.status == CacheReadStatus::missing;
  if (missing) {
    return {std::nullopt, fmt::format("{} does not exist", path.string())};
  }
  if (read.status != CacheReadStatus::ok) {
    return {std::nullopt, read.message};
  }
  if ((read.info.st_mode & 077) != 0) {
    return {std::nullopt, fmt::format("{} has mode {:04o}: a secret key must be readable by its owner only (0600)",
                                      path.string(), read.info.st_mode & 07777)};
  }
  std::optional<CacheSecret> secret = parse_secret(read.bytes);
  if (!secret) {
    return {std::nullopt, fmt::format("{} is not a key (64 hex digits)", path.string())};
  }
  return {secret, {}};
}

}  // namespace

CacheSecretResult load_or_create_cache_secret(const std::filesystem::path& dir, std::string_view name) {
  if (sodium_init() < 0) {
    return {std::nullopt, "libsodium could not be initialised"};
  }
  const std::filesystem::path path = dir / name;
  bool missing = false;
  CacheSecretResult found = read_secret(path, missing);
  if (!missing) {
    return found;
  }
  CacheSecret fresh;
  randombytes_buf(fresh.bytes.data(), fresh.bytes.size());
  static std::atomic<unsigned> counter{0};
  const std::string temp = fmt::format(".{}.new.{}.{}", name, ::getpid(), counter.fetch_add(1));
  if (CacheIoResult written = write_file_atomically(dir, temp, to_hex(fresh.bytes.data(), fresh.bytes.size()) + "\n");
      !written.ok) {
    return {std::nullopt, written.message};
  }
  const std::filesystem::path temp_path = dir / temp;
  const int linked = ::link(temp_path.c_str(), path.c_str());
  const int link_error = errno;
  ::unlink(temp_path.c_str());
  if (linked != 0 && link_error != EEXIST) {
    return {std::nullopt, fmt::format("cannot create {}: {}", path.string(), errno_text(link_error))};
  }
  // Created, or another process won the race: its key is everyone's.
  return read_secret(path, missing);
}

std::string keyed_checksum(const CacheSecret& secret, std::string_view text) {
  unsigned char mac[crypto_auth_BYTES];
  crypto_auth(mac, reinterpret_cast<const unsigned char*>(text.data()), text.size(), secret.bytes.data());
  return to_hex(mac, sizeof mac);
}

bool keyed_checksum_matches(const CacheSecret& secret, std::string_view text, std::string_view hex) {
  unsigned char mac[crypto_auth_BYTES];
  std::size_t decoded = 0;
  if (hex.size() != 2 * sizeof mac ||
      sodium_hex2bin(mac, sizeof mac, hex.data(), hex.size(), nullptr, &decoded, nullptr) != 0 ||
      decoded != sizeof mac) {
    return false;
  }
  return crypto_auth_verify(mac, reinterpret_cast<const unsigned char*>(text.data()), text.size(),
                            secret.bytes.data()) == 0;
}

}  // namespace metrale
