// runtime.cpp: opening a runtime (backend, target, levers, kernels) and the op entry points.
#include "metrale/runtime.hpp"

#include <fmt/format.h>

#include "gpu/cuda_backend.hpp"
#include "ground/log.hpp"
#include "host/host_backend.hpp"
#include "jit/bundle.hpp"
#include "jit/disk_entry_store.hpp"
#include "metrale/error.hpp"
#include "ops/op_kernels.hpp"
#include "target/hardware_loader.hpp"
#include "target/target_selection.hpp"

namespace metrale {

namespace {

HardwareTarget choose_target(const std::vector<HardwareTarget>& targets, const RuntimeOptions& options,
                             const GpuBackend* backend) {
  if (options.target) {
    const HardwareTarget* named = find_target(targets, *options.target);
    if (named == nullptr) {
      throw ConfigError(fmt::format("target '{}' is not one of the HARDWARE.toml targets", *options.target));
    }
    HardwareTarget chosen = *named;
    if (chosen.arch.empty() && backend != nullptr && backend->compute_capability()) {
      chosen.arch = backend->compute_capability()->sm_arch();
    }
    return chosen;
  }
  if (backend != nullptr && backend->needs_compiled_image() && backend->compute_capability()) {
    return select_target(targets, *backend->compute_capability());
  }
  return *find_target(targets, kDefaultTarget);
}

}  // namespace

Runtime::~Runtime() {
  // Background builds hold the registry; finish them before the backend goes away. A failed one
  // is logged, never thrown: a destructor that throws terminates the engine.
  if (registry_) {
    try {
      registry_->wait_background();
    } catch (const std::exception& error) {
      logger().error("a background kernel build failed: {}", error.what());
    } catch (...) {
      logger().error("a background kernel build failed with a non-standard exception");
    }
  }
}

std::unique_ptr<Runtime> Runtime::open(RuntimeOptions options) {
  std::unique_ptr<GpuBackend> backend;
  std::string reason;
  switch (options.backend) {
    case BackendChoice::kHost: {
      auto host = std::make_unique<HostBackend>(HostBackendOptions{
          .sm_count = options.host_sm_count,
          .worker_threads = options.host_worker_threads,
          .jit_cache_dir = options.cache_dir ? std::optional<std::filesystem::path>(
                                                   std::filesystem::path(*options.cache_dir) / "host")
                                             : std::nullopt,
          .jit_env = options.env});
      for (HostKernelInfo& kernel : options.host_kernels) {
        host->add_kernel(std::move(kernel));
      }
      backend = std::move(host);
      break;
    }
    case BackendChoice::kAuto:
    case BackendChoice::kCuda: {
      CudaBackendOpen opened = CudaBackend::open(options.device_ordinal);
      backend = std::move(opened.backend);
      reason = std::move(opened.reason);
      break;
    }
  }
  std::unique_ptr<Runtime> runtime(new Runtime());
  runtime->backend_ = std::move(backend);
  runtime->no_device_reason_ = runtime->backend_ ? std::string() : reason;
  runtime->initialise(options);
  return runtime;
}

std::unique_ptr<Runtime> Runtime::open_with(std::unique_ptr<GpuBackend> backend, RuntimeOptions options) {
  if (!backend) {
    throw ArgumentError("Runtime::open_with: the backend is null");
  }
  std::unique_ptr<Runtime> runtime(new Runtime());
  runtime->backend_ = std::move(backend);
  runtime->initialise(options);
  return runtime;
}

void Runtime::initialise(RuntimeOptions& options) {
  KernelCatalog catalog = ops::library_catalog();
  for (KernelDeclaration& declaration : options.kernels) {
    catalog.add(std::move(declaration));
  }
  const auto targets = load_targets(options.env, catalog);
  target_ = choose_target(targets, options, backend_.get());
  levers_ = resolve_levers(target_, options.env);
  SourceSet sources;
  sources.add_embedded_templates(options.env);
  for (auto& [name, text] : options.sources) {
    sources.add_source(name, std::move(text));
  }
  const bool given = options.registry.has_value();
  KernelRegistry::Options registry_options = given ? std::move(*options.registry) : KernelRegistry::Options{};
  if (!given && options.cache_dir) {
    registry_options.store = std::make_shared<const EntryStore>(
        disk_entry_store(std::make_shared<DiskCache>(DiskCache::open_at(*options.cache_dir))));
  }
  std::vector<std::filesystem::path> bundle_dirs(options.bundle_dirs.begin(), options.bundle_dirs.end());
  if (const std::optional<std::string> listed = options.env("METRALE_BUNDLE_DIR")) {
    for (std::filesystem::path& dir : BundleSet::split_dirs(*listed)) {
      bundle_dirs.push_back(std::move(dir));
    }
  }
  if (!bundle_dirs.empty()) {
    registry_options.bundles = std::make_shared<const BundleSet>(bundle_dirs);
  } else if (!given) {
    registry_options.bundles = nullptr;  // the environment given names none
  }
  registry_ = std::make_unique<KernelRegistry>(std::move(sources), std::move(registry_options));
  variant_ids_ = ops::declare_target_kernels(*registry_, target_, catalog);
  const ops::BaGatesKernels ba_defaults;
  const ops::Fp8QuantKernels fp8_defaults;
  ba_parent_ = resolve_slot(ops::kBaGatesParentKernel, ba_defaults.parent_params);
  ba_twin_ = resolve_slot(ops::kBaGatesTwinKernel, ba_defaults.twin_params);
  ba_mma_ = resolve_slot(ops::kBaGatesMmaKernel, ba_defaults.mma_params);
  fp8_shared_ = resolve_slot(ops::kFp8QuantSharedKernel, fp8_defaults.shared_params);
  fp8_twin_ = resolve_slot(ops::kFp8QuantTwinKernel, fp8_defaults.twin_params);
  if (backend_) {
    logger().info("metrale: {} on target {} ({})", backend_->describe(), target_.name, target_.source);
    device_ = registry_->load(*backend_, options.load_mode);
  } else {
    logger().info("metrale: no device ({}); target {} for compiling only", no_device_reason_, target_.name);
  }
}

std::optional<VariantId> Runtime::variant_id(std::string_view kernel) const {
  const auto found = variant_ids_.find(kernel);
  return found == variant_ids_.end() ? std::nullopt : std::optional<VariantId>(found->second);
}

Runtime::OpKernelSlot Runtime::resolve_slot(std::string_view kernel, const KernelParams& fallback) const {
  const KernelEntry* entry = target_.find_kernel(kernel);
  return OpKernelSlot{variant_id(kernel), entry != nullptr ? entry->params : fallback};
}

KernelHandle Runtime::kernel_handle(std::string_view kernel) const {
  const std::optional<VariantId> id = variant_id(kernel);
  return (backend_ && id) ? registry_->handle(device_, *id) : KernelHandle{};
}

KernelHandle Runtime::handle(const OpKernelSlot& slot) const {
  // The launch path: one lock-free read, so a twin arriving in the background is seen at once.
  return (backend_ && slot.id) ? registry_->handle(device_, *slot.id) : KernelHandle{};
}

ops::BaGatesKernels Runtime::ba_gates_kernels() const {
  ops::BaGatesKernels kernels{handle(ba_parent_), handle(ba_twin_), ba_parent_.params, ba_twin_.params,
                              target_.sm_count.value_or(kFallbackSmCount)};
  kernels.mma = handle(ba_mma_);
  kernels.mma_params = ba_mma_.params;
  return kernels;
}

ops::Fp8QuantKernels Runtime::fp8_quant_kernels() const {
  return ops::Fp8QuantKernels{handle(fp8_shared_), handle(fp8_twin_), fp8_shared_.params, fp8_twin_.params,
                              target_.sm_count.value_or(kFallbackSmCount)};
}

GpuBackend& Runtime::require_device() {
  if (!backend_) {
    throw BackendError(fmt::format("no device: {}", no_device_reason_));
  }
  return *backend_;
}

ops::BaGatesPick Runtime::ssm_ba_gates(const ops::BaGatesArgs& args, std::uint64_t stream) {
  const ops::BaGatesLevers levers{levers_.ssm_ba_gates_hopper.value, levers_.ssm_ba_gates_tensor_core.value};
  return ops::ssm_ba_gates(require_device(), ba_gates_kernels(), levers, args, stream);
}

ops::Fp8QuantPick Runtime::fp8_act_quant(const ops::Fp8QuantArgs& args, std::uint64_t stream) {
  return ops::fp8_act_quant(require_device(), fp8_quant_kernels(), levers_.fp8_act_quant_hopper.value, args, stream);
}

}  // namespace metrale
