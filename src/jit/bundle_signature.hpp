// jit/bundle_signature.hpp: Ed25519 signatures of ahead-of-time bundles (libsodium), and the key
// files they are made and checked with.
// A signed bundle holds bundle.sig beside bundle.json:
//     metrale-jit bundle signature 1
//     manifest <BLAKE2b-256 of bundle.json, hex>
//     file <name> <BLAKE2b-256 of the file, hex>        (one line per file the manifest names)
//     signature <Ed25519 signature of every line above, newlines included, hex>
// Key files are text, a header line and the key in hex on the next:
//     metrale-jit ed25519 public key\n<64 hex digits>\n
//     metrale-jit ed25519 secret key\n<128 hex digits>\n   (libsodium's secret key: seed and public key)
// Invariants: a bundle is trusted by signature only when a public key is configured
// (RuntimeOptions::bundle_public_key, METRALE_BUNDLE_PUBKEY); then an unsigned bundle, a signature
// that does not hold, a manifest other than the signed one, or an entry file whose bytes are not
// the signed ones is refused, naming the path and the rule. File hashes are cryptographic (the
// manifest's XXH3 checksums catch accidents, not forgers). A secret key file readable or writable
// by group or others is refused, as ssh refuses an unprotected private key.
#pragma once

#include <array>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "jit/bundle.hpp"

namespace metrale {

inline constexpr const char* kBundleSignatureName = "bundle.sig";

struct BundlePublicKey {
  std::array<unsigned char, 32> bytes{};
  std::string path;  // the file it was read from, for messages
};

struct BundleSecretKey {
  std::array<unsigned char, 64> bytes{};
};

// Read a key file; ConfigError naming the file and what is wrong (missing, not a key file, the
// secret key's mode).
BundlePublicKey read_bundle_public_key(const std::filesystem::path& path);
BundleSecretKey read_bundle_secret_key(const std::filesystem::path& path);
// Writes PREFIX.key (mode 0600) and PREFIX.pub; never replaces an existing file. Throws Error.
void write_bundle_key_pair(const std::string& prefix);

// What a signature that held vouches for: the BLAKE2b-256 of each file the manifest names.
class BundleSignature {
 public:
  explicit BundleSignature(std::map<std::string, std::string, std::less<>> file_hashes)
      : file_hashes_(std::move(file_hashes)) {}
  // Why an entry's loaded bytes (from bundle_entry_problem) are not the signed ones ("" when
  // they are).
  [[nodiscard]] std::string entry_problem(const BundleEntry& entry, const CompiledEntry& loaded) const;

 private:
  [[nodiscard]] std::string file_problem(const std::string& name, const std::string* bytes) const;
  std::map<std::string, std::string, std::less<>> file_hashes_;
};

enum class BundleSignatureStatus { kUnsigned, kGood, kBad };

struct BundleSignatureCheck {
  BundleSignatureStatus status = BundleSignatureStatus::kBad;
  std::string problem;                               // for kUnsigned and kBad
  std::shared_ptr<const BundleSignature> signature;  // for kGood
};

// Whether DIR's bundle.sig holds under `key` for the manifest text read from DIR/bundle.json.
BundleSignatureCheck check_bundle_signature(const std::filesystem::path& dir, std::string_view manifest_text,
                                            const BundlePublicKey& key);
// Whether DIR holds a bundle.sig (signed, checked or not).
bool bundle_has_signature(const std::filesystem::path& dir);

// Signs DIR's bundle: writes bundle.sig over bundle.json and every file it names. Throws Error.
void sign_bundle(const std::filesystem::path& dir, const BundleSecretKey& key);

}  // namespace metrale
