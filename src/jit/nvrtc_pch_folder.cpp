// nvrtc_pch_folder.cpp: making, sweeping and removing the private PCH folder (nvrtc_pch_folder.hpp).
#include "jit/nvrtc_pch_folder.hpp"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <mutex>
#include <string>

#include "ground/log.hpp"
#include "jit/cache_file_io.hpp"
#include "jit/cache_location.hpp"
#include "jit/cache_trust.hpp"

namespace metrale {
namespace {

// The folder and the process that made it; removed at exit by that process only (a forked
// child's exit must not take its parent's folder).
struct Owned {
  std::mutex mutex;
  std::optional<std::filesystem::path> dir;
  pid_t owner = 0;
  bool refused_logged = false;
  ~Owned() {
    if (dir && owner == ::getpid()) {
      std::error_code ignored;
      std::filesystem::remove_all(*dir, ignored);
    }
  }
};

Owned& owned() {
  static Owned state;  // destroyed at exit, after NVRTC's last compile in a normal exit
  return state;
}

std::optional<std::filesystem::path> make_folder(const std::filesystem::path& parent, const std::string& prefix,
                                                 std::string& problem) {
  std::string pattern = (parent / (prefix + std::to_string(::getpid()) + "-XXXXXX")).string();
  if (::mkdtemp(pattern.data()) == nullptr) {
    problem = fmt::format("cannot make a folder in {}: {}", parent.string(), errno_text(errno));
    return std::nullopt;
  }
  return std::filesystem::path(pattern);
}

// Folders of processes that are gone (killed before their exit removed them).
void sweep_dead(const std::filesystem::path& pch_root) {
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(pch_root, error)) {
    const std::optional<long> pid = pch_folder_pid(entry.path().filename().native());
    if (pid && *pid != ::getpid() && ::kill(static_cast<pid_t>(*pid), 0) != 0 && errno == ESRCH) {
      std::error_code ignored;
      std::filesystem::remove_all(entry.path(), ignored);
    }
  }
}

std::optional<std::filesystem::path> choose_folder(const EnvLookup& env, std::string& problem) {
  if (const CacheDirChoice choice = choose_cache_dir(env); choice.dir) {
    const TrustedFolder trusted = trusted_cache_folder(*choice.dir, "pch");
    if (trusted.dir) {
      sweep_dead(*trusted.dir);
      if (auto made = make_folder(*trusted.dir, "", problem)) {
        return made;
      }
    } else {
      problem = "refusing PCH folder " + trusted.problem;
    }
  }
  std::error_code error;
  const std::filesystem::path temp = std::filesystem::temp_directory_path(error);
  std::string temp_problem;
  if (!error) {
    if (auto made = make_folder(temp, "metrale-pch-", temp_problem)) {
      return made;
    }
  }
  problem += (problem.empty() ? "" : "; ") + (error ? "no temporary folder" : temp_problem);
  return std::nullopt;
}

}  // namespace

std::optional<long> pch_folder_pid(std::string_view name) {
  const std::size_t dash = name.find('-');
  if (dash == std::string_view::npos || dash == 0 || name.size() - dash - 1 != 6) {
    return std::nullopt;
  }
  long pid = 0;
  const auto [end, code] = std::from_chars(name.data(), name.data() + dash, pid);
  if (code != std::errc() || end != name.data() + dash || pid <= 0) {
    return std::nullopt;
  }
  return pid;
}

bool is_pch_folder_of(std::string_view name, long pid) { return pch_folder_pid(name) == pid; }

std::optional<std::filesystem::path> pch_folder(const EnvLookup& env) {
  Owned& state = owned();
  std::lock_guard lock(state.mutex);
  std::error_code error;
  if (state.owner == ::getpid() && (!state.dir || std::filesystem::is_directory(*state.dir, error))) {
    return state.dir;  // made (or found impossible) by this process already, and still there
  }
  std::string problem;
  state.dir = choose_folder(env, problem);
  state.owner = ::getpid();
  if (!state.dir && !state.refused_logged) {
    state.refused_logged = true;
    logger().warn("NVRTC's precompiled headers are off: {}", problem);
  }
  if (state.dir) {
    logger().debug("NVRTC's precompiled headers go to {}", state.dir->string());
  }
  return state.dir;
}

}  // namespace metrale
