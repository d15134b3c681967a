// runtime/verdict_cache.hpp: verification verdicts on disk, beside the compiled entries (in the
// disk cache's directory, under verdicts/), so a warm open runs no check.
// A verdict is keyed by the device (name and UUID), the driver's version and the kernel's key
// (its bundle key's digest: source and includes, expression, options, arch; for a twin also the
// keys of the kernels it is checked against), so a new driver, another device or changed code
// checks again. Only verdicts of the kernel's code are stored (passed or failed by a comparison);
// a time limit, a fault or a skip is never stored.
// Invariants: a file is used only if it parses and its stored key equals the one asked for; an
// unreadable, corrupt or foreign file is ignored (one warning per process) and the kernel is
// checked again (its new verdict then replaces the file); a cache with no directory stores
// nothing; writes are atomic (temp file + rename), so readers never see half a verdict.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

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

// A verdict as text and back (JSON with the key's fields). Pure.
std::string verdict_to_text(const VerdictKey& key, const KernelVerdict& verdict);
// nullopt when the text does not parse or names another key.
std::optional<KernelVerdict> verdict_from_text(const VerdictKey& key, const std::string& text);

class VerdictCache {
 public:
  // No directory: nothing stored, nothing found.
  explicit VerdictCache(std::optional<std::filesystem::path> dir) : dir_(std::move(dir)) {}
  [[nodiscard]] const std::optional<std::filesystem::path>& dir() const { return dir_; }

  // The stored verdict (cached = true), or nullopt.
  [[nodiscard]] std::optional<KernelVerdict> load(const VerdictKey& key) const;
  // Stores a cacheable verdict; a failing write is one warning, never an error.
  void store(const VerdictKey& key, const KernelVerdict& verdict) const;

 private:
  std::optional<std::filesystem::path> dir_;
};

}  // namespace metrale
