// host/host_jit.hpp: the host backend's run-time compiler for a declared variant that has no
// built-in host instantiation (an engine's kernel): the system C++ compiler builds the host
// prelude, the variant's source and one `extern "C"` entry that names the instantiation by its
// expression into a shared object, which is loaded (dlopen) and cached on disk
// (host/host_object_cache.hpp), compiled once per key per machine (its compile lock) and never for
// longer than the compile deadline (the compiler's process group is then killed).
// Invariants: the cache key follows the NVRTC rules (jit/entry_key.hpp: kernel, params, arch
// "host", the compiler's identity in place of NVRTC's version, the options, and the digest of
// the source with every set member it includes, plus the public headers the prelude reads), so
// a second run of the same kernel loads the object without running the compiler; a profiled
// object's key and file name say "profiled" and its flags, so it never stands in for a plain one
// or the other way round; no compiler,
// a compile error or a refused load is a reason (the compiler's log quoted), never an
// exception; a cached object is loaded only once its seal holds (host/host_object_file.hpp: size,
// checksum, key, a regular file), a bad one removed and compiled again with the reason logged;
// every source is compiled as the registered text under its checked name (source_name_problem),
// never as a file of that name on disk; a loaded object stays mapped for the process (its kernels may still be
// running); an object exports only its entry and needs no symbol of the process: the entry is handed the prelude's
// PreludeTable (host/prelude_table.hpp) and refuses one from other headers.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "host/host_compiler.hpp"
#include "host/host_include_dir.hpp"
#include "host/host_object_cache.hpp"
#include "jit/read_back_file.hpp"
#include "metrale/environment.hpp"
#include "metrale/host/host_kernel.hpp"

namespace metrale::host {

struct HostJitRequest {
  std::string_view kernel;           // "engine_mirror"
  KernelParams params;               // {128, 0, 0}
  std::string_view name_expression;  // "engine::mirror_scale<128>"
  std::string_view source;           // the member of `sources` holding the template
  const std::map<std::string, std::string, std::less<>>* sources = nullptr;
  // A profiled object (the built-in profiled unit's flags and define, host/profiled_host_flags.hpp):
  // its accesses and arithmetic are recorded like those of the profiled built-ins.
  bool profiled = false;
  // __CUDA_ARCH__ over the kernel's source: the capability the backend stands in for (900: 9.0).
  unsigned cuda_arch = 900;
};

struct HostJitResult {
  std::optional<HostKernelInfo> kernel;  // absent: see reason
  std::string reason;
  bool from_cache = false;
};

struct HostJitStats {
  std::uint64_t compiles = 0;    // compiler runs (successful or not)
  std::uint64_t cache_hits = 0;  // objects loaded from the cache without a compiler run
  std::uint64_t failures = 0;    // results without a kernel
};

// The C entry every host JIT object exports (host_jit_unit) and the loader looks up.
inline constexpr const char* kHostJitEntry = "metrale_host_kernel_v2";

// The translation unit compiled for `name_expression` from `source`. Pure. A profiled unit
// includes the standard headers before the prelude (whose special functions become macros) and
// the source inside namespace metrale_profiled_jit: the executable exports the plain built-in
// instantiations (--export-dynamic), and an object's own template instantiations and inline
// helpers of the same names would otherwise bind to those unrecorded copies. Both read the toolkit
// headers with a host form first (metrale/host/cuda_include/metrale_toolkit_host.hpp) and define NVRTC's device
// macros over the source only: __CUDACC__, __CUDACC_RTC__ and __CUDA_ARCH__ = `cuda_arch`.
std::string host_jit_unit(std::string_view source, std::string_view name_expression, bool profiled = false,
                          unsigned cuda_arch = 900);

// The system compiler's flags for a unit: the plain ones, and for a profiled unit the built-in
// profiled unit's flags for the compiler's family (clang when its `--version` line says so, else
// g++'s) and its define. Pure.
std::vector<std::string> host_jit_flags(std::string_view compiler_identity, bool profiled);

// Why a compiler of this identity may not build a profiled object ("" when it may): it must be of
// the family the library's profiled built-ins were built with, or the two would record different
// traffic for the same kernel. Pure.
std::string host_jit_profiled_refusal(std::string_view compiler_identity);

class HostJit {
 public:
  // `cache_dir`: where objects are kept (created when missing), a subfolder of a cache root. A
  // loaded object is code, so the root and its chain must pass jit/cache_trust.hpp (absolute, the
  // current user's, writable by no one else, nor replaceable through a folder above), the folder
  // too, and so must an object before it is loaded; otherwise (and for nullopt) a private folder
  // (mkdtemp) is used, nothing reused across processes, and removed with the HostJit.
  // `compile_timeout_s`: the most one compiler run may take before its process group is killed and
  // the build fails with "compile exceeded N s" (nullopt: METRALE_COMPILE_TIMEOUT_S through `env`,
  // default 300; ConfigError for a value that is not a positive number), and the longest wait for
  // another process compiling the same key (jit/compile_lock.hpp): the object cache is looked in
  // again once the key's lock is held, so a machine compiles each key once.
  HostJit(std::optional<std::filesystem::path> cache_dir, EnvLookup env,
          std::optional<double> compile_timeout_s = std::nullopt);
  HostJit(const HostJit&) = delete;
  HostJit& operator=(const HostJit&) = delete;
  ~HostJit();

  HostJitResult build(const HostJitRequest& request);
  [[nodiscard]] HostJitStats stats() const;

 private:
  HostJitResult load_object(const std::filesystem::path& object, const ReadBackFile& checked,
                            const HostJitRequest& request) const;
  // The cached object, loaded, when there is one that loads (called with mutex_ held).
  std::optional<HostJitResult> load_cached(const std::filesystem::path& object, const std::string& object_key,
                                           const HostJitRequest& request);

  std::optional<CompilerSearch> compiler_;  // found on first use
  std::string headers_digest_;              // of the include folder, with compiler_
  HostObjectCache cache_;                   // used with mutex_ held
  EnvLookup env_;
  double compile_timeout_s_ = kDefaultCompileTimeoutS;
  mutable std::mutex mutex_;
  HostJitStats stats_;
};

}  // namespace metrale::host
