// runtime/verdict_cache.hpp: verification verdicts on disk, beside the compiled entries (in the
// disk cache's directory, under verdicts/), so a warm open runs no check.
// A verdict is keyed by the device (name and UUID), the driver's version and the kernel's key
// (its bundle key's digest: source and includes, expression, options, arch; for a twin also the
// keys of the kernels it is checked against), so a new driver, another device or changed code
// checks again. Only verdicts of the kernel's code are stored (passed or failed by a comparison);
// a time limit, a fault or a skip is never stored.
// Invariants: the verdicts folder is used only when the cache root and its chain are trusted
// (jit/cache_trust.hpp: no relative, foreign or group/other-writable folder); otherwise nothing is
// stored or read, with one warning. Every verdict carries a keyed checksum (MAC) under the
// cache's secret key (verdicts/key, 0600, jit/cache_secret.hpp), so a verdict edited or planted
// by anyone who lacks the key is refused (a warning naming the file) and the kernel checked again.
// A file is used only if it parses, its MAC holds and its stored key equals the one asked for; an
// unreadable, corrupt or foreign file is ignored (one warning per process) and the kernel is
// checked again (its new verdict then replaces the file); writes are atomic (temp file + rename),
// so readers never see half a verdict.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "jit/cache_secret.hpp"
#include "runtime/kernel_verification.hpp"

namespace metrale {

struct VerdictKey {
  std::string device;  // "NVIDIA H200"
  std::string uuid;
  std::string driver;      // "580.159.04"
  std::string kernel;      // for the file's name and people
  std::string params;      // KernelParams::tag()
  std::string kernel_key;  // the digest of what decides the kernel's code (and its references')

  // XXH3-128 over every field, length-prefixed. Pure.
  [[nodiscard]] std::string digest() const;
  // "<kernel>.<params>.<16 hex>.verdict", one safe path component. Pure.
  [[nodiscard]] std::string file_name() const;
};

// A verdict as text and back (JSON with the key's fields and "mac", the keyed checksum of the
// rest under `secret`). Pure.
std::string verdict_to_text(const VerdictKey& key, const KernelVerdict& verdict, const CacheSecret& secret);
// nullopt when the text does not parse, its MAC does not hold or it names another key; `problem`
// (when given) then says which.
std::optional<KernelVerdict> verdict_from_text(const VerdictKey& key, const std::string& text,
                                               const CacheSecret& secret, std::string* problem = nullptr);

class VerdictCache {
 public:
  // `dir`: the verdicts folder, a subfolder of a cache root (checked, created and its key made
  // on first use). No directory: nothing stored, nothing found.
  explicit VerdictCache(std::optional<std::filesystem::path> dir);
  [[nodiscard]] const std::optional<std::filesystem::path>& dir() const { return dir_; }

  // The stored verdict (cached = true), or nullopt.
  [[nodiscard]] std::optional<KernelVerdict> load(const VerdictKey& key) const;
  // Stores a cacheable verdict; a failing write is one warning, never an error.
  void store(const VerdictKey& key, const KernelVerdict& verdict) const;

 private:
  struct Folder;  // the trusted folder and its key, resolved once
  [[nodiscard]] const Folder& folder() const;

  std::optional<std::filesystem::path> dir_;
  std::shared_ptr<Folder> folder_;
};

}  // namespace metrale
