// kernel_registry.cpp: declaration, building, loading per device, records and statistics.
// The build pipeline itself lives in variant_builder.cpp.
// Past ~400 lines: the registry's public methods, most a few lines each, in the order a kernel
// meets them (declare, build, attach, load, publish, records), so its life reads top to bottom.
#include "metrale/jit/kernel_registry.hpp"

#include <algorithm>
#include <exception>
#include <thread>

#include "ground/log.hpp"
#include "jit/compile_target.hpp"
#include "jit/compiled_entry.hpp"
#include "jit/compiled_memory_cache.hpp"
#include "jit/disk_entry_store.hpp"
#include "jit/entry_store.hpp"
#include "jit/handle_table.hpp"
#include "jit/nvrtc_compiler.hpp"
#include "metrale/error.hpp"
#include "variant_builder.hpp"

namespace metrale {

std::shared_ptr<const BundleSet> default_bundle_set() { return BundleSet::from_environment(); }

std::string_view to_string(BuildOrigin origin) {
  switch (origin) {
    case BuildOrigin::kMemory:
      return "memory";
    case BuildOrigin::kBundle:
      return "bundle";
    case BuildOrigin::kDisk:
      return "disk";
    case BuildOrigin::kNvrtc:
      return "nvrtc";
    case BuildOrigin::kHost:
      return "host";
    case BuildOrigin::kRemote:
      return "remote";
  }
  return "?";
}

std::shared_ptr<const EntryStore> default_entry_store() {
  static const auto store = std::make_shared<const EntryStore>(default_disk_entry_store());
  return store;
}

std::shared_ptr<CompiledMemoryCache> process_memory_cache() { return CompiledMemoryCache::process(); }

bool BuildRecord::ok() const { return load_error.empty() && (entry == nullptr || entry->ok); }

KernelRegistry::KernelRegistry(SourceSet sources) : KernelRegistry(std::move(sources), Options{}) {}

KernelRegistry::KernelRegistry(SourceSet sources, Options options)
    : sources_(std::make_shared<const SourceSet>(std::move(sources))),
      options_(std::move(options)),
      handles_(std::make_unique<HandleTable>()) {
  if (options_.store == nullptr) {
    options_.store = std::make_shared<const EntryStore>();  // no functions: memory only
  }
  if (options_.memory == nullptr) {
    options_.memory = std::make_shared<CompiledMemoryCache>();
  }
  if (options_.parallelism == 0) {
    options_.parallelism = std::max(1U, std::thread::hardware_concurrency());
  }
  options_.compile_timeout_s =
      compile_timeout_s(options_.env, options_.compile_timeout_s, "KernelRegistry::Options::compile_timeout_s");
}

KernelRegistry::~KernelRegistry() {
  try {
    wait_background();
  } catch (const std::exception& error) {
    logger().error("a background kernel build failed: {}", error.what());
  }
}

void KernelRegistry::add_source(std::string name, std::string text) {
  std::lock_guard lock(sources_mutex_);
  auto updated = std::make_shared<SourceSet>(*sources_);
  updated->add_source(std::move(name), std::move(text));
  sources_ = std::move(updated);
}

KernelHandle KernelRegistry::handle(DeviceIndex device, VariantId id) const noexcept {
  return handles_->get(id, device);
}

std::shared_ptr<const SourceSet> KernelRegistry::sources() const {
  std::lock_guard lock(sources_mutex_);
  return sources_;
}

VariantId KernelRegistry::declare(KernelVariant variant) {
  if (variant.kernel.empty() || variant.source.empty() || variant.name_expression.empty()) {
    throw ArgumentError("kernel variant '" + variant.kernel + "' needs a kernel name, a source and a name expression");
  }
  if (!sources()->contains(variant.source)) {
    throw ArgumentError("kernel variant '" + variant.kernel + "': source '" + variant.source +
                        "' is not in the registry's source set");
  }
  std::lock_guard lock(variants_mutex_);
  for (std::size_t i = 0; i < variants_.size(); ++i) {
    const KernelVariant& known = variants_[i];
    if (known.kernel != variant.kernel || known.params != variant.params) {
      continue;
    }
    if (known.source != variant.source || known.name_expression != variant.name_expression) {
      throw ArgumentError("kernel variant '" + variant.kernel + "' (" + variant.params.tag() +
                          ") is already declared with source '" + known.source + "' and expression '" +
                          known.name_expression + "'");
    }
    return static_cast<VariantId>(i);
  }
  if (variants_.size() >= HandleTable::kMaxVariants) {
    throw ArgumentError("too many kernel variants (at most " + std::to_string(HandleTable::kMaxVariants) + ")");
  }
  variants_.push_back(std::move(variant));
  on_request_.push_back(false);
  return static_cast<VariantId>(variants_.size() - 1);
}

std::optional<VariantId> KernelRegistry::find(std::string_view kernel, const KernelParams& params) const {
  std::lock_guard lock(variants_mutex_);
  for (std::size_t i = 0; i < variants_.size(); ++i) {
    if (variants_[i].kernel == kernel && variants_[i].params == params) {
      return static_cast<VariantId>(i);
    }
  }
  return std::nullopt;
}

void KernelRegistry::load_only_on_request(VariantId id) {
  std::lock_guard lock(variants_mutex_);
  if (id >= variants_.size()) {
    throw ArgumentError("load_only_on_request: kernel variant id " + std::to_string(id) + " was never declared (" +
                        std::to_string(variants_.size()) + " declared)");
  }
  on_request_[id] = true;
}

bool KernelRegistry::loads_only_on_request(VariantId id) const {
  std::lock_guard lock(variants_mutex_);
  return id < on_request_.size() && on_request_[id];
}

std::size_t KernelRegistry::variant_count() const {
  std::lock_guard lock(variants_mutex_);
  return variants_.size();
}

KernelVariant KernelRegistry::variant(VariantId id) const {
  std::lock_guard lock(variants_mutex_);
  if (id >= variants_.size()) {
    throw ArgumentError("kernel variant id " + std::to_string(id) + " was never declared (" +
                        std::to_string(variants_.size()) + " declared)");
  }
  return variants_[id];
}

std::vector<BuildRecord> KernelRegistry::build(std::string_view arch, std::span<const VariantId> ids) {
  if (!ids.empty()) {
    return build_ids(arch, ids);
  }
  std::vector<VariantId> all;
  {
    std::lock_guard lock(variants_mutex_);
    for (std::size_t i = 0; i < variants_.size(); ++i) {
      if (!on_request_[i]) {
        all.push_back(static_cast<VariantId>(i));
      }
    }
  }
  return build_ids(arch, all);
}

std::vector<BuildRecord> KernelRegistry::build_ids(std::string_view arch, std::span<const VariantId> ids) {
  const std::shared_ptr<const SourceSet> snapshot = sources();
  std::vector<detail::BuildJob> jobs;
  jobs.reserve(ids.size());
  for (const VariantId id : ids) {
    KernelVariant declared = variant(id);
    EntryKey key = detail::make_entry_key(declared, arch, *snapshot, options_.extra_options);
    jobs.push_back(detail::BuildJob{id, std::move(declared), std::move(key)});
  }
  const detail::BuildContext context{*snapshot,
                                     *options_.memory,
                                     *options_.store,
                                     arch,
                                     options_.extra_options,
                                     options_.parallelism,
                                     options_.bundles.get(),
                                     &options_.env,
                                     options_.remote.get(),
                                     *options_.compile_timeout_s};
  const detail::BuildSummary summary = detail::build_variants(jobs, context);
  counters_.nvrtc_programs += summary.programs;
  counters_.nvrtc_compiles += summary.compiled_variants;
  counters_.compile_us += static_cast<std::uint64_t>(summary.compile_ms * 1000.0);
  std::vector<BuildRecord> built;
  built.reserve(jobs.size());
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    const detail::BuildOutcome& outcome = summary.outcomes[i];
    if (outcome.origin == BuildOrigin::kMemory) {
      ++counters_.memory_hits;
    } else if (outcome.origin == BuildOrigin::kBundle) {
      ++counters_.bundle_hits;
    } else if (outcome.origin == BuildOrigin::kDisk) {
      ++counters_.disk_hits;
    } else if (outcome.origin == BuildOrigin::kRemote) {
      ++counters_.remote_hits;
    }
    if (!outcome.entry->ok) {
      ++counters_.failures;
    }
    BuildRecord record{
        outcome.id, jobs[i].variant.kernel, jobs[i].variant.params, std::string(arch), outcome.origin, outcome.entry,
        {}};
    keep_record(record);
    built.push_back(std::move(record));
  }
  return built;
}

EntryKey KernelRegistry::bundle_key(VariantId id, std::string_view arch) const {
  return detail::make_bundle_key(variant(id), arch, *sources(), options_.extra_options);
}

std::optional<std::string> KernelRegistry::arch_for(const GpuBackend& backend) {
  if (!backend.needs_compiled_image()) {
    return std::nullopt;
  }
  const std::optional<ComputeCapability> capability = backend.compute_capability();
  if (!capability) {
    return std::nullopt;
  }
  // Without NVRTC nothing can be compiled: look for the device's own SM in bundles and caches.
  if (!nvrtc_available()) {
    return capability->sm_arch();
  }
  const std::optional<CompileTarget> target = choose_compile_target(*capability, nvrtc_supported_archs());
  return target ? std::optional<std::string>(target->arch) : std::nullopt;
}

DeviceIndex KernelRegistry::attach(GpuBackend& backend) {
  std::lock_guard lock(devices_mutex_);
  for (std::size_t i = 0; i < devices_.size(); ++i) {
    if (devices_[i] == &backend) {
      return static_cast<DeviceIndex>(i);
    }
  }
  if (devices_.size() >= HandleTable::kMaxDevices) {
    throw BackendError("a registry drives at most " + std::to_string(HandleTable::kMaxDevices) + " devices; " +
                       backend.device_key() + " is one too many");
  }
  devices_.push_back(&backend);
  return static_cast<DeviceIndex>(devices_.size() - 1);
}

std::optional<DeviceIndex> KernelRegistry::device_index(const GpuBackend& backend) const {
  std::lock_guard lock(devices_mutex_);
  for (std::size_t i = 0; i < devices_.size(); ++i) {
    if (devices_[i] == &backend) {
      return static_cast<DeviceIndex>(i);
    }
  }
  return std::nullopt;
}

DeviceIndex KernelRegistry::load(GpuBackend& backend, LoadMode mode) {
  const DeviceIndex device = attach(backend);
  std::vector<VariantId> now;
  std::vector<VariantId> later;
  {
    std::lock_guard lock(variants_mutex_);
    for (std::size_t i = 0; i < variants_.size(); ++i) {
      if (on_request_[i]) {
        continue;
      }
      const bool defer = mode == LoadMode::kBackgroundTwins && variants_[i].background;
      (defer ? later : now).push_back(static_cast<VariantId>(i));
    }
  }
  load_ids(backend, device, now);
  if (!later.empty()) {
    std::lock_guard lock(background_mutex_);
    start_background(backend, device, std::move(later));
  }
  return device;
}

void KernelRegistry::load_in_background(GpuBackend& backend, std::vector<VariantId> ids) {
  const std::optional<DeviceIndex> device = device_index(backend);
  if (!device) {
    throw ArgumentError("load_in_background: " + backend.describe() + " was never loaded on this registry");
  }
  std::lock_guard lock(background_mutex_);
  start_background(backend, *device, std::move(ids));
}

void KernelRegistry::start_background(GpuBackend& backend, DeviceIndex device, std::vector<VariantId> ids) {
  background_.push_back(std::async(std::launch::async, [this, &backend, device, ids = std::move(ids)] {
    const std::function<void()> job = [&] {
      if (options_.background_gate) {
        options_.background_gate();
      }
      load_ids(backend, device, ids);
    };
    if (options_.background_runner) {
      options_.background_runner(job);
    } else {
      job();
    }
  }));
}

void KernelRegistry::load_now(GpuBackend& backend, std::span<const VariantId> ids) {
  const std::optional<DeviceIndex> device = device_index(backend);
  if (!device) {
    throw ArgumentError("load_now: " + backend.describe() + " was never loaded on this registry");
  }
  load_ids(backend, *device, ids);
}

void KernelRegistry::load_ids(GpuBackend& backend, DeviceIndex device, std::span<const VariantId> ids) {
  if (!backend.needs_compiled_image()) {
    const std::shared_ptr<const SourceSet> snapshot = sources();
    std::vector<LoadedVariant> loaded;
    for (const VariantId id : ids) {
      const KernelVariant declared = variant(id);
      BuildRecord record{id, declared.kernel, declared.params, "host", BuildOrigin::kHost, nullptr, {}};
      try {
        loaded.push_back(LoadedVariant{id, backend.load(LoadRequest{declared.kernel,
                                                                    declared.params,
                                                                    declared.name_expression,
                                                                    {},
                                                                    {},
                                                                    ImageKind::kCubin,
                                                                    declared.source,
                                                                    &snapshot->sources()})});
      } catch (const Error& error) {
        record.load_error = error.what();
        logger().warn("kernel {} could not be loaded on {}: {}", declared.kernel, backend.device_key(), error.what());
      }
      keep_record(record);
    }
    publish(backend, device, loaded);
    return;
  }
  // A bundle built for the device's own SM answers the arch question without NVRTC, so a
  // process served from bundles never loads it; otherwise NVRTC says which archs it targets.
  const std::optional<ComputeCapability> capability = backend.compute_capability();
  const std::optional<std::string> arch =
      capability && options_.bundles && options_.bundles->has_arch(capability->sm_arch())
          ? std::optional<std::string>(capability->sm_arch())
          : arch_for(backend);
  if (!arch) {
    logger().warn("{}: NVRTC {} cannot target this device; every kernel handle stays absent", backend.describe(),
                  nvrtc_version());
    return;
  }
  std::vector<LoadedVariant> loaded;
  for (BuildRecord& record : build_ids(*arch, ids)) {
    if (!record.entry->ok) {
      continue;
    }
    const KernelVariant declared = variant(record.id);
    try {
      loaded.push_back(LoadedVariant{
          record.id,
          backend.load(LoadRequest{declared.kernel, declared.params, declared.name_expression,
                                   record.entry->lowered_name, record.entry->image(), record.entry->image_kind()})});
    } catch (const Error& error) {
      record.load_error = error.what();
      logger().warn("kernel {} could not be loaded on {}: {}", declared.kernel, backend.device_key(), error.what());
      keep_record(record);
    }
  }
  publish(backend, device, loaded);
}

void KernelRegistry::publish(GpuBackend& backend, DeviceIndex device, std::span<const LoadedVariant> loaded) {
  std::vector<bool> allowed(loaded.size(), true);
  if (options_.publish_gate && !loaded.empty()) {
    allowed = options_.publish_gate(backend, device, loaded);
    if (allowed.size() != loaded.size()) {
      throw BackendError("the registry's publish gate answered " + std::to_string(allowed.size()) + " flags for " +
                         std::to_string(loaded.size()) + " loaded kernels");
    }
  }
  for (std::size_t i = 0; i < loaded.size(); ++i) {
    if (allowed[i]) {
      handles_->set(loaded[i].id, device, loaded[i].handle);
    }
  }
}

void KernelRegistry::wait_background() {
  std::vector<std::future<void>> pending;
  {
    std::lock_guard lock(background_mutex_);
    pending.swap(background_);
  }
  std::exception_ptr first;
  for (std::future<void>& build : pending) {
    try {
      build.get();
    } catch (...) {
      if (!first) {
        first = std::current_exception();
      }
    }
  }
  if (first) {
    std::rethrow_exception(first);
  }
}

void KernelRegistry::keep_record(const BuildRecord& record) {
  std::lock_guard lock(records_mutex_);
  records_.insert_or_assign(std::make_pair(record.id, record.arch), record);
}

std::optional<BuildRecord> KernelRegistry::record(VariantId id, std::string_view arch) const {
  std::lock_guard lock(records_mutex_);
  auto it = records_.find(std::make_pair(id, std::string(arch)));
  return it == records_.end() ? std::nullopt : std::optional<BuildRecord>(it->second);
}

std::vector<BuildRecord> KernelRegistry::records() const {
  std::lock_guard lock(records_mutex_);
  std::vector<BuildRecord> out;
  out.reserve(records_.size());
  for (const auto& [key, record] : records_) {
    out.push_back(record);
  }
  return out;
}

RegistryStats KernelRegistry::stats() const {
  return RegistryStats{counters_.memory_hits.load(),
                       counters_.bundle_hits.load(),
                       counters_.disk_hits.load(),
                       counters_.nvrtc_compiles.load(),
                       counters_.nvrtc_programs.load(),
                       counters_.failures.load(),
                       static_cast<double>(counters_.compile_us.load()) / 1000.0,
                       counters_.remote_hits.load()};
}

}  // namespace metrale
