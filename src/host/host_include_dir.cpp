// host/host_include_dir.cpp: the binary this code lives in (dl_iterate_phdr over the loaded
// objects: the one whose segments hold this function; the main program's name is empty, so
// /proc/self/exe), and the include folders beside it.
#include "host/host_include_dir.hpp"

#include <link.h>

#include <algorithm>
#include <cstdint>
#include <string>

namespace metrale::host {
namespace {

#ifdef METRALE_LIBDIR_TO_INCLUDEDIR
constexpr std::string_view kLibdirToInclude = METRALE_LIBDIR_TO_INCLUDEDIR;
#else
constexpr std::string_view kLibdirToInclude = "../include";
#endif

struct ObjectSearch {
  std::uintptr_t address = 0;
  bool found = false;
  std::string name;
};

int find_object(dl_phdr_info* info, std::size_t /*size*/, void* data) {
  auto* search = static_cast<ObjectSearch*>(data);
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& segment = info->dlpi_phdr[i];
    if (segment.p_type != PT_LOAD) {
      continue;
    }
    const std::uintptr_t start = info->dlpi_addr + segment.p_vaddr;
    if (search->address >= start && search->address < start + segment.p_memsz) {
      search->found = true;
      search->name = info->dlpi_name != nullptr ? info->dlpi_name : "";
      return 1;
    }
  }
  return 0;
}

}  // namespace

std::vector<std::filesystem::path> host_include_candidates(const std::filesystem::path& binary,
                                                           const std::filesystem::path& resolved,
                                                           std::string_view libdir_to_include) {
  std::vector<std::filesystem::path> out;
  for (const std::filesystem::path& file : {binary, resolved}) {
    if (file.empty()) {
      continue;
    }
    const std::filesystem::path dir = file.parent_path();
    for (const std::filesystem::path& candidate :
         {dir / "include", dir / std::filesystem::path(libdir_to_include), dir / ".." / "include"}) {
      std::filesystem::path normal = candidate.lexically_normal();
      if (std::find(out.begin(), out.end(), normal) == out.end()) {
        out.push_back(std::move(normal));
      }
    }
  }
  return out;
}

std::filesystem::path loaded_binary() {
  ObjectSearch search;
  search.address = reinterpret_cast<std::uintptr_t>(&find_object);
  dl_iterate_phdr(&find_object, &search);
  if (!search.found) {
    return {};
  }
  std::error_code error;
  if (search.name.empty()) {  // the main program
    std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", error);
    return error ? std::filesystem::path() : exe;
  }
  return std::filesystem::absolute(search.name, error);
}

std::vector<std::filesystem::path> host_jit_include_candidates(const EnvLookup& env) {
  std::vector<std::filesystem::path> out;
  if (const auto dir = env("METRALE_INCLUDE_DIR"); dir && !dir->empty()) {
    out.emplace_back(*dir);
  }
  const std::filesystem::path binary = loaded_binary();
  std::error_code error;
  const std::filesystem::path resolved = binary.empty() ? binary : std::filesystem::weakly_canonical(binary, error);
  for (std::filesystem::path& candidate :
       host_include_candidates(binary, error ? std::filesystem::path() : resolved, kLibdirToInclude)) {
    out.push_back(std::move(candidate));
  }
  return out;
}

std::optional<std::filesystem::path> host_jit_include_dir(const EnvLookup& env) {
  for (const std::filesystem::path& candidate : host_jit_include_candidates(env)) {
    std::error_code error;
    if (std::filesystem::is_regular_file(candidate / kPreludeHeader, error)) {
      return candidate;
    }
  }
  return std::nullopt;
}

}  // namespace metrale::host
