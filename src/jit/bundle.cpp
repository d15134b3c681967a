// bundle.cpp: a bundle's entry checks, the writer and the set a process reads (the manifest's
// JSON form: bundle_manifest.cpp).
#include "jit/bundle.hpp"

#define XXH_INLINE_ALL
#include <fmt/format.h>
#include <xxhash.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <fstream>

#include "ground/log.hpp"
#include "jit/bundle_signature.hpp"
#include "jit/read_back_file.hpp"
#include "metrale/error.hpp"

namespace metrale {
namespace {

void append_length_prefixed(std::string& out, const std::string& field) {
  const std::uint64_t length = field.size();
  for (int i = 0; i < 8; ++i) {
    out.push_back(static_cast<char>((length >> (8 * i)) & 0xFFu));
  }
  out += field;
}

// A bundle's file by the read-back rules: regular, a link only into the bundle, within `limit`
// and of the manifest's size when it records one.
ReadBackFile read_bundle_file(const std::filesystem::path& dir, const std::string& name, std::uint64_t limit,
                              std::optional<std::uint64_t> expected) {
  return read_back_file(dir / name, ReadBackRules{limit, expected, dir});
}

void write_file(const std::filesystem::path& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) {
    throw Error(fmt::format("cannot write {}", path.string()));
  }
}

std::string index_of(const std::string& kernel, const std::string& params, const std::string& arch) {
  return kernel + '\x1f' + params + '\x1f' + arch;
}

// A file name is a plain name inside the bundle: no separator, no "..", never hidden.
bool plain_file_name(const std::string& name) {
  return !name.empty() && name.front() != '.' && name.find('/') == std::string::npos;
}

std::string file_problem(const std::filesystem::path& dir, const std::string& name, const std::string& checksum,
                         std::optional<std::uint64_t> expected_bytes, std::string_view what, std::string* bytes_out) {
  if (!plain_file_name(name)) {
    return fmt::format("{} file name '{}' is not a plain file name", what, name);
  }
  ReadBackFile file = read_bundle_file(dir, name, kBundleMaxFileBytes, expected_bytes);
  if (!file.ok()) {
    return fmt::format("{} file: {}", what, file.message);
  }
  if (const std::string actual = bundle_checksum(file.bytes); actual != checksum) {
    return fmt::format("{} file {} has checksum {}, the manifest says {}", what, name, actual, checksum);
  }
  *bytes_out = std::move(file.bytes);
  return {};
}

}  // namespace

std::string BundleEntry::entry_checksum() const {
  std::string buffer;
  for (const std::string* field : {&key, &lowered_name, &cubin_file, &cubin_xxh3, &ptx_file, &ptx_xxh3}) {
    append_length_prefixed(buffer, *field);
  }
  return bundle_checksum(buffer);
}

std::string BundleEntry::label() const {
  return fmt::format("{} {} {}", fields.kernel, fields.params_tag, fields.arch);
}

std::string bundle_checksum(std::string_view bytes) {
  return fmt::format("{:016x}", XXH3_64bits(bytes.data(), bytes.size()));
}

std::optional<std::string> cubin_elf_arch(std::string_view bytes) {
  constexpr std::size_t kFlagsOffset = 48;  // e_flags in an ELF64 header
  if (bytes.size() < kFlagsOffset + 4 ||
      bytes.substr(0, 4) !=
          "\x7f"
          "ELF" ||
      bytes[4] != 2) {
    return std::nullopt;
  }
  std::uint32_t flags = 0;
  for (std::size_t i = 0; i < 4; ++i) {
    flags |= static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[kFlagsOffset + i])) << (8 * i);
  }
  // CUDA's ELF ABI version 8 (CUDA 12.8+) moved the SM number from bits 0-7 to bits 8-15.
  const auto abi_version = static_cast<unsigned char>(bytes[8]);
  const std::uint32_t sm = abi_version >= 8 ? (flags >> 8) & 0xFFu : flags & 0xFFu;
  return fmt::format("sm_{}", sm);
}

std::string read_bundle_manifest_text(const std::filesystem::path& dir) {
  const std::filesystem::path path = dir / kBundleManifestName;
  ReadBackFile file = read_bundle_file(dir, kBundleManifestName, kBundleMaxManifestBytes, std::nullopt);
  if (!file.ok()) {
    throw ConfigError(file.rule == ReadBackRule::missing
                          ? fmt::format("{} cannot be read: is {} a bundle?", path.string(), dir.string())
                          : fmt::format("bundle manifest: {}", file.message));
  }
  return std::move(file.bytes);
}

BundleManifest read_bundle_manifest(const std::filesystem::path& dir) {
  return manifest_from_json(read_bundle_manifest_text(dir), (dir / kBundleManifestName).string());
}

std::string bundle_entry_problem(const std::filesystem::path& dir, const BundleEntry& entry, CompiledEntry* loaded) {
  if (const std::string digest = entry.fields.bundle_digest(); digest != entry.key) {
    return fmt::format("its key {} is not the digest of its fields ({}): the manifest was edited", entry.key, digest);
  }
  if (const std::string checksum = entry.entry_checksum(); checksum != entry.entry_xxh3) {
    return fmt::format("its entry checksum {} is not {} (lowered name, file names or checksums edited)",
                       entry.entry_xxh3, checksum);
  }
  if (entry.cubin_file.empty() && entry.ptx_file.empty()) {
    return "it names neither a CUBIN nor a PTX file";
  }
  std::string cubin;
  std::string ptx;
  if (!entry.cubin_file.empty()) {
    if (std::string problem = file_problem(dir, entry.cubin_file, entry.cubin_xxh3, entry.cubin_bytes, "CUBIN", &cubin);
        !problem.empty()) {
      return problem;
    }
    const std::optional<std::string> arch = cubin_elf_arch(cubin);
    if (arch != entry.fields.arch) {
      return fmt::format("its CUBIN is built for {}, the manifest says {}", arch.value_or("no known arch"),
                         entry.fields.arch);
    }
  }
  if (!entry.ptx_file.empty()) {
    if (std::string problem = file_problem(dir, entry.ptx_file, entry.ptx_xxh3, entry.ptx_bytes, "PTX", &ptx);
        !problem.empty()) {
      return problem;
    }
  }
  if (loaded != nullptr) {
    loaded->ok = true;
    loaded->arch = entry.fields.arch;
    loaded->lowered_name = entry.lowered_name;
    loaded->cubin = std::make_shared<const std::string>(std::move(cubin));
    loaded->ptx = std::make_shared<const std::string>(std::move(ptx));
    loaded->resources = entry.resources;
  }
  return {};
}

void write_bundle(const std::filesystem::path& dir, const std::vector<BundleImage>& images) {
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error) {
    throw Error(fmt::format("cannot create {}: {}", dir.string(), error.message()));
  }
  BundleManifest manifest{"metrale-jit", {}};
  for (const BundleImage& image : images) {
    BundleEntry entry = image.entry;
    entry.key = entry.fields.bundle_digest();
    const std::string stem = fmt::format("{}.{}.{}.{}", entry.fields.kernel, entry.fields.params_tag, entry.fields.arch,
                                         entry.key.substr(0, 8));
    if (image.cubin && !image.cubin->empty()) {
      entry.cubin_file = stem + ".cubin";
      entry.cubin_xxh3 = bundle_checksum(*image.cubin);
      entry.cubin_bytes = image.cubin->size();
      write_file(dir / entry.cubin_file, *image.cubin);
    }
    if (image.ptx && !image.ptx->empty()) {
      entry.ptx_file = stem + ".ptx";
      entry.ptx_xxh3 = bundle_checksum(*image.ptx);
      entry.ptx_bytes = image.ptx->size();
      write_file(dir / entry.ptx_file, *image.ptx);
    }
    entry.entry_xxh3 = entry.entry_checksum();
    manifest.entries.push_back(std::move(entry));
  }
  std::filesystem::remove(dir / kBundleSignatureName, error);  // it signed the manifest replaced here
  write_file(dir / kBundleManifestName, manifest_to_json(manifest));
}

std::vector<std::filesystem::path> BundleSet::split_dirs(std::string_view list) {
  std::vector<std::filesystem::path> out;
  while (!list.empty()) {
    const std::size_t colon = list.find(':');
    const std::string_view part = list.substr(0, colon);
    if (!part.empty()) {
      out.emplace_back(std::string(part));
    }
    list = colon == std::string_view::npos ? std::string_view() : list.substr(colon + 1);
  }
  return out;
}

BundleSet::BundleSet(const std::vector<std::filesystem::path>& dirs,
                     const std::shared_ptr<const BundlePublicKey>& key) {
  for (const std::filesystem::path& dir : dirs) {
    std::string text;
    try {
      text = read_bundle_manifest_text(dir);
    } catch (const ConfigError& error) {
      logger().warn("bundle {} is skipped: {}", dir.string(), error.what());
      continue;
    }
    std::shared_ptr<const BundleSignature> signature;
    if (key) {
      BundleSignatureCheck checked = check_bundle_signature(dir, text, *key);
      if (checked.status != BundleSignatureStatus::kGood) {
        logger().warn("bundle {} is refused: {}", dir.string(), checked.problem);
        refusals_.push_back(std::move(checked.problem));
        continue;
      }
      signature = std::move(checked.signature);
    }
    try {
      for (BundleEntry& entry : manifest_from_json(text, (dir / kBundleManifestName).string()).entries) {
        const std::string index = index_of(entry.fields.kernel, entry.fields.params_tag, entry.fields.arch);
        entries_.emplace(index, Located{dir, std::move(entry), signature});
      }
    } catch (const ConfigError& error) {
      logger().warn("bundle {} is skipped: {}", dir.string(), error.what());
    }
  }
}

std::shared_ptr<const BundleSet> BundleSet::from_environment() {
  static const std::shared_ptr<const BundleSet> bundles = []() -> std::shared_ptr<const BundleSet> {
    const char* value = std::getenv("METRALE_BUNDLE_DIR");
    if (value == nullptr || *value == '\0') {
      return nullptr;
    }
    const char* key = std::getenv("METRALE_BUNDLE_PUBKEY");
    return std::make_shared<const BundleSet>(
        split_dirs(value), public_key_from(key != nullptr ? std::optional<std::string>(key) : std::nullopt));
  }();
  return bundles;
}

std::shared_ptr<const BundlePublicKey> BundleSet::public_key_from(const std::optional<std::string>& value) {
  if (!value || value->empty()) {
    return nullptr;
  }
  return std::make_shared<const BundlePublicKey>(read_bundle_public_key(*value));
}

bool BundleSet::has_arch(std::string_view arch) const {
  return std::any_of(entries_.begin(), entries_.end(),
                     [&](const auto& indexed) { return indexed.second.entry.fields.arch == arch; });
}

void BundleSet::warn_once(const Located& located, const std::string& problem) const {
  std::lock_guard lock(warned_mutex_);
  if (warned_.insert(located.dir.string() + '\x1f' + located.entry.key + '\x1f' + located.entry.label()).second) {
    logger().warn("bundle {}: entry {} is skipped: {}", located.dir.string(), located.entry.label(), problem);
  }
}

std::optional<CompiledEntry> BundleSet::find(const EntryKey& fields) const {
  const std::string wanted = fields.bundle_digest();
  auto [first, last] = entries_.equal_range(index_of(fields.kernel, fields.params_tag, fields.arch));
  for (auto it = first; it != last; ++it) {
    const Located& located = it->second;
    if (located.entry.fields.name_expression != fields.name_expression) {
      continue;  // another instantiation under the same kernel name: not this variant
    }
    if (located.entry.key != wanted) {
      const bool stale = located.entry.fields.source_digest != fields.source_digest;
      warn_once(located, fmt::format("its key {} is not this library's {} ({})", located.entry.key, wanted,
                                     stale ? "the template source differs" : "the compile options differ"));
      continue;
    }
    CompiledEntry entry;
    if (const std::string problem = bundle_entry_problem(located.dir, located.entry, &entry); !problem.empty()) {
      warn_once(located, problem);
      continue;
    }
    if (located.signature) {
      if (const std::string problem = located.signature->entry_problem(located.entry, entry); !problem.empty()) {
        warn_once(located, problem);
        continue;
      }
    }
    return entry;
  }
  return std::nullopt;
}

}  // namespace metrale
