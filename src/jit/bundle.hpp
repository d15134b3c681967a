// bundle.hpp (private): ahead-of-time kernel bundles. A bundle is a directory holding
// bundle.json (the manifest a person can read) and, per variant, its CUBIN and PTX files.
// The registry looks in bundles after memory and before the disk cache and NVRTC.
// The bundle key is the variant's key without the compiler: kernel, params, arch, name
// expression, the source digest and the options as NVRTC would get them without the toolkit's
// include path. A CUBIN is machine code for its arch whichever NVRTC built it, so a runtime
// without NVRTC can still check that an entry is what it would compile; the builder's NVRTC is
// recorded for information only.
// Invariants: an entry is used only if its manifest key equals the digest of its own fields,
// its entry checksum holds (so an edited lowered name cannot pick a sibling kernel of the
// same image),
// and its key is the one the runtime computes, its arch is the one asked for (and, for a CUBIN, the
// arch in the image's ELF header), and every file's XXH3-64 matches; anything else is
// skipped with one warning naming the bundle and the entry, never loaded. Trust is by
// content: a bundle may be read-only and owned by anyone. With a public key configured, trust is
// by signature too (bundle_signature.hpp): an unsigned or wrongly signed bundle is refused whole,
// an entry whose files are not the signed ones is skipped.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "jit/compiled_entry.hpp"
#include "jit/entry_key.hpp"

namespace metrale {

inline constexpr const char* kBundleManifestName = "bundle.json";
inline constexpr int kBundleFormatVersion = 1;
// The largest manifest and image file read. A manifest is a few KB per entry and a CUBIN a few
// MB; the limits are far past any real bundle and keep a planted file (or a link to /dev/zero)
// from being read into memory. Files past them are refused, naming the path and the rule.
inline constexpr std::uint64_t kBundleMaxManifestBytes = 64ull << 20;
inline constexpr std::uint64_t kBundleMaxFileBytes = 512ull << 20;

struct BundleEntry {
  EntryKey fields;  // no NVRTC version; options: nvrtc_options(arch, "", extra) joined
  std::string key;  // fields.bundle_digest() when written
  std::string lowered_name;
  std::string built_by_nvrtc;          // information only
  std::string cubin_file, cubin_xxh3;  // relative to the bundle; empty for a PTX-only arch
  std::string ptx_file, ptx_xxh3;
  // Each file's size, checked before it is read (absent in manifests written before sizes were
  // recorded: then only the limit applies). Not in entry_xxh3 (older manifests still verify): a
  // wrong size refuses the entry, it never admits one, as the file's checksum still decides.
  std::optional<std::uint64_t> cubin_bytes, ptx_bytes;
  std::optional<KernelResources> resources;
  std::string entry_xxh3;  // over the key, lowered name, file names and checksums

  // What entry_xxh3 must be. Pure.
  [[nodiscard]] std::string entry_checksum() const;
  // "ssm_ba_gates_hopper b256l64g8 sm_90"
  [[nodiscard]] std::string label() const;
};

struct BundleManifest {
  std::string library;  // "metrale-jit 0.1.0"
  std::vector<BundleEntry> entries;
};

// Pure (de)serialisation. parse throws ConfigError naming the file and what is wrong.
std::string manifest_to_json(const BundleManifest& manifest);
BundleManifest manifest_from_json(const std::string& text, const std::string& where);

// XXH3-64 as 16 hex digits. Pure.
std::string bundle_checksum(std::string_view bytes);
// The "sm_XY" an ELF CUBIN is built for, from its header; nullopt when not an ELF CUBIN. Pure.
std::optional<std::string> cubin_elf_arch(std::string_view bytes);

// DIR/bundle.json read by the read-back rules (jit/read_back_file.hpp: a regular file, at most
// kBundleMaxManifestBytes, a link only into DIR) and parsed; ConfigError naming the path and the
// rule otherwise.
BundleManifest read_bundle_manifest(const std::filesystem::path& dir);
// The manifest's bytes by the same rules (what a signature is checked over); ConfigError as above.
std::string read_bundle_manifest_text(const std::filesystem::path& dir);

// Why one entry of a bundle cannot be used ("" when it can): manifest key, files, checksums
// and the CUBIN's arch. Reads the entry's files under `dir` by the read-back rules: a regular file
// (a link only into `dir`), of the manifest's size, at most kBundleMaxFileBytes.
std::string bundle_entry_problem(const std::filesystem::path& dir, const BundleEntry& entry,
                                 CompiledEntry* loaded = nullptr);

// Writes DIR/bundle.json and the entry files (names derived from the label), replacing a
// manifest already there. Throws Error naming the path on failure.
struct BundleImage {
  BundleEntry entry;  // fields, lowered name, nvrtc and resources filled by the caller
  std::shared_ptr<const std::string> cubin, ptx;
};
void write_bundle(const std::filesystem::path& dir, const std::vector<BundleImage>& images);

// The bundles a process reads. Thread-safe after construction.
struct BundlePublicKey;
class BundleSignature;

class BundleSet {
 public:
  // Opens each directory's manifest; a missing or unreadable one is a warning, not an error. With
  // `key`, a bundle whose signature does not hold under it is refused (a warning, refusals()).
  explicit BundleSet(const std::vector<std::filesystem::path>& dirs,
                     const std::shared_ptr<const BundlePublicKey>& key = nullptr);
  // METRALE_BUNDLE_DIR (':'-separated) of the process, opened once, signatures checked under
  // METRALE_BUNDLE_PUBKEY when set (ConfigError when that file is no public key); null when unset.
  static std::shared_ptr<const BundleSet> from_environment();
  // The public key METRALE_BUNDLE_PUBKEY names in `value` (null for none or an empty value).
  static std::shared_ptr<const BundlePublicKey> public_key_from(const std::optional<std::string>& value);
  // Each bundle refused whole, with its path and the rule ("... is unsigned and a public key ...").
  [[nodiscard]] const std::vector<std::string>& refusals() const { return refusals_; }
  // Splits a ':'-separated list, dropping empty parts. Pure.
  static std::vector<std::filesystem::path> split_dirs(std::string_view list);

  [[nodiscard]] bool empty() const { return entries_.empty(); }
  [[nodiscard]] std::size_t entry_count() const { return entries_.size(); }
  // Whether any entry is for `arch` ("sm_90").
  [[nodiscard]] bool has_arch(std::string_view arch) const;

  // The entry for this variant and arch when a bundle holds a valid one whose key is `key`;
  // otherwise nullopt, with one warning per bad entry naming it.
  [[nodiscard]] std::optional<CompiledEntry> find(const EntryKey& fields) const;

 private:
  struct Located {
    std::filesystem::path dir;
    BundleEntry entry;
    std::shared_ptr<const BundleSignature> signature;  // null: no key configured
  };
  void warn_once(const Located& located, const std::string& problem) const;

  std::multimap<std::string, Located> entries_;  // by kernel \x1f params \x1f arch
  std::vector<std::string> refusals_;
  mutable std::mutex warned_mutex_;
  mutable std::set<std::string> warned_;
};

}  // namespace metrale
