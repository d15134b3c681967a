// cache_stress: many processes on one disk-cache directory.
//   cache_stress run <parent dir> <processes> <iterations>
// makes an empty directory under <parent dir>, starts <processes> copies of itself at once
// (each blocks on a pipe until all exist), waits for them, then checks every process
// succeeded and the directory holds only valid entries and no temp files. Exit 0 on success.
//   cache_stress worker <dir> <id> <iterations> <start fd>
// stores and loads shared keys (same content from every process) and its own keys; exit 0 when
// every store succeeded and every load returned exactly what that key's writers store.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "jit/disk_cache.hpp"

namespace {

using metrale::CacheSections;
using metrale::DiskCache;
using metrale::EntryKey;

EntryKey key_named(const std::string& kernel) {
  return EntryKey{kernel, "b256l64g8", "sm_90", "13-0", "-std=c++17", "feedface", ""};
}

// Deterministic content per key name and size, so every writer of a key writes equal bytes.
CacheSections content_for(const std::string& name, std::size_t size) {
  std::string cubin(size, '\0');
  std::uint64_t state = std::hash<std::string>{}(name) | 1u;
  for (auto& c : cubin) {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    c = static_cast<char>(state & 0xFFu);
  }
  return {{"cubin", std::move(cubin)}, {"lowered_name", "_Z" + name}};
}

int worker(const std::filesystem::path& dir, int id, int iterations, int start_fd) {
  char byte = 0;
  while (::read(start_fd, &byte, 1) > 0) {
  }
  ::close(start_fd);
  DiskCache cache = DiskCache::open_at(dir);
  if (!cache.enabled()) {
    std::fprintf(stderr, "worker %d: cache disabled: %s\n", id, cache.disabled_reason().c_str());
    return 1;
  }
  int failures = 0;
  for (int i = 0; i < iterations; ++i) {
    const std::string shared = "shared" + std::to_string(i % 5);
    const std::string own = "own" + std::to_string(id) + "_" + std::to_string(i % 7);
    for (const std::string& name : {shared, own}) {
      const CacheSections sections = content_for(name, 2000 + 3000 * static_cast<std::size_t>(i % 5));
      const EntryKey key = key_named(name + "_" + std::to_string(i % 5));
      auto before = cache.load(key);
      if (before && *before != sections) {
        std::fprintf(stderr, "worker %d: %s loaded different bytes\n", id, name.c_str());
        ++failures;
      }
      if (!cache.store(key, sections)) {
        std::fprintf(stderr, "worker %d: store of %s failed\n", id, name.c_str());
        ++failures;
      }
      auto after = cache.load(key);
      if (!after || *after != sections) {
        std::fprintf(stderr, "worker %d: %s missing or different after store\n", id, name.c_str());
        ++failures;
      }
    }
  }
  const auto stats = cache.stats();
  if (stats.bad_entries != 0 || stats.write_failures != 0) {
    std::fprintf(stderr, "worker %d: %llu bad entries, %llu write failures\n", id,
                 static_cast<unsigned long long>(stats.bad_entries),
                 static_cast<unsigned long long>(stats.write_failures));
    ++failures;
  }
  return failures == 0 ? 0 : 1;
}

int run(const std::filesystem::path& parent, int processes, int iterations) {
  std::filesystem::create_directories(parent);
  std::string pattern = (parent / "stress-XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr) {
    std::perror("mkdtemp");
    return 1;
  }
  const std::filesystem::path dir = std::filesystem::path(pattern) / "cache";  // created by the workers
  int start[2];
  if (::pipe(start) != 0) {
    std::perror("pipe");
    return 1;
  }
  std::vector<pid_t> children;
  for (int id = 0; id < processes; ++id) {
    const pid_t child = ::fork();
    if (child == 0) {
      ::close(start[1]);
      const std::string id_text = std::to_string(id), iterations_text = std::to_string(iterations),
                        fd_text = std::to_string(start[0]), dir_text = dir.string();
      ::execl("/proc/self/exe", "cache_stress", "worker", dir_text.c_str(), id_text.c_str(), iterations_text.c_str(),
              fd_text.c_str(), static_cast<char*>(nullptr));
      std::perror("execl");
      ::_exit(127);
    }
    children.push_back(child);
  }
  ::close(start[0]);
  ::close(start[1]);  // every worker starts now
  int failed = 0;
  for (pid_t child : children) {
    int status = 0;
    ::waitpid(child, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      ++failed;
    }
  }
  DiskCache cache = DiskCache::open_at(dir);
  std::size_t entries = 0;
  for (const auto& checked : cache.verify()) {
    ++entries;
    if (!checked.ok) {
      std::fprintf(stderr, "invalid entry %s: %s\n", checked.path.c_str(), checked.problem.c_str());
      ++failed;
    }
  }
  std::size_t other_files = 0;
  for (const auto& file : std::filesystem::directory_iterator(dir)) {
    if (!file.path().filename().string().ends_with(".cubin") || file.path().filename().string().starts_with('.')) {
      std::fprintf(stderr, "leftover file %s\n", file.path().c_str());
      ++other_files;
    }
  }
  // 5 shared keys, and per process 7 own names x 5 suffixes (all 35 pairs once iterations >= 35).
  const std::size_t expected = iterations >= 35 ? 5 + 35 * static_cast<std::size_t>(processes) : entries;
  std::printf("%d processes x %d iterations: %d failed, %zu entries, %zu other files\n", processes, iterations, failed,
              entries, other_files);
  std::filesystem::remove_all(pattern);
  if (entries != expected) {
    std::fprintf(stderr, "expected %zu entries\n", expected);
  }
  return failed == 0 && other_files == 0 && entries == expected ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (args.size() == 4 && args[0] == "run") {
    return run(args[1], std::stoi(args[2]), std::stoi(args[3]));
  }
  if (args.size() == 5 && args[0] == "worker") {
    return worker(args[1], std::stoi(args[2]), std::stoi(args[3]), std::stoi(args[4]));
  }
  std::fprintf(stderr,
               "usage: cache_stress run <parent dir> <processes> <iterations>\n"
               "       cache_stress worker <dir> <id> <iterations> <start fd>\n");
  return 2;
}
