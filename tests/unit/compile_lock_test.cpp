// compile_lock_test.cpp: one compile per key per machine (jit/compile_lock.hpp). The lock is held
// by one holder at a time and waited for at most its limit; a lock file left by a holder that died
// blocks no one; a folder where no lock file can be made still compiles; two registries (separate
// memory caches, one cache folder) that both missed the disk compile a key once, the second
// finding the first one's entry after the lock (and both compile when the lock is taken away, which
// is what the test would see if the lock did nothing); two host JITs on one folder compile once.
#include "jit/compile_lock.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>
#include <latch>
#include <random>
#include <sstream>
#include <thread>

#include "host/host_backend.hpp"
#include "jit/compiled_entry.hpp"
#include "jit/compiled_memory_cache.hpp"
#include "jit/disk_cache.hpp"
#include "jit/disk_entry_store.hpp"
#include "jit/nvrtc_compiler.hpp"
#include "metrale/jit/kernel_registry.hpp"
#include "support/host_jit_support.hpp"
#include "support/isolated_runtime.hpp"
#include "support/jit_test_support.hpp"
#include "support/temp_dir.hpp"

extern char** environ;  // NOLINT(readability-redundant-declaration): the children's environment

using namespace metrale;

namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

KernelRegistry::Options lock_options(EntryStore store) {
  KernelRegistry::Options options;
  options.store = std::make_shared<EntryStore>(std::move(store));
  options.memory = std::make_shared<CompiledMemoryCache>();
  options.parallelism = 1;
  options.bundles = nullptr;
  options.env = test::no_environment;
  options.compile_timeout_s = 60.0;
  return options;
}

// The disk store of `dir` whose first `hold` loads (one per registry) wait for each other, so both
// registries have missed the disk before either compiles.
EntryStore held_disk_store(const std::filesystem::path& dir, std::latch& both_missed, std::atomic<int>& loads) {
  EntryStore disk = disk_entry_store(std::make_shared<DiskCache>(DiskCache::open_at(dir)));
  EntryStore held = disk;
  held.load = [disk, &both_missed, &loads](const EntryKey& key) {
    std::optional<EntrySections> found = disk.load(key);
    if (loads++ < 2) {
      both_missed.arrive_and_wait();
    }
    return found;
  };
  return held;
}

std::string random_salt() {
  static std::mt19937_64 engine(std::random_device{}());
  return std::to_string(engine());
}

// A kernel of the test set, its source salted so no earlier run's cache entry can answer.
SourceSet salted_sources(const std::string& salt = random_salt()) {
  SourceSet sources = jit_test_support::test_sources();
  sources.add_source("lock_salted.cuh", "// salt " + salt + "\n#include \"jit_test_kernels.cuh\"\n");
  return sources;
}

// Waits up to 60 s for `path` to exist.
bool wait_for_file(const std::filesystem::path& path) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!std::filesystem::exists(path)) {
    if (std::chrono::steady_clock::now() >= until) {
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// What the two-process test hands its children (this binary again, running the hidden case below).
constexpr const char* kChildDir = "METRALE_LOCK_TEST_DIR";
constexpr const char* kChildSalt = "METRALE_LOCK_TEST_SALT";
constexpr const char* kChildOut = "METRALE_LOCK_TEST_OUT";
constexpr const char* kChildNoLock = "METRALE_LOCK_TEST_NO_LOCK";  // the planted fault: no lock

const KernelVariant kScale{"scale", "lock_salted.cuh", "jit_test::scale<128>", KernelParams{128, 0, 0}};

}  // namespace

TEST_CASE("a compile lock has one holder at a time and is waited for at most its limit", "[deadline][concurrency]") {
  test::TempDir dir("metrale-lock");
  CHECK(compile_lock_file_name("0123abcdef") == ".lock-0123abcdef");
  CHECK(compile_lock_file_name("../x/y\n") == ".lock-xy");
  CHECK(compile_lock_file_name(std::string(100, 'a')).size() == 6 + 64);
  CompileLock first = CompileLock::acquire(dir.path(), "00ff", 1.0);
  REQUIRE(first.held());
  struct stat info {};
  REQUIRE(::stat((dir.path() / ".lock-00ff").c_str(), &info) == 0);
  CHECK((info.st_mode & 0777) == 0600);
  CHECK(S_ISREG(info.st_mode));

  const auto start = std::chrono::steady_clock::now();
  const CompileLock second = CompileLock::acquire(dir.path(), "00ff", 0.3);
  CHECK(second.state() == CompileLockState::kTimedOut);
  CHECK(seconds_since(start) >= 0.3);
  CHECK(seconds_since(start) < 0.3 + 1.0);
  CHECK_THAT(second.problem(), Catch::Contains(".lock-00ff") && Catch::Contains("0.3 s"));
  CHECK(CompileLock::acquire(dir.path(), "11ee", 0.0).held());  // another key: not blocked

  // Released, it is free at once; a waiter gets it as soon as the holder lets go.
  std::thread release([&first] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    first = CompileLock{};
  });
  const CompileLock third = CompileLock::acquire(dir.path(), "00ff", 10.0);
  release.join();
  CHECK(third.held());
  CHECK(third.waited_s() >= 0.2);
  CHECK(third.waited_s() < 5.0);
}

TEST_CASE("a compile lock file left by a holder that died blocks no one", "[deadline]") {
  test::TempDir dir("metrale-lock-stale");
  dir.write(".lock-abcd", "left behind\n");  // a stale name, never locked
  CompileLock plain = CompileLock::acquire(dir.path(), "abcd", 5.0);
  CHECK(plain.held());
  CHECK(plain.waited_s() < 0.5);
  plain = CompileLock{};
  // A holder that died holding it (no unlock, no close): the kernel drops its lock with it.
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    const CompileLock held = CompileLock::acquire(dir.path(), "abcd", 5.0);
    ::_exit(held.held() ? 0 : 3);
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
  const CompileLock after = CompileLock::acquire(dir.path(), "abcd", 5.0);
  CHECK(after.held());
  CHECK(after.waited_s() < 0.5);
}

TEST_CASE("where no compile lock file can be made the kernel still compiles without the lock", "[deadline][jit]") {
  test::TempDir dir("metrale-lock-ro");
  dir.write("not-a-folder", "x");
  const CompileLock none = CompileLock::acquire(dir.path() / "not-a-folder", "abcd", 5.0);
  CHECK(none.state() == CompileLockState::kUnavailable);
  CHECK_THAT(none.problem(), Catch::Contains("not-a-folder/.lock-abcd"));
  if (::geteuid() != 0) {  // root writes in a 0500 folder anyway
    std::filesystem::create_directory(dir.path() / "read-only");
    std::filesystem::permissions(dir.path() / "read-only",
                                 std::filesystem::perms::owner_read | std::filesystem::perms::owner_exec);
    CHECK(CompileLock::acquire(dir.path() / "read-only", "abcd", 5.0).state() == CompileLockState::kUnavailable);
    std::filesystem::permissions(dir.path() / "read-only", std::filesystem::perms::owner_all);
  }
  // A registry whose store cannot lock: it compiles and stores as without a lock.
  jit_test_support::MapStore map;
  EntryStore store = map.seam();
  const std::filesystem::path nowhere = dir.path() / "not-a-folder";
  std::atomic<int> locks{0};
  store.lock = [nowhere, &locks](const EntryKey&, double wait_s) {
    ++locks;
    return CompileLock::acquire(nowhere, "abcd", wait_s);
  };
  KernelRegistry registry(salted_sources(), lock_options(std::move(store)));
  registry.declare(kScale);
  const std::vector<BuildRecord> built = registry.build("sm_90");
  REQUIRE(built.size() == 1);
  INFO(built[0].entry->log);
  CHECK(built[0].ok());
  CHECK(built[0].origin == BuildOrigin::kNvrtc);
  CHECK(locks == 1);
  CHECK(map.stores == 1);
}

TEST_CASE("two registries on one cache folder that both missed the disk compile a key once",
          "[deadline][jit][concurrency]") {
  INFO(nvrtc_unavailable_reason());
  REQUIRE(nvrtc_available());
  const SourceSet sources = salted_sources();
  auto race = [&](bool with_lock) {
    test::TempDir cache("metrale-lock-race");
    std::latch both_missed(2);
    std::atomic<int> loads{0};
    std::array<std::vector<BuildRecord>, 2> records;
    std::array<RegistryStats, 2> stats;
    std::array<std::thread, 2> threads;
    for (std::size_t r = 0; r < 2; ++r) {
      threads[r] = std::thread([&, r] {
        EntryStore store = held_disk_store(cache.path(), both_missed, loads);
        if (!with_lock) {
          store.lock = nullptr;  // the planted fault: no lock, so nothing makes the second look again
        }
        KernelRegistry registry(sources, lock_options(std::move(store)));
        registry.declare(kScale);
        records[r] = registry.build("sm_90");
        stats[r] = registry.stats();
      });
    }
    for (std::thread& thread : threads) {
      thread.join();
    }
    for (const auto& built : records) {
      REQUIRE(built.size() == 1);
      INFO(built[0].entry->log);
      REQUIRE(built[0].ok());
    }
    CHECK(records[0][0].entry->lowered_name == records[1][0].entry->lowered_name);
    CHECK(*records[0][0].entry->ptx == *records[1][0].entry->ptx);
    return stats[0].nvrtc_programs + stats[1].nvrtc_programs;
  };
  CHECK(race(true) == 1);  // one compiled, the other found its entry after the lock (a disk hit)
  CHECK(race(false) == 2);
}

TEST_CASE("two host JITs on one cache folder compile a key once", "[deadline][host]") {
  test::TempDir cache("metrale-lock-host");
  test::Sources sources = test::engine_sources();
  // Salted, so the object's key is new to this folder whatever ran before.
  sources["engine_mirror.cuh"] += "\n// salt " + std::to_string(std::random_device{}()) + "\n";
  std::array<std::unique_ptr<HostBackend>, 2> backends;
  std::array<KernelHandle, 2> handles;
  std::array<std::thread, 2> threads;
  for (std::size_t b = 0; b < 2; ++b) {
    backends[b] = std::make_unique<HostBackend>(test::jit_options(cache.path()));
  }
  for (std::size_t b = 0; b < 2; ++b) {
    threads[b] = std::thread([&, b] { handles[b] = test::load_parent(*backends[b], sources); });
  }
  for (std::thread& thread : threads) {
    thread.join();
  }
  const host::HostJitStats first = backends[0]->jit_stats();
  const host::HostJitStats second = backends[1]->jit_stats();
  CHECK(first.compiles + second.compiles == 1);
  CHECK(first.cache_hits + second.cache_hits == 1);
  for (std::size_t b = 0; b < 2; ++b) {
    REQUIRE(handles[b].present());
    test::check_runs(*backends[b], handles[b], 40 + b);
  }
}

// Run only by the test below, in a process of its own: builds kScale in the cache folder it is
// given, its first disk lookup (a miss) followed by "<out>.ready" and a wait for "<dir>/go", so both
// processes have missed the disk before either compiles; writes "<programs> <disk hits> <ok>" to <out>.
TEST_CASE("compile lock child process", "[.][deadline-child]") {
  const char* dir = std::getenv(kChildDir);
  const char* salt = std::getenv(kChildSalt);
  const char* out = std::getenv(kChildOut);
  REQUIRE(dir != nullptr);
  REQUIRE(salt != nullptr);
  REQUIRE(out != nullptr);
  EntryStore disk =
      disk_entry_store(std::make_shared<DiskCache>(DiskCache::open_at(std::filesystem::path(dir) / "cache")));
  EntryStore store = disk;
  if (std::getenv(kChildNoLock) != nullptr) {
    store.lock = nullptr;
  }
  auto first = std::make_shared<std::atomic<bool>>(true);
  const std::string ready = std::string(out) + ".ready";
  const std::filesystem::path go = std::filesystem::path(dir) / "go";
  store.load = [disk, first, ready, go](const EntryKey& key) {
    std::optional<EntrySections> found = disk.load(key);
    if (first->exchange(false)) {
      std::ofstream(ready) << "missed\n";
      wait_for_file(go);
    }
    return found;
  };
  KernelRegistry registry(salted_sources(salt), lock_options(std::move(store)));
  registry.declare(kScale);
  const std::vector<BuildRecord> built = registry.build("sm_90");
  REQUIRE(built.size() == 1);
  const RegistryStats stats = registry.stats();
  std::ofstream(out) << stats.nvrtc_programs << " " << stats.disk_hits << " " << (built[0].ok() ? 1 : 0) << "\n";
}

TEST_CASE("two processes on one cache folder that both missed the disk compile a key once", "[deadline][jit]") {
  INFO(nvrtc_unavailable_reason());
  REQUIRE(nvrtc_available());
  std::string exe = std::filesystem::read_symlink("/proc/self/exe").string();
  std::string filter = "[deadline-child]";
  // The programs both children ran, and their disk hits.
  auto race = [&](bool with_lock) {
    test::TempDir dir("metrale-lock-processes");
    const std::string salt = random_salt();
    std::array<pid_t, 2> children{};
    std::array<std::filesystem::path, 2> outs;
    for (std::size_t c = 0; c < 2; ++c) {
      outs[c] = dir.path() / ("child" + std::to_string(c));
      std::vector<std::string> env_text;
      for (char** entry = environ; *entry != nullptr; ++entry) {
        env_text.emplace_back(*entry);
      }
      env_text.push_back(std::string(kChildDir) + "=" + dir.path().string());
      env_text.push_back(std::string(kChildSalt) + "=" + salt);
      env_text.push_back(std::string(kChildOut) + "=" + outs[c].string());
      if (!with_lock) {
        env_text.push_back(std::string(kChildNoLock) + "=1");
      }
      std::vector<char*> envp;
      for (std::string& text : env_text) {
        envp.push_back(text.data());
      }
      envp.push_back(nullptr);
      std::array<char*, 3> argv{exe.data(), filter.data(), nullptr};
      // The child's Catch report goes to a file (quoted below when something fails).
      const std::string log = outs[c].string() + ".log";
      posix_spawn_file_actions_t actions;
      posix_spawn_file_actions_init(&actions);
      posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
      posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
      const int spawned = ::posix_spawn(&children[c], exe.c_str(), &actions, nullptr, argv.data(), envp.data());
      posix_spawn_file_actions_destroy(&actions);
      REQUIRE(spawned == 0);
    }
    // Both have missed the disk: now let them compile.
    for (const std::filesystem::path& out : outs) {
      CHECK(wait_for_file(out.string() + ".ready"));
    }
    std::ofstream(dir.path() / "go") << "go\n";
    for (const pid_t child : children) {
      int status = 0;
      REQUIRE(::waitpid(child, &status, 0) == child);
      CHECK(WIFEXITED(status));
      CHECK(WEXITSTATUS(status) == 0);
    }
    std::pair<int, int> totals{0, 0};
    for (const std::filesystem::path& out : outs) {
      const std::string text = read_text(out);
      INFO(out << ": " << text << "\n" << read_text(out.string() + ".log"));
      std::istringstream result(text);
      int programs = -1;
      int disk_hits = -1;
      int ok = 0;
      result >> programs >> disk_hits >> ok;
      CHECK(ok == 1);
      totals.first += programs;
      totals.second += disk_hits;
    }
    return totals;
  };
  // One compiled; the other waited on the lock and found its entry on the disk.
  CHECK(race(true) == std::pair<int, int>{1, 1});
  // The planted fault: without the lock both compile.
  CHECK(race(false) == std::pair<int, int>{2, 0});
}
