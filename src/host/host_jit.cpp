// host/host_jit.cpp: key, cache lookup, compile in a private work folder, atomic rename, dlopen.
// Why the entry takes a function pointer out and not a HostKernelInfo: the object and the
// library may come from different compilers' standard libraries, so only C types cross.
// How the object reaches the library's prelude functions (sync_threads, ...): through the
// PreludeTable its entry is handed (metrale/host/thread_context.hpp says why a table and not
// exported symbols). The object is built with hidden visibility and --no-undefined, so it
// neither needs nor takes any symbol of the executable or of libmetrale.so.
#include "host/host_jit.hpp"

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#define XXH_INLINE_ALL
#include <fmt/format.h>
#include <xxhash.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

#include "ground/log.hpp"
#include "host/cuda_source_rewrite.hpp"
#include "host/host_compiler.hpp"
#include "host/host_include_dir.hpp"
#include "host/host_object_file.hpp"
#include "host/prelude_table.hpp"
#include "host/stubbed_compile.hpp"
#include "jit/cache_file_io.hpp"
#include "jit/cache_location.hpp"
#include "jit/compile_deadline.hpp"
#include "jit/compile_lock.hpp"
#include "jit/compile_target.hpp"
#include "jit/entry_key.hpp"
#include "metrale/jit/source_set.hpp"

namespace metrale::host {
namespace {

constexpr std::size_t kMaxParameters = 64;
constexpr std::string_view kPrelude = kPreludeHeader;
constexpr std::string_view kCudaStandIns = "metrale/host/cuda_include";
// The entry's answer when the table it was handed is not the one it was compiled against.
constexpr std::size_t kTableRefused = static_cast<std::size_t>(-1);

using EntryFn = std::size_t (*)(const PreludeTable*, void (**)(const KernelArg*), std::size_t*, std::size_t);

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// The public headers the prelude may read, in name order: an edit to any changes every key.
std::string headers_digest(const std::filesystem::path& include_dir) {
  std::vector<std::filesystem::path> files;
  std::error_code error;
  for (std::filesystem::recursive_directory_iterator it(include_dir / "metrale", error), end; !error && it != end;
       it.increment(error)) {
    if (it->is_regular_file(error)) {
      files.push_back(it->path());
    }
  }
  std::sort(files.begin(), files.end());
  XXH3_state_t* state = XXH3_createState();
  XXH3_128bits_reset(state);
  for (const auto& file : files) {
    const std::string name = file.lexically_relative(include_dir).string();
    const std::string text = read_file(file);
    XXH3_128bits_update(state, name.data(), name.size() + 1);
    XXH3_128bits_update(state, text.data(), text.size());
  }
  const XXH128_hash_t hash = XXH3_128bits_digest(state);
  XXH3_freeState(state);
  return hex_digest(hash.high64, hash.low64);
}

std::string unit_digest(const std::string& unit) {
  const XXH128_hash_t hash = XXH3_128bits(unit.data(), unit.size());
  return hex_digest(hash.high64, hash.low64);
}

// The folder of the work folder the sources are written to, by their names: apart from the unit
// and the compiler's outputs, so no source name can stand for either.
constexpr std::string_view kSourceFolder = "src";

// Writes one work file; the reason names the path and the errno text ("" when written). A full
// disk or a file-size limit fails here, not later as a compiler's missing input.
std::string write_work_file(const std::filesystem::path& path, std::string_view bytes) {
  std::error_code error;
  std::filesystem::create_directories(path.parent_path(), error);
  if (error) {
    return fmt::format("cannot create {}: {}", path.parent_path().string(), error.message());
  }
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) {
    return fmt::format("cannot create {}: {}", path.string(), errno_text(errno));
  }
  const OwnedFd file(fd);
  for (std::size_t done = 0; done < bytes.size();) {
    const ssize_t wrote = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (wrote < 0 && errno == EINTR) {
      continue;
    }
    if (wrote <= 0) {
      return fmt::format("cannot write {} ({} of {} bytes written): {}", path.string(), done, bytes.size(),
                         errno_text(wrote < 0 ? errno : EIO));
    }
    done += static_cast<std::size_t>(wrote);
  }
  return {};
}

// Removes every occurrence of `prefix` from `text`.
void erase_all(std::string& text, const std::string& prefix) {
  for (std::size_t at = text.find(prefix); at != std::string::npos; at = text.find(prefix, at)) {
    text.erase(at, prefix.size());
  }
}

}  // namespace

HostJit::HostJit(std::optional<std::filesystem::path> cache_dir, EnvLookup env, std::optional<double> compile_timeout_s)
    : cache_(std::move(cache_dir)), env_(std::move(env)) {
  compile_timeout_s_ = metrale::compile_timeout_s(env_, compile_timeout_s, "the host JIT's compile_timeout_s");
}

HostJit::~HostJit() = default;

std::optional<HostJitResult> HostJit::load_cached(const std::filesystem::path& object, const std::string& object_key,
                                                  const HostJitRequest& request) {
  const std::optional<ReadBackFile> cached = cache_.find(object, object_key);
  if (!cached) {
    return std::nullopt;
  }
  HostJitResult loaded = load_object(object, *cached, request);
  if (!loaded.kernel) {
    logger().warn("host JIT: {}; compiled again", loaded.reason);
    return std::nullopt;
  }
  ++stats_.cache_hits;
  loaded.from_cache = true;
  return loaded;
}

HostJitStats HostJit::stats() const {
  const std::lock_guard lock(mutex_);
  return stats_;
}

HostJitResult HostJit::build(const HostJitRequest& request) {
  const std::lock_guard lock(mutex_);
  const std::string what = fmt::format("{}<{}> ({}{})", request.kernel, request.params.tag(), request.name_expression,
                                       request.profiled ? ", profiled" : "");
  auto refuse = [&](std::string reason) {
    ++stats_.failures;
    return HostJitResult{std::nullopt, fmt::format("host JIT of {}: {}", what, reason), false};
  };
  if (request.sources == nullptr || request.sources->find(request.source) == request.sources->end()) {
    return refuse(fmt::format("its source '{}' was not given", request.source));
  }
  // A request's sources are a plain map (a LoadRequest's), so their names are checked here too:
  // each is written under the work folder by its name, and compiled as that text, never as a file
  // of that name elsewhere on disk.
  for (const auto& [name, text] : *request.sources) {
    if (std::string problem = source_name_problem(name); !problem.empty()) {
      return refuse(problem);
    }
  }
  const std::optional<std::filesystem::path> include_dir = host_jit_include_dir(env_);
  if (!include_dir) {
    std::string tried;
    for (const std::filesystem::path& candidate : host_jit_include_candidates(env_)) {
      tried += (tried.empty() ? "" : ", ") + candidate.string();
    }
    return refuse(fmt::format("no folder holds {} (tried {}; set METRALE_INCLUDE_DIR to the installed include folder)",
                              kPrelude, tried.empty() ? std::string("none") : tried));
  }
  if (!compiler_) {  // once per HostJit: `--version` is a process start
    compiler_ = find_system_compiler(env_);
    headers_digest_ = headers_digest(*include_dir);
  }
  const CompilerSearch& search = *compiler_;
  if (!search.compiler) {
    return refuse(search.problem);
  }
  if (request.profiled) {
    if (std::string refusal = host_jit_profiled_refusal(search.compiler->identity); !refusal.empty()) {
      return refuse(std::move(refusal));
    }
  }
  SourceSet set;
  for (const auto& [name, text] : *request.sources) {
    set.add_source(name, text);
  }
  const std::string unit = host_jit_unit(request.source, request.name_expression, request.profiled, request.cuda_arch);
  const std::vector<std::string> flags = host_jit_flags(search.compiler->identity, request.profiled);
  const std::string arch = request.profiled ? "host-profiled" : "host";
  const EntryKey key{std::string(request.kernel),
                     request.params.tag(),
                     arch,
                     search.compiler->identity,
                     fmt::format("{}{}", request.profiled ? "profiled " : "", fmt::join(flags, " ")),
                     unit_digest(unit) + set.digest(request.source).value_or("") + headers_digest_ +
                         std::string(kCudaSourceRewriteVersion),
                     ""};  // a host object keys its kernel by name and params, with no name expression
  const std::filesystem::path object = cache_.object_path(key.kernel, key.params_tag, arch, key.digest().substr(0, 16));
  const std::filesystem::path& dir = cache_.dir();
  const std::string object_key = key.digest().substr(0, kHostObjectKeyChars);
  std::error_code error;
  if (std::optional<HostJitResult> loaded = load_cached(object, object_key, request)) {
    return std::move(*loaded);
  }
  // One compile of a key per machine: another process (or HostJit) compiling it holds the lock;
  // once it is ours, the object it published is looked for again. Held until this compile has
  // published (or failed), released on every return below.
  const CompileLock key_lock = cache_.lock(key.digest(), compile_timeout_s_);
  if (key_lock.state() != CompileLockState::kUnavailable) {
    if (std::optional<HostJitResult> loaded = load_cached(object, object_key, request)) {
      return std::move(*loaded);
    }
  }
  // Named by the process and a count: two HostJits of one process compiling one key (their lock
  // timed out) each have their own.
  static std::atomic<std::uint64_t> works{0};
  const std::filesystem::path work =
      dir / fmt::format(".work-{}-{}-{}", key.digest().substr(0, 16), ::getpid(), works++);
  std::filesystem::create_directories(work, error);
  if (error) {
    return refuse(fmt::format("cannot create {}: {}", work.string(), error.message()));
  }
  const std::filesystem::path source_dir = work / kSourceFolder;
  auto write_failed = [&](std::string reason) {
    std::filesystem::remove_all(work, error);
    return refuse(std::move(reason));
  };
  for (const auto& [name, text] : *request.sources) {
    if (std::string failed = write_work_file(source_dir / name, text); !failed.empty()) {
      return write_failed(std::move(failed));
    }
  }
  if (std::string failed = write_work_file(work / "unit.cpp", unit); !failed.empty()) {
    return write_failed(std::move(failed));
  }
  // Preprocessed first, so the engine's lines can be rewritten and checked as the compiler sees
  // them (host/cuda_source_rewrite.hpp), then the rewritten unit compiled.
  std::vector<std::string> argv = search.compiler->command;
  argv.insert(argv.end(), flags.begin(), flags.end());
  std::vector<std::string> compile = argv;  // of the preprocessed unit: no include folders
  argv.push_back("-I" + source_dir.string());
  argv.push_back("-I" + include_dir->string());
  // The host's stand-ins for toolkit headers (<cooperative_groups.h>, ...): an -I folder, so they
  // come before the toolkit's own, which the -isystem below still gives for everything else.
  argv.push_back("-I" + (*include_dir / kCudaStandIns).string());
  if (const auto& cuda = cuda_include_dir()) {
    argv.push_back("-isystem" + *cuda);
  }
  argv.insert(argv.end(), {"-E", (work / "unit.cpp").string(), "-o", (work / "unit.ii").string()});
  compile.insert(compile.end(), {(work / "unit.ii").string(), "-o", (work / "unit.so").string()});
  ++stats_.compiles;
  const std::string prefix = source_dir.string() + "/";
  // One deadline over both compiler runs (and the rewrite between them).
  const auto started = std::chrono::steady_clock::now();
  auto left_s = [&] {
    const double spent = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    return std::max(compile_timeout_s_ - spent, 1e-3);
  };
  auto compiler_failed = [&](const CompilerRun& ran) {
    std::filesystem::remove_all(work, error);
    if (ran.timed_out) {  // the compiler's process group is killed and reaped
      return refuse(compile_exceeded_reason(compile_timeout_s_));
    }
    // The work folder is gone: the log names the sources as the engine knows them (the unit's
    // own files keep their paths: a write that failed there names where).
    std::string log = ran.output;
    erase_all(log, prefix);
    return refuse(fmt::format("{} failed (exit {}):\n{}", search.compiler->identity, ran.exit_code,
                              log.empty() ? std::string("(it printed nothing)") : log));
  };
  if (const CompilerRun ran = run_captured(argv, work, left_s()); ran.exit_code != 0) {
    return compiler_failed(ran);
  }
  // Rewritten, then compiled, in rounds: a function the host cannot build is stubbed, so one
  // kernel's unbuildable code costs only the kernels that reach it (host/stubbed_compile.hpp).
  const SourceNameFn source_name = [&](std::string_view path) -> std::optional<std::string> {
    if (!path.starts_with(prefix)) {
      return std::nullopt;
    }
    const std::string name(path.substr(prefix.size()));
    return request.sources->contains(name) ? std::optional<std::string>(name) : std::nullopt;
  };
  std::string write_problem;
  const StubbedCompile compiled = compile_with_stubs(
      read_file(work / "unit.ii"), source_name, prefix, request.name_expression,
      [&](const std::string& text) -> std::optional<CompilerRun> {
        write_problem = write_work_file(work / "unit.ii", text);
        return write_problem.empty() ? std::optional<CompilerRun>(run_captured(compile, work, left_s())) : std::nullopt;
      });
  switch (compiled.outcome) {
    case StubbedCompile::Outcome::kNotCompiled:
      return write_failed(std::move(write_problem));
    case StubbedCompile::Outcome::kRefused:
      std::filesystem::remove_all(work, error);
      return refuse(compiled.refusal);
    case StubbedCompile::Outcome::kCompilerFailed:
      return compiler_failed(*compiled.failure);
    case StubbedCompile::Outcome::kBuilt:
      break;
  }
  if (!compiled.stubbed.empty()) {
    logger().info("host JIT of {}: built without {}", what, stubbed_list(compiled.stubbed));
  }
  const ReadBackFile built = read_back_file(work / "unit.so", ReadBackRules{kHostObjectMaxBytes, {}, {}});
  if (!built.ok()) {
    return write_failed(fmt::format("the compiler's object: {}", built.message));
  }
  const HostObjectPublish fresh = cache_.publish(object, object_key, built.bytes);
  std::filesystem::remove_all(work, error);
  if (!fresh.file) {
    return refuse(fresh.problem);
  }
  HostJitResult loaded = load_object(object, *fresh.file, request);
  if (!loaded.kernel) {
    ++stats_.failures;
  }
  return loaded;
}

HostJitResult HostJit::load_object(const std::filesystem::path& object, const ReadBackFile& checked,
                                   const HostJitRequest& request) const {
  // By its name, and only while the name is still the file whose checksum held (checked again
  // once it is mapped). Not through /proc/self/fd: the loader remembers a library by the name it
  // was opened under, and a descriptor's number is reused, so a later object opened under the
  // same number would be answered with the first one. The same name is the same key, so a
  // library the loader already has under this name is this kernel.
  auto still_checked = [&] {
    struct stat now {};
    return ::stat(object.c_str(), &now) == 0 && now.st_dev == checked.info.st_dev && now.st_ino == checked.info.st_ino;
  };
  auto changed = [&] {
    return HostJitResult{std::nullopt,
                         fmt::format("host JIT of {}<{}>: {} was replaced while it was checked", request.kernel,
                                     request.params.tag(), object.string()),
                         false};
  };
  if (!still_checked()) {
    return changed();
  }
  void* library = ::dlopen(object.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (library != nullptr && !still_checked()) {
    return changed();  // stays mapped, unused: a replaced file is not trusted
  }
  if (library == nullptr) {
    const char* why = ::dlerror();
    return {std::nullopt,
            fmt::format("host JIT of {}<{}>: dlopen {}: {}", request.kernel, request.params.tag(), object.string(),
                        why != nullptr ? why : "unknown error"),
            false};
  }
  auto entry = reinterpret_cast<EntryFn>(::dlsym(library, kHostJitEntry));
  if (entry == nullptr) {
    return {std::nullopt,
            fmt::format("host JIT of {}<{}>: {} has no {}", request.kernel, request.params.tag(), object.string(),
                        kHostJitEntry),
            false};
  }
  HostKernelInfo info;
  info.kernel = std::string(request.kernel);
  info.params = request.params;
  info.display_name = detail::default_display_name(info.kernel, info.params);
  std::array<std::size_t, kMaxParameters> sizes{};
  const std::size_t count = entry(&prelude_table(), &info.invoke, sizes.data(), sizes.size());
  if (count == kTableRefused) {
    return {std::nullopt,
            fmt::format("host JIT of {}: {} was compiled against other host prelude headers than this library's "
                        "(its PreludeTable differs; set METRALE_INCLUDE_DIR to this library's include folder)",
                        info.display_name, object.string()),
            false};
  }
  if (count > sizes.size() || info.invoke == nullptr) {
    return {std::nullopt,
            fmt::format("host JIT of {}: the kernel takes {} parameters (at most {})", info.display_name, count,
                        kMaxParameters),
            false};
  }
  info.parameter_sizes.assign(sizes.begin(), sizes.begin() + static_cast<std::ptrdiff_t>(count));
  return {std::move(info), {}, false};
}

}  // namespace metrale::host
