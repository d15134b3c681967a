// jit/bundle_signature.cpp: bundle.sig, written and checked, and the Ed25519 key files
// (bundle_signature.hpp). Every file here is read as a regular file of bounded size (a FIFO or a
// device is refused, never waited on).
#include "jit/bundle_signature.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sodium.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <sstream>
#include <vector>

#include "jit/read_back_file.hpp"
#include "metrale/error.hpp"

namespace metrale {

namespace {

constexpr std::string_view kSignatureHeader = "metrale-jit bundle signature 1";
constexpr std::string_view kPublicHeader = "metrale-jit ed25519 public key";
constexpr std::string_view kSecretHeader = "metrale-jit ed25519 secret key";
constexpr std::size_t kSmallFileLimit = std::size_t{1} << 20;  // key and signature files
constexpr std::size_t kEntryFileLimit = std::size_t{1} << 31;  // what sign_bundle hashes

void require_sodium() {
  if (sodium_init() < 0) {
    throw Error("libsodium could not be initialised");
  }
}

std::string to_hex(const unsigned char* bytes, std::size_t size) {
  std::string hex(2 * size + 1, '\0');
  sodium_bin2hex(hex.data(), hex.size(), bytes, size);
  hex.pop_back();
  return hex;
}

template <std::size_t N>
bool from_hex(std::string_view hex, std::array<unsigned char, N>& out) {
  std::size_t decoded = 0;
  return hex.size() == 2 * N &&
         sodium_hex2bin(out.data(), N, hex.data(), hex.size(), nullptr, &decoded, nullptr) == 0 && decoded == N;
}

std::string blake2b_hex(std::string_view bytes) {
  unsigned char hash[crypto_generichash_BYTES];
  crypto_generichash(hash, sizeof hash, reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), nullptr, 0);
  return to_hex(hash, sizeof hash);
}

struct FileRead {
  bool missing = false;
  std::string bytes;
  mode_t mode = 0;
  std::string problem;  // "" when read
};

// A regular file of at most `limit` bytes by the library's read-back rules (jit/read_back_file.hpp:
// no link followed, no FIFO or device opened, the size judged before reading).
FileRead read_regular_file(const std::filesystem::path& path, std::size_t limit) {
  const ReadBackFile file = read_back_file(path, ReadBackRules{limit, std::nullopt, std::nullopt});
  FileRead out;
  out.missing = file.rule == ReadBackRule::missing;
  out.problem = file.ok() ? std::string() : file.message;
  out.mode = file.info.st_mode;
  out.bytes = file.bytes;
  return out;
}

// The hex key of a key file: its header line, then the key's line.
template <std::size_t N>
std::array<unsigned char, N> read_key_file(const std::filesystem::path& path, std::string_view header, bool secret) {
  const FileRead read = read_regular_file(path, kSmallFileLimit);
  if (!read.problem.empty()) {
    throw ConfigError(
        fmt::format("{}: cannot read the {} key: {}", path.string(), secret ? "secret" : "public", read.problem));
  }
  if (secret && (read.mode & 077) != 0) {
    throw ConfigError(fmt::format("{} has mode {:04o}: a secret key must be readable by its owner only (chmod 600)",
                                  path.string(), read.mode & 07777));
  }
  std::istringstream lines(read.bytes);
  std::string first;
  std::string second;
  std::getline(lines, first);
  std::getline(lines, second);
  std::array<unsigned char, N> key{};
  if (first != header || !from_hex(second, key)) {
    throw ConfigError(fmt::format("{} is not a {} key file: its first line must be '{}' and its second {} hex digits",
                                  path.string(), secret ? "secret" : "public", header, 2 * N));
  }
  return key;
}

void write_new_file(const std::filesystem::path& path, const std::string& text, mode_t mode) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
  if (fd < 0) {
    throw Error(fmt::format("cannot create {}: {}", path.string(), std::strerror(errno)));
  }
  const bool whole = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  const bool closed = ::close(fd) == 0;
  if (!whole || !closed) {
    ::unlink(path.c_str());
    throw Error(fmt::format("cannot write {}", path.string()));
  }
}

}  // namespace

BundlePublicKey read_bundle_public_key(const std::filesystem::path& path) {
  require_sodium();
  BundlePublicKey key;
  key.bytes = read_key_file<crypto_sign_PUBLICKEYBYTES>(path, kPublicHeader, false);
  key.path = path.string();
  return key;
}

BundleSecretKey read_bundle_secret_key(const std::filesystem::path& path) {
  require_sodium();
  BundleSecretKey key;
  key.bytes = read_key_file<crypto_sign_SECRETKEYBYTES>(path, kSecretHeader, true);
  return key;
}

void write_bundle_key_pair(const std::string& prefix) {
  require_sodium();
  std::array<unsigned char, crypto_sign_PUBLICKEYBYTES> public_key{};
  std::array<unsigned char, crypto_sign_SECRETKEYBYTES> secret_key{};
  crypto_sign_keypair(public_key.data(), secret_key.data());
  const std::filesystem::path secret_path = prefix + ".key";
  const std::filesystem::path public_path = prefix + ".pub";
  if (std::filesystem::exists(public_path)) {
    throw Error(fmt::format("{} exists: a key pair is never overwritten", public_path.string()));
  }
  write_new_file(secret_path, fmt::format("{}\n{}\n", kSecretHeader, to_hex(secret_key.data(), secret_key.size())),
                 0600);
  sodium_memzero(secret_key.data(), secret_key.size());
  write_new_file(public_path, fmt::format("{}\n{}\n", kPublicHeader, to_hex(public_key.data(), public_key.size())),
                 0644);
}

std::string BundleSignature::file_problem(const std::string& name, const std::string* bytes) const {
  const auto found = file_hashes_.find(name);
  if (found == file_hashes_.end()) {
    return fmt::format("its file {} is not one the signature covers", name);
  }
  if (blake2b_hex(bytes != nullptr ? std::string_view(*bytes) : std::string_view()) != found->second) {
    return fmt::format("its file {} is not the signed one (BLAKE2b differs): it was changed after signing", name);
  }
  return {};
}

std::string BundleSignature::entry_problem(const BundleEntry& entry, const CompiledEntry& loaded) const {
  if (!entry.cubin_file.empty()) {
    if (std::string problem = file_problem(entry.cubin_file, loaded.cubin.get()); !problem.empty()) {
      return problem;
    }
  }
  if (!entry.ptx_file.empty()) {
    return file_problem(entry.ptx_file, loaded.ptx.get());
  }
  return {};
}

bool bundle_has_signature(const std::filesystem::path& dir) {
  struct stat info {};
  return ::lstat((dir / kBundleSignatureName).c_str(), &info) == 0;
}

BundleSignatureCheck check_bundle_signature(const std::filesystem::path& dir, std::string_view manifest_text,
                                            const BundlePublicKey& key) {
  require_sodium();
  const std::filesystem::path path = dir / kBundleSignatureName;
  auto bad = [&](std::string why) {
    return BundleSignatureCheck{BundleSignatureStatus::kBad, fmt::format("{}: {}", path.string(), why), nullptr};
  };
  const FileRead read = read_regular_file(path, kSmallFileLimit);
  if (read.missing) {
    return {BundleSignatureStatus::kUnsigned,
            fmt::format("{} is unsigned (no {}) and a public key ({}) is configured: only signed bundles are used",
                        dir.string(), kBundleSignatureName, key.path),
            nullptr};
  }
  if (!read.problem.empty()) {
    return bad(read.problem);
  }
  const std::size_t last = read.bytes.rfind("\nsignature ");
  if (last == std::string::npos) {
    return bad("it has no signature line");
  }
  const std::string_view signed_part = std::string_view(read.bytes).substr(0, last + 1);
  std::string_view signature_hex = std::string_view(read.bytes).substr(last + 1 + std::strlen("signature "));
  if (signature_hex.ends_with('\n')) {
    signature_hex.remove_suffix(1);
  }
  std::array<unsigned char, crypto_sign_BYTES> signature{};
  if (!from_hex(signature_hex, signature)) {
    return bad(fmt::format("its signature is not {} hex digits", 2 * crypto_sign_BYTES));
  }
  if (crypto_sign_verify_detached(signature.data(), reinterpret_cast<const unsigned char*>(signed_part.data()),
                                  signed_part.size(), key.bytes.data()) != 0) {
    return bad(
        fmt::format("the signature does not hold under the public key {} (signed with another key, or "
                    "edited)",
                    key.path));
  }
  // The signature holds: what it says can be believed.
  std::istringstream lines{std::string(signed_part)};
  std::string line;
  std::getline(lines, line);
  if (line != kSignatureHeader) {
    return bad(fmt::format("its first line is not '{}'", kSignatureHeader));
  }
  std::map<std::string, std::string, std::less<>> hashes;
  bool manifest_seen = false;
  while (std::getline(lines, line)) {
    const std::size_t space = line.find(' ');
    const std::size_t last_space = line.rfind(' ');
    const std::string kind = line.substr(0, space);
    const std::string hash = last_space == std::string::npos ? std::string() : line.substr(last_space + 1);
    if (kind == "manifest" && space == last_space && space != std::string::npos) {
      if (hash != blake2b_hex(manifest_text)) {
        return bad(fmt::format("{} is not the signed manifest (BLAKE2b differs): it was changed after signing",
                               (dir / kBundleManifestName).string()));
      }
      manifest_seen = true;
    } else if (kind == "file" && space != std::string::npos && last_space > space + 1) {
      hashes.emplace(line.substr(space + 1, last_space - space - 1), hash);  // a name may hold spaces
    } else {
      return bad(fmt::format("a line it cannot read: '{}'", line));
    }
  }
  if (!manifest_seen) {
    return bad("it names no manifest");
  }
  return {BundleSignatureStatus::kGood, {}, std::make_shared<const BundleSignature>(std::move(hashes))};
}

void sign_bundle(const std::filesystem::path& dir, const BundleSecretKey& key) {
  require_sodium();
  const std::filesystem::path manifest_path = dir / kBundleManifestName;
  const FileRead manifest = read_regular_file(manifest_path, kSmallFileLimit * 64);
  if (!manifest.problem.empty()) {
    throw Error(fmt::format("cannot sign {}: {}", dir.string(), manifest.problem));
  }
  std::string text = fmt::format("{}\nmanifest {}\n", kSignatureHeader, blake2b_hex(manifest.bytes));
  for (const BundleEntry& entry : manifest_from_json(manifest.bytes, manifest_path.string()).entries) {
    for (const std::string* name : {&entry.cubin_file, &entry.ptx_file}) {
      if (name->empty()) {
        continue;
      }
      const FileRead file = read_regular_file(dir / *name, kEntryFileLimit);
      if (!file.problem.empty()) {
        throw Error(fmt::format("cannot sign {}: {}", dir.string(), file.problem));
      }
      text += fmt::format("file {} {}\n", *name, blake2b_hex(file.bytes));
    }
  }
  std::array<unsigned char, crypto_sign_BYTES> signature{};
  crypto_sign_detached(signature.data(), nullptr, reinterpret_cast<const unsigned char*>(text.data()), text.size(),
                       key.bytes.data());
  text += fmt::format("signature {}\n", to_hex(signature.data(), signature.size()));
  const std::filesystem::path path = dir / kBundleSignatureName;
  const std::filesystem::path temp = dir / ".bundle.sig.new";
  std::error_code ignored;
  std::filesystem::remove(temp, ignored);
  write_new_file(temp, text, 0644);
  if (::rename(temp.c_str(), path.c_str()) != 0) {
    const int error = errno;
    ::unlink(temp.c_str());
    throw Error(fmt::format("cannot write {}: {}", path.string(), std::strerror(error)));
  }
}

}  // namespace metrale
