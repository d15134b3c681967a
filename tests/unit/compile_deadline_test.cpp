// compile_deadline_test.cpp: compile deadlines (jit/compile_deadline.hpp). METRALE_COMPILE_TIMEOUT_S
// and the options over it refuse what is not a positive number, naming it; an NVRTC compile of a
// source that takes seconds is abandoned at a 1 s limit, its kernel absent with "compile exceeded
// 1 s", and the same registry compiles a normal kernel right after (NVRTC's serialisation behind
// the abandoned compile measured and printed); a host-JIT compile at a 1 s limit is killed with its
// whole process group (its cc1plus seen alive before, gone after), and the next compile works.
#include "jit/compile_deadline.hpp"

#include <signal.h>
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <thread>

#include "host/host_backend.hpp"
#include "host/host_compiler.hpp"
#include "jit/cache_location.hpp"
#include "jit/compiled_entry.hpp"
#include "jit/compiled_memory_cache.hpp"
#include "jit/nvrtc_compiler.hpp"
#include "metrale/error.hpp"
#include "metrale/jit/kernel_registry.hpp"
#include "metrale/runtime.hpp"
#include "support/host_jit_support.hpp"
#include "support/isolated_runtime.hpp"
#include "support/jit_test_support.hpp"
#include "support/slow_compile.hpp"
#include "support/temp_dir.hpp"

using namespace metrale;

namespace {

// How much later than its limit a cut compile may answer: the wait's wake-up, a kill and a reap on
// a loaded 2-core machine.
constexpr double kSlackS = 2.0;
// NVRTC's slow source: about 7 s alone on the 2-core box (idle; longer under load).
constexpr int kSlowChunks = 160;

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

unsigned long long salt() {
  static std::mt19937_64 engine(std::random_device{}());
  return engine();
}

EnvLookup env_with(std::map<std::string, std::string> values) {
  return [values = std::move(values)](const char* name) -> std::optional<std::string> {
    const auto found = values.find(name);
    return found == values.end() ? std::nullopt : std::optional<std::string>(found->second);
  };
}

// The message of the `Error` type `what()` throws; "(none)" when it throws none.
template <typename Error, typename Call>
std::string error_of(Call&& call) {
  try {
    call();
  } catch (const Error& error) {
    return error.what();
  }
  return "(none)";
}

struct ProcessInfo {
  pid_t pid = 0;
  pid_t parent = 0;
  pid_t group = 0;
  char state = '?';  // 'Z': a zombie, dead but not yet reaped
  std::string name;
};

// Every process, from /proc/<pid>/stat.
std::vector<ProcessInfo> processes() {
  std::vector<ProcessInfo> all;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", error)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) {
      continue;
    }
    std::ifstream in(entry.path() / "stat");
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const std::size_t open = text.find('(');
    const std::size_t close = text.rfind(')');
    if (open == std::string::npos || close == std::string::npos || close + 2 >= text.size()) {
      continue;
    }
    std::istringstream rest(text.substr(close + 2));
    ProcessInfo info;
    long parent = 0;
    long group = 0;
    rest >> info.state >> parent >> group;
    info.pid = static_cast<pid_t>(std::stol(name));
    info.parent = static_cast<pid_t>(parent);
    info.group = static_cast<pid_t>(group);
    info.name = text.substr(open + 1, close - open - 1);
    all.push_back(std::move(info));
  }
  return all;
}

// Whether a process of group `group` is alive (not a zombie), waiting up to `limit` for them to go.
bool group_alive(pid_t group, std::chrono::milliseconds limit) {
  const auto until = std::chrono::steady_clock::now() + limit;
  for (;;) {
    bool alive = false;
    for (const ProcessInfo& process : processes()) {
      alive = alive || (process.group == group && process.state != 'Z');
    }
    if (!alive || std::chrono::steady_clock::now() >= until) {
      return alive;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

KernelRegistry::Options deadline_options(double limit_s) {
  KernelRegistry::Options options;
  options.store = std::make_shared<EntryStore>();  // memory only
  options.memory = std::make_shared<CompiledMemoryCache>();
  options.parallelism = 2;
  options.bundles = nullptr;
  options.env = test::no_environment;
  options.compile_timeout_s = limit_s;
  return options;
}

}  // namespace

TEST_CASE("METRALE_COMPILE_TIMEOUT_S takes a positive number of seconds and refuses anything else by name",
          "[deadline]") {
  CHECK(parse_compile_timeout("300") == 300.0);
  CHECK(parse_compile_timeout("0.5") == 0.5);
  CHECK(parse_compile_timeout("1e2") == 100.0);
  for (const char* bad : {"0", "-1", "abc", " 2", "2 ", "2s", "nan", "inf", "1e999", "-0", "0x10"}) {
    INFO(bad);
    CHECK_FALSE(parse_compile_timeout(bad).has_value());
  }
  CHECK(compile_timeout_s(test::no_environment) == kDefaultCompileTimeoutS);
  CHECK(compile_timeout_s(env_with({{"METRALE_COMPILE_TIMEOUT_S", ""}})) == kDefaultCompileTimeoutS);
  CHECK(compile_timeout_s(env_with({{"METRALE_COMPILE_TIMEOUT_S", "12.5"}})) == 12.5);
  // The option wins over the variable, even over a bad one.
  CHECK(compile_timeout_s(env_with({{"METRALE_COMPILE_TIMEOUT_S", "abc"}}), 3.0) == 3.0);
  for (const char* bad : {"0", "-5", "ten", "inf"}) {
    INFO(bad);
    const EnvLookup env = env_with({{"METRALE_COMPILE_TIMEOUT_S", bad}});
    CHECK_THAT(error_of<ConfigError>([&] { compile_timeout_s(env); }),
               Catch::Contains("METRALE_COMPILE_TIMEOUT_S") && Catch::Contains(std::string("'") + bad + "'"));
  }
  CHECK_THAT(
      error_of<ConfigError>([] { compile_timeout_s(test::no_environment, -1.0, "RuntimeOptions::compile_timeout_s"); }),
      Catch::Contains("RuntimeOptions::compile_timeout_s is -1"));
  CHECK(compile_exceeded_reason(1.0) == "compile exceeded 1 s");
  CHECK(compile_exceeded_reason(0.25) == "compile exceeded 0.25 s");

  // Through the runtime's injected environment, on either path to a compiler.
  for (const BackendChoice backend : {BackendChoice::kNone, BackendChoice::kHost}) {
    RuntimeOptions options = test::isolated_runtime_options(backend);
    options.env = env_with({{"METRALE_COMPILE_TIMEOUT_S", "-3"}});
    CHECK_THAT(error_of<ConfigError>([&] { Runtime::open(std::move(options)); }),
               Catch::Contains("METRALE_COMPILE_TIMEOUT_S='-3'"));
  }
  RuntimeOptions given = test::isolated_runtime_options(BackendChoice::kNone);
  given.compile_timeout_s = 0.0;
  CHECK_THAT(error_of<ConfigError>([&] { Runtime::open(std::move(given)); }),
             Catch::Contains("RuntimeOptions::compile_timeout_s is 0"));
  KernelRegistry::Options registry = deadline_options(1.0);
  registry.compile_timeout_s = std::nullopt;
  registry.env = env_with({{"METRALE_COMPILE_TIMEOUT_S", "soon"}});
  CHECK_THROWS_AS(KernelRegistry(SourceSet{}, std::move(registry)), ConfigError);
}

TEST_CASE("a deadline worker answers in time or is abandoned and its result dropped", "[deadline]") {
  CHECK(run_with_deadline<int>([] { return 7; }, 5.0) == 7);
  auto gate = std::make_shared<std::atomic<bool>>(false);
  const auto start = std::chrono::steady_clock::now();
  CHECK_FALSE(run_with_deadline<int>(
                  [gate] {
                    while (!gate->load()) {
                      std::this_thread::sleep_for(std::chrono::milliseconds(5));
                    }
                    return 1;
                  },
                  0.2)
                  .has_value());
  CHECK(seconds_since(start) < 0.2 + kSlackS);
  CHECK(deadline_workers_running() >= 1);
  gate->store(true);
  CHECK(wait_for_deadline_workers(std::chrono::seconds(5)));
  CHECK_THROWS_AS(run_with_deadline<int>([]() -> int { throw std::runtime_error("boom"); }, 5.0), std::runtime_error);
}

TEST_CASE("an NVRTC compile past its deadline is abandoned with the reason and the registry compiles the next kernel",
          "[deadline][jit]") {
  INFO(nvrtc_unavailable_reason());
  REQUIRE(nvrtc_available());
  REQUIRE(wait_for_deadline_workers(std::chrono::seconds(60)));  // no earlier test's compile in the way
  SourceSet sources = jit_test_support::test_sources();
  sources.add_source(test::kSlowSourceName, test::slow_source(kSlowChunks, salt()));
  KernelRegistry registry(sources, deadline_options(1.0));
  const VariantId slow =
      registry.declare(KernelVariant{"deadline_slow", test::kSlowSourceName, test::kSlowExpression, {1, 0, 0}});

  const auto start = std::chrono::steady_clock::now();
  const std::vector<BuildRecord> cut = registry.build("sm_90", std::vector<VariantId>{slow});
  const double cut_s = seconds_since(start);
  REQUIRE(cut.size() == 1);
  CHECK_FALSE(cut[0].ok());
  REQUIRE(cut[0].entry != nullptr);
  CHECK(cut[0].entry->log == "compile exceeded 1 s");
  CHECK(cut_s >= 1.0);
  CHECK(cut_s < 1.0 + kSlackS);
  CHECK(registry.stats().failures == 1);
  const std::optional<BuildRecord> kept = registry.record(slow, "sm_90");
  REQUIRE(kept);
  CHECK(kept->entry->log == "compile exceeded 1 s");
  CHECK(deadline_workers_running() == 1);  // the abandoned compile runs on

  // A normal kernel, while the abandoned compile still runs: right, against a compile of its own.
  // Under a generous limit of its own, as NVRTC may serialise it behind the abandoned one.
  KernelRegistry::Options generous = deadline_options(60.0);
  KernelRegistry next(sources, std::move(generous));
  const VariantId scale =
      next.declare(KernelVariant{"scale", "jit_test_kernels.cuh", "jit_test::scale<64>", {64, 0, 0}});
  const auto second = std::chrono::steady_clock::now();
  const std::vector<BuildRecord> built = next.build("sm_90", std::vector<VariantId>{scale});
  const double behind_s = seconds_since(second);
  REQUIRE(built.size() == 1);
  INFO(built[0].entry->log);
  REQUIRE(built[0].ok());
  const bool abandoned_still_running = deadline_workers_running() == 1;
  CompileRequest reference{"jit_test_kernels.cuh", &sources, {"jit_test::scale<64>"}, "sm_90", {}};
  reference.env = test::no_environment;
  const CompileResult alone = compile_with_nvrtc(reference);
  REQUIRE(alone.ok);
  CHECK(built[0].entry->lowered_name == alone.lowered_names[0]);
  CHECK(*built[0].entry->ptx == alone.ptx);

  // The abandoned compile ends of itself; its result goes nowhere.
  REQUIRE(wait_for_deadline_workers(std::chrono::seconds(90)));
  const double abandoned_s = seconds_since(start);
  CHECK(abandoned_s > 3.0);  // the planted source is slow indeed: the cut is what made the build answer
  const auto third = std::chrono::steady_clock::now();
  CHECK(compile_with_nvrtc(reference, 60.0).ok);
  const double idle_s = seconds_since(third);
  std::fprintf(stderr,
               "[deadline] NVRTC: cut at %.2f s (limit 1 s); a normal compile behind it %.2f s (abandoned one %s), "
               "alone %.2f s; the abandoned compile ended after %.2f s\n",
               cut_s, behind_s, abandoned_still_running ? "still running after it" : "ended first", idle_s,
               abandoned_s);
  // A timeout is not remembered: the registry would try the kernel again (not run here: 7 s).
  CHECK(registry.record(slow, "sm_90")->entry->log == "compile exceeded 1 s");
}

TEST_CASE("a host compiler past its deadline is killed with its whole process group", "[deadline][host]") {
  test::TempDir work("metrale-deadline-gxx");
  work.write("slow.cpp", "#define __global__\n" + test::slow_source(kSlowChunks, salt()) +
                             "template void deadline_slow::slow_kernel<1>(unsigned long long*);\n");
  const host::CompilerSearch search = host::find_system_compiler(test::no_environment);
  REQUIRE(search.compiler);
  std::vector<std::string> argv = search.compiler->command;
  argv.insert(argv.end(), {"-std=c++20", "-O2", "-c", (work.path() / "slow.cpp").string(), "-o",
                           (work.path() / "slow.o").string()});
  // The group as it runs: the driver and its cc1plus (what killing only the driver would leave).
  // The compiler is the one child of this process that leads its own group.
  std::atomic<pid_t> seen_group{0};
  std::map<pid_t, std::string> seen;  // the group's living members met while it ran
  std::atomic<bool> stop{false};
  std::thread watcher([&] {
    while (!stop.load()) {
      const std::vector<ProcessInfo> all = processes();
      for (const ProcessInfo& process : all) {
        if (process.parent == ::getpid() && process.group == process.pid) {
          seen_group.store(process.pid);
        }
      }
      for (const ProcessInfo& process : all) {
        if (seen_group.load() != 0 && process.group == seen_group.load() && process.state != 'Z') {
          seen.emplace(process.pid, process.name);
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  });
  const auto start = std::chrono::steady_clock::now();
  const host::CompilerRun ran = host::run_captured(argv, work.path(), 1.0);
  const double cut_s = seconds_since(start);
  stop.store(true);
  watcher.join();
  INFO(ran.output);
  CHECK(ran.timed_out);
  CHECK(ran.exit_code == 128 + SIGKILL);
  CHECK(ran.output.starts_with("compile exceeded 1 s"));
  CHECK(cut_s >= 1.0);
  CHECK(cut_s < 1.0 + kSlackS);
  REQUIRE(ran.process_group > 0);
  CHECK(seen_group.load() == ran.process_group);
  // The driver ran a compiler pass of its own in the group (cc1plus), and nothing of it lives on.
  std::string names;
  for (const auto& [pid, name] : seen) {
    names += " " + std::to_string(pid) + ":" + name;
  }
  INFO("seen in the group:" << names);
  CHECK(seen.size() >= 2);
  CHECK_FALSE(group_alive(ran.process_group, std::chrono::milliseconds(2000)));
  CHECK_FALSE(std::filesystem::exists(work.path() / "slow.o"));
  std::fprintf(stderr, "[deadline] g++: cut at %.2f s (limit 1 s), its group (%s) killed\n", cut_s, names.c_str());
}

TEST_CASE("after a host-JIT compile cut at its deadline (its reason given and no object left) the next one compiles",
          "[deadline][host]") {
  test::TempDir cache("metrale-deadline-host");
  test::Sources sources = test::engine_sources();
  sources.emplace(test::kSlowSourceName, test::slow_source(kSlowChunks, salt()));
  HostBackendOptions options = test::jit_options(cache.path());
  options.jit_compile_timeout_s = 1.0;
  HostBackend cut(options);
  const auto start = std::chrono::steady_clock::now();
  const std::string refused = error_of<BackendError>([&] {
    cut.load(LoadRequest{"deadline_slow",
                         KernelParams{1, 0, 0},
                         test::kSlowExpression,
                         {},
                         {},
                         ImageKind::kCubin,
                         test::kSlowSourceName,
                         &sources});
  });
  CHECK_THAT(refused, Catch::StartsWith("host JIT of deadline_slow") && Catch::EndsWith(": compile exceeded 1 s"));
  const double cut_s = seconds_since(start);
  CHECK(cut_s < 1.0 + kSlackS);
  CHECK(cut.jit_stats().compiles == 1);
  CHECK(cut.jit_stats().failures == 1);
  // Neither an object nor a work folder is left; only the key's lock file.
  for (const auto& entry : std::filesystem::directory_iterator(cache.path())) {
    INFO(entry.path());
    CHECK(entry.path().filename().string().starts_with(".lock-"));
  }
  // The next compile, under the default limit, in the same folder: right.
  HostBackend next(test::jit_options(cache.path()));
  const KernelHandle mirror = test::load_parent(next, sources);
  REQUIRE(mirror.present());
  test::check_runs(next, mirror, 35);
  std::fprintf(stderr, "[deadline] host JIT: cut at %.2f s (limit 1 s)\n", cut_s);
}

TEST_CASE("a compile on a deadline worker sees every variable its PCH and cache-folder choices read", "[deadline]") {
  // A spy environment with every variable set to a usable value records each name the readers ask
  // for; a name missing from the snapshot list would read as unset inside the worker.
  std::vector<std::string> asked;
  const EnvLookup spy = [&asked](const char* name) -> std::optional<std::string> {
    asked.emplace_back(name);
    return std::string("/nonexistent-but-absolute");
  };
  const EnvLookup unset = [&asked](const char* name) -> std::optional<std::string> {
    asked.emplace_back(name);
    return std::nullopt;
  };
  (void)pch_enabled(spy);
  (void)choose_cache_dir(spy);
  (void)choose_cache_dir(unset);  // every fallback asked
  REQUIRE(asked.size() >= 4);
  const std::span<const char* const> snapshot = nvrtc_compile_variables();
  for (const std::string& name : asked) {
    INFO(name);
    CHECK(std::any_of(snapshot.begin(), snapshot.end(), [&](const char* kept) { return name == kept; }));
  }
}
