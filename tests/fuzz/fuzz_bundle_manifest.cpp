// fuzz_bundle_manifest.cpp: a hostile bundle manifest (src/jit/bundle.hpp) never crashes the
// parser, an accepted one re-serialises to a manifest that parses to the same JSON, and its
// entries' files are judged by the read-back rules (src/jit/read_back_file.hpp) without hanging
// or reading without bound: the entries are checked (their key and entry checksum forged, so
// the file reads are reached) against a folder of odd files: a FIFO, a link to /dev/zero, a
// link out of the folder, a directory, a sparse file past the limit, a small regular file.
#include <sys/stat.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "jit/bundle.hpp"
#include "metrale/error.hpp"

namespace {

std::filesystem::path odd_folder() {
  static const std::filesystem::path dir = [] {
    std::string pattern = (std::filesystem::temp_directory_path() / "metrale-fuzz-bundle-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) {
      std::abort();
    }
    const std::filesystem::path made(pattern);
    ::mkfifo((made / "fifo.cubin").c_str(), 0600);
    std::filesystem::create_symlink("/dev/zero", made / "zero.cubin");
    std::filesystem::create_symlink(std::filesystem::temp_directory_path(), made / "out.cubin");
    std::filesystem::create_directory(made / "dir.cubin");
    std::ofstream(made / "big.cubin") << "x";
    std::filesystem::resize_file(made / "big.cubin", metrale::kBundleMaxFileBytes + 1);
    std::ofstream(made / "ok.cubin") << "\x7f"
                                        "ELF\x02";
    std::ofstream(made / "ok.ptx") << "// ptx";
    std::filesystem::create_symlink("ok.ptx", made / "in.ptx");
    return made;
  }();
  return dir;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  metrale::BundleManifest manifest;
  try {
    manifest = metrale::manifest_from_json(text, "fuzz.json");
  } catch (const metrale::ConfigError&) {
    return 0;
  }
  const std::string again = metrale::manifest_to_json(manifest);
  if (metrale::manifest_to_json(metrale::manifest_from_json(again, "again.json")) != again) {
    std::abort();
  }
  std::size_t checked = 0;
  for (metrale::BundleEntry& entry : manifest.entries) {
    if (++checked > 8) {
      break;
    }
    entry.key = entry.fields.bundle_digest();
    entry.entry_xxh3 = entry.entry_checksum();
    (void)metrale::bundle_entry_problem(odd_folder(), entry);
  }
  return 0;
}
