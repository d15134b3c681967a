// tests/support/cache_test_support.hpp: helpers shared by the disk-cache tests: a private temp directory
// removed afterwards, random keys and sections, a forked child whose checks become an exit
// code, and a log sink that counts messages.
#pragma once

#include <spdlog/sinks/base_sink.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "jit/cache_entry.hpp"
#include "jit/entry_key.hpp"
#include "support/temp_dir.hpp"

namespace metrale::cache_test {

using metrale::test::TempDir;

inline std::string random_bytes(std::mt19937_64& rng, std::size_t size) {
  std::string out(size, '\0');
  for (auto& c : out) {
    c = static_cast<char>(rng() & 0xFFu);
  }
  return out;
}

inline EntryKey sample_key(std::string kernel = "ssm_ba_gates_hopper", std::string arch = "sm_90",
                           std::string nvrtc = "13-0") {
  return EntryKey{std::move(kernel),  "b256l64g8", std::move(arch), std::move(nvrtc), "-std=c++17 -default-device",
                  "3f2a9c0d1e5b7a4c", ""};
}

inline CacheSections sample_sections(std::mt19937_64& rng) {
  return {{"cubin", random_bytes(rng, 4096 + rng() % 512)},
          {"ptx", random_bytes(rng, 700)},
          {"lowered_name", "_Z20ssm_ba_gates_hopperILi256ELi64ELi8EEvPKv"},
          {"log", ""}};
}

inline std::string read_all(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline void write_all(const std::filesystem::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

inline std::vector<std::string> file_names(const std::filesystem::path& dir) {
  std::vector<std::string> out;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    out.push_back(entry.path().filename().string());
  }
  return out;
}

// Runs `body` in a forked child; its return value is the child's exit code (0 = all checks
// held). The parent gets the exit code, or 128 + signal when the child was killed.
inline int run_in_child(const std::function<int()>& body) {
  std::fflush(nullptr);
  const pid_t child = ::fork();
  if (child == 0) {
    int code = 99;
    try {
      code = body();
    } catch (const std::exception& error) {
      std::fprintf(stderr, "child threw: %s\n", error.what());
    }
    std::fflush(nullptr);
    ::_exit(code);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  if (WIFSIGNALED(status)) {
    return 128 + WTERMSIG(status);
  }
  return WEXITSTATUS(status);
}

// Records every message logged through it (attach with logger().sinks().push_back).
class RecordingSink : public spdlog::sinks::base_sink<std::mutex> {
 public:
  struct Record {
    spdlog::level::level_enum level;
    std::string text;
  };
  std::vector<Record> records;

  std::size_t count(spdlog::level::level_enum level, const std::string& containing) {
    std::lock_guard<std::mutex> lock(mutex_);
    std::size_t n = 0;
    for (const auto& record : records) {
      n += (record.level == level && record.text.find(containing) != std::string::npos) ? 1 : 0;
    }
    return n;
  }

 protected:
  void sink_it_(const spdlog::details::log_msg& message) override {
    records.push_back({message.level, std::string(message.payload.data(), message.payload.size())});
  }
  void flush_() override {}
};

}  // namespace metrale::cache_test
