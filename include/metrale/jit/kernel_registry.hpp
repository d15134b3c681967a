// metrale/jit/kernel_registry.hpp: kernel variants -> compiled entries -> per-device handles.
// Generic: a host engine declares its own sources and variants through the same API the
// library's ops use. Building goes memory cache, then the entry store (disk), then the remote
// tier (Redis) when there is one, then NVRTC;
// the misses of one source share one NVRTC program (a shape-specialised variant has one of its
// own), different sources compile in parallel,
// each variant once per process however many threads ask.
// Invariants: handle() takes no lock; an absent handle (0) is a normal state (not declared
// for this device, failed to compile, still building in the background, no device); a
// failed compile keeps its log in the variant's record and is logged once; the other
// variants still build.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "metrale/environment.hpp"
#include "metrale/gpu/gpu_backend.hpp"
#include "metrale/gpu/kernel_params.hpp"
#include "metrale/jit/source_set.hpp"

namespace metrale {

// The cache internals stay behind pointers (src/jit/), so an engine's build never sees them.
struct CompiledEntry;
class CompiledMemoryCache;
struct EntryStore;
class HandleTable;
class BundleSet;  // ahead-of-time bundles (src/jit/bundle.hpp)
struct EntryKey;  // a compiled entry's key (src/jit/entry_key.hpp)

// The disk cache (METRALE_CACHE_DIR, XDG_CACHE_HOME, ~/.cache/metrale), opened once per process.
std::shared_ptr<const EntryStore> default_entry_store();
// The compiled entries every registry of this process shares by default.
std::shared_ptr<CompiledMemoryCache> process_memory_cache();
// METRALE_BUNDLE_DIR of the process, opened once; null when unset.
std::shared_ptr<const BundleSet> default_bundle_set();

struct KernelVariant {
  std::string kernel;           // "ssm_ba_gates_hopper": unique with `params`
  std::string source;           // the SourceSet member holding the template
  std::string name_expression;  // "metrale::kernels::ba_gates_twin<256, 64, 8>"
  KernelParams params;
  bool background = false;  // a twin: may arrive after load() returns
};

using VariantId = std::uint32_t;
using DeviceIndex = std::uint32_t;

enum class BuildOrigin { kMemory, kBundle, kDisk, kNvrtc, kHost, kRemote };  // kRemote: the Redis tier
std::string_view to_string(BuildOrigin origin);

// One variant built for one arch (or loaded on the host), for the CLI's build table.
struct BuildRecord {
  VariantId id = 0;
  std::string kernel;
  KernelParams params;
  std::string arch;  // "sm_90", "compute_89", or "host"
  BuildOrigin origin = BuildOrigin::kNvrtc;
  std::shared_ptr<const CompiledEntry> entry;  // null on the host backend
  std::string load_error;                      // a backend's refusal, when loading failed

  [[nodiscard]] bool ok() const;
};

struct RegistryStats {
  std::uint64_t memory_hits = 0;
  std::uint64_t bundle_hits = 0;
  std::uint64_t disk_hits = 0;
  std::uint64_t nvrtc_compiles = 0;  // variants compiled (misses)
  std::uint64_t nvrtc_programs = 0;  // NVRTC programs run (a batch is one)
  std::uint64_t failures = 0;        // variants whose compile failed
  double compile_ms = 0.0;           // summed over programs
  std::uint64_t remote_hits = 0;     // fetched from the remote tier (Options::remote)
};

// One variant loaded on a device, not yet visible to handle() (KernelRegistry::Options::publish_gate).
struct LoadedVariant {
  VariantId id = 0;
  KernelHandle handle;
};

enum class LoadMode {
  kWaitForAll,       // load() returns once every variant is built and loaded
  kBackgroundTwins,  // load() returns once the non-background variants are loaded
};

class KernelRegistry {
 public:
  struct Options {
    std::shared_ptr<const EntryStore> store = default_entry_store();       // null: memory only
    std::shared_ptr<CompiledMemoryCache> memory = process_memory_cache();  // null: a private one
    std::vector<std::string> extra_options;                                // appended to the NVRTC options
    std::size_t parallelism = 0;                                           // 0: the hardware threads
    // Runs on the background thread before the deferred variants build (kBackgroundTwins only),
    // so a test can hold it and see a twin absent after load() returns; empty: no gate.
    std::function<void()> background_gate;
    // Runs each background job (`job` builds, loads and publishes one deferred batch): the
    // runtime holds itself open around it (Runtime::close waits for it) and skips a job that
    // starts after close. Empty: the job runs as it is.
    std::function<void(const std::function<void()>& job)> background_runner;
    // Ahead-of-time bundles, looked in after memory and before `store` and NVRTC. Default:
    // METRALE_BUNDLE_DIR (':'-separated directories); null: none.
    std::shared_ptr<const BundleSet> bundles = default_bundle_set();
    // Decides which handles of a loaded batch become visible to handle(): called once per batch
    // (on the background thread for background variants) before any of them is published, with
    // the device's index and the batch in declaration order; returns one flag per entry (true:
    // publish). What it refuses stays absent (0); naming and logging why is the gate's (the
    // runtime's verification, src/runtime/verification_gate.hpp). Empty: publish every handle.
    std::function<std::vector<bool>(GpuBackend&, DeviceIndex, std::span<const LoadedVariant>)> publish_gate;
    // Where NVRTC compiles read METRALE_PCH (precompiled headers) and the PCH folder's cache root;
    // the runtime passes RuntimeOptions::env.
    EnvLookup env = process_environment();
    // The remote tier (Redis: METRALE_REMOTE_CACHE, read by the runtime and the CLI, not here),
    // asked after `store` and before NVRTC; what it gives is written to `store` too, and each
    // compile is published to it. Null: none.
    std::shared_ptr<const EntryStore> remote;
    // The most one NVRTC program may take before it is abandoned (its variants then fail with
    // "compile exceeded N s"), and the longest wait for another process's compile of the same key.
    // nullopt: METRALE_COMPILE_TIMEOUT_S through `env` (default 300). ConfigError (from the
    // constructor) for a value that is not a positive number of seconds.
    std::optional<double> compile_timeout_s;
  };

  explicit KernelRegistry(SourceSet sources);
  KernelRegistry(SourceSet sources, Options options);
  KernelRegistry(const KernelRegistry&) = delete;
  KernelRegistry& operator=(const KernelRegistry&) = delete;
  ~KernelRegistry();  // waits for background builds

  // Same kernel and params again -> the same id. ArgumentError for an empty field, a source
  // not in the set, or the same kernel+params declared with another source or expression.
  VariantId declare(KernelVariant variant);
  [[nodiscard]] std::optional<VariantId> find(std::string_view kernel, const KernelParams& params) const;
  [[nodiscard]] std::size_t variant_count() const;
  [[nodiscard]] KernelVariant variant(VariantId id) const;
  // Adds (or replaces) a source; builds already running keep the set they started with.
  void add_source(std::string name, std::string text);
  // A snapshot of the source set (immutable; later add_source calls do not change it).
  [[nodiscard]] std::shared_ptr<const SourceSet> sources() const;

  // Leaves `id` out of load()'s batches and build()'s "all declared": it is built only when
  // asked for by id (load_in_background, load_now, build with ids). What the runtime does with
  // the generic form of a kernel whose shapes are pinned. ArgumentError for an unknown id.
  void load_only_on_request(VariantId id);
  [[nodiscard]] bool loads_only_on_request(VariantId id) const;

  // Compiles the given variants (all declared ones but those loaded only on request, when
  // empty) for `arch`, no device involved (the CLI's build and dump). One record per variant.
  std::vector<BuildRecord> build(std::string_view arch, std::span<const VariantId> ids = {});

  // Builds every declared variant (but those loaded only on request) for the backend (its arch chosen by
  // choose_compile_target; nothing compiled for a backend that needs no image) and loads it; returns the device's index
  // for handle(). Errors of single variants are records, not exceptions.
  DeviceIndex load(GpuBackend& backend, LoadMode mode = LoadMode::kWaitForAll);
  // Builds and loads `ids` for a backend load() attached, on a background thread (after the
  // background gate, as load()'s deferred variants); their handles appear once published.
  // ArgumentError for a backend load() has not attached.
  void load_in_background(GpuBackend& backend, std::vector<VariantId> ids);
  // The same on the calling thread: returns once `ids` are built, loaded and published (or
  // refused by the gate, or failed: their records say). ArgumentError as load_in_background.
  void load_now(GpuBackend& backend, std::span<const VariantId> ids);
  // Waits until every background build started by load() has finished; rethrows the first
  // exception one of them threw (the others are still waited for).
  void wait_background();

  // The launch path: lock-free; 0 when absent.
  [[nodiscard]] KernelHandle handle(DeviceIndex device, VariantId id) const noexcept;
  [[nodiscard]] std::optional<DeviceIndex> device_index(const GpuBackend& backend) const;

  // The latest record of `id` on the arch ("host" for a host backend).
  [[nodiscard]] std::optional<BuildRecord> record(VariantId id, std::string_view arch) const;
  [[nodiscard]] std::vector<BuildRecord> records() const;
  [[nodiscard]] RegistryStats stats() const;

  // The key a bundle entry of `id` for `arch` is written under and looked up by.
  [[nodiscard]] EntryKey bundle_key(VariantId id, std::string_view arch) const;

  // The arch a backend's variants are compiled for; nullopt for a backend needing no image
  // or one whose compute capability NVRTC cannot target.
  [[nodiscard]] static std::optional<std::string> arch_for(const GpuBackend& backend);

 private:
  std::vector<BuildRecord> build_ids(std::string_view arch, std::span<const VariantId> ids);
  void load_ids(GpuBackend& backend, DeviceIndex device, std::span<const VariantId> ids);
  // Starts one background job (the gate, then load_ids) through Options::background_runner.
  // Call with background_mutex_ held.
  void start_background(GpuBackend& backend, DeviceIndex device, std::vector<VariantId> ids);
  // The gate's word on a loaded batch, then the handles it lets through set in the table.
  void publish(GpuBackend& backend, DeviceIndex device, std::span<const LoadedVariant> loaded);
  DeviceIndex attach(GpuBackend& backend);
  void keep_record(const BuildRecord& record);

  mutable std::mutex sources_mutex_;
  std::shared_ptr<const SourceSet> sources_;  // copy-on-write: builds hold a snapshot
  Options options_;

  mutable std::mutex variants_mutex_;
  std::vector<KernelVariant> variants_;
  std::vector<bool> on_request_;  // by id: left out of load() and build()'s "all declared"

  std::unique_ptr<HandleTable> handles_;
  mutable std::mutex devices_mutex_;
  std::vector<const GpuBackend*> devices_;

  mutable std::mutex records_mutex_;
  std::map<std::pair<VariantId, std::string>, BuildRecord> records_;

  struct Counters {
    std::atomic<std::uint64_t> memory_hits{0};
    std::atomic<std::uint64_t> bundle_hits{0};
    std::atomic<std::uint64_t> disk_hits{0};
    std::atomic<std::uint64_t> nvrtc_compiles{0};
    std::atomic<std::uint64_t> nvrtc_programs{0};
    std::atomic<std::uint64_t> failures{0};
    std::atomic<std::uint64_t> compile_us{0};
    std::atomic<std::uint64_t> remote_hits{0};
  } counters_;

  std::mutex background_mutex_;
  std::vector<std::future<void>> background_;
};

}  // namespace metrale
