// runtime.cpp: opening a runtime (backend, target, levers, kernels, the ops it serves) and the
// op calls by name or OpRef (on a capturing stream through the capture context of
// runtime_prepare.cpp). Knows no op: every op arrives as a declaration (metrale/ops/op_declaration.hpp).
// Past ~400 lines: open's stages are one function so their order reads in one place, and the op
// calls by name and by OpRef share its resolved-op table; the rest is short accessors.
#include "metrale/runtime.hpp"

#include <fmt/format.h>

#include "gpu/cuda_backend.hpp"
#include "ground/log.hpp"
#include "hardware/hardware_loader.hpp"
#include "hardware/target_selection.hpp"
#include "host/host_backend.hpp"
#include "jit/bundle.hpp"
#include "jit/cache_location.hpp"
#include "jit/compile_deadline.hpp"
#include "jit/disk_entry_store.hpp"
#include "jit/remote_entry_store.hpp"
#include "metrale/error.hpp"
#include "ops/op_capture.hpp"
#include "ops/op_kernels.hpp"
#include "runtime/prepared_gpu.hpp"
#include "runtime/verification_gate.hpp"

namespace metrale {

namespace {

HardwareTarget choose_target(const std::vector<HardwareTarget>& targets, const RuntimeOptions& options,
                             const GpuBackend* backend) {
  if (options.target) {
    const HardwareTarget* named = find_target(targets, *options.target);
    if (named == nullptr) {
      // The valid names in the message: a typo is fixed from the error alone.
      std::string known;
      for (const HardwareTarget& target : targets) {
        known += (known.empty() ? "" : ", ") + target.name;
      }
      throw ConfigError(
          fmt::format("target '{}' is not one of the HARDWARE.toml targets (known: {})", *options.target, known));
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

// Verification as asked: RuntimeOptions::verify over METRALE_VERIFY (on by default); verdicts
// beside the disk cache's entries (the registry's own cache when the caller gave one is not known
// here: then only an explicit cache_dir keeps them).
VerificationSettings verification_settings(const RuntimeOptions& options) {
  VerificationSettings settings;
  if (options.verify) {
    settings.enabled = *options.verify;
  } else if (const std::optional<std::string> value = options.env("METRALE_VERIFY"); value && !value->empty()) {
    settings.enabled = parse_verify_setting(*value);
  }
  if (options.verify_time_limit_ms == 0) {
    throw ConfigError("RuntimeOptions::verify_time_limit_ms is 0: a check needs some time (default 30000 ms)");
  }
  settings.time_limit = std::chrono::milliseconds(options.verify_time_limit_ms);
  if (options.cache_dir) {
    settings.verdict_dir = std::filesystem::path(*options.cache_dir) / "verdicts";
  } else if (!options.registry) {
    if (const CacheDirChoice choice = choose_cache_dir(options.env); choice.dir) {
      settings.verdict_dir = *choice.dir / "verdicts";
    }
  }
  return settings;
}

}  // namespace

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
          .jit_env = options.env,
          .jit_compile_timeout_s =
              compile_timeout_s(options.env, options.compile_timeout_s, "RuntimeOptions::compile_timeout_s")});
      for (HostKernelInfo& kernel : options.host_kernels) {
        host->add_kernel(std::move(kernel));
      }
      backend = std::move(host);
      break;
    }
    case BackendChoice::kNone:
      reason = "no device asked for (the runtime explains and compiles only)";
      break;
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
  has_device_ = backend_ != nullptr;
  ops_ = ops::library_ops();
  for (ops::OpDeclaration& op : options.ops) {
    ops_.add(std::move(op));
  }
  KernelCatalog catalog = ops::library_catalog();
  for (KernelDeclaration& declaration : options.kernels) {
    catalog.add(std::move(declaration));
  }
  for (LeverSpec& lever : ops_.levers()) {
    catalog.add_lever(std::move(lever));
  }
  const auto targets = load_targets(options.env, catalog);
  target_ = choose_target(targets, options, backend_.get());
  levers_ = resolve_levers(target_, catalog.levers(), options.env);
  for (const auto& [key, value] : options.levers) {
    LeverValue* lever = levers_.find(key);
    if (lever == nullptr) {
      std::string known;
      for (const Levers::Entry& entry : levers_.entries()) {
        known += (known.empty() ? "" : ", ") + entry.spec.toml_key;
      }
      throw ConfigError(fmt::format("RuntimeOptions::levers: no op declares the lever '{}' (known: {})", key, known));
    }
    *lever = LeverValue{value, Provenance::kOptions, fmt::format("{} = {}", key, value ? "on" : "off")};
  }
  SourceSet sources;
  sources.add_embedded_templates(options.env);
  for (auto& [name, text] : options.sources) {
    sources.add_source(name, std::move(text));
  }
  const bool given = options.registry.has_value();
  KernelRegistry::Options registry_options = given ? std::move(*options.registry) : KernelRegistry::Options{};
  if (!given) {
    registry_options.env = options.env;  // METRALE_PCH, as the other METRALE_* variables
  }
  if (!registry_options.compile_timeout_s) {
    registry_options.compile_timeout_s =
        compile_timeout_s(options.env, options.compile_timeout_s, "RuntimeOptions::compile_timeout_s");
  }
  if (!given && options.cache_dir) {
    registry_options.store = std::make_shared<const EntryStore>(
        disk_entry_store(std::make_shared<DiskCache>(DiskCache::open_at(*options.cache_dir))));
  }
  // Read even with `registry` given: a malformed URL is an error, never ignored.
  if (const auto remote = remote_tier_from(options.remote_cache, options.env); remote && !given) {
    registry_options.remote = std::make_shared<const EntryStore>(remote_entry_store(remote));
  }
  std::vector<std::filesystem::path> bundle_dirs(options.bundle_dirs.begin(), options.bundle_dirs.end());
  if (const std::optional<std::string> listed = options.env("METRALE_BUNDLE_DIR")) {
    for (std::filesystem::path& dir : BundleSet::split_dirs(*listed)) {
      bundle_dirs.push_back(std::move(dir));
    }
  }
  // Read even with no bundle named: a configured key that is no key is an error, never ignored.
  const std::shared_ptr<const BundlePublicKey> bundle_key = BundleSet::public_key_from(
      options.bundle_public_key ? options.bundle_public_key : options.env("METRALE_BUNDLE_PUBKEY"));
  if (!bundle_dirs.empty()) {
    registry_options.bundles = std::make_shared<const BundleSet>(bundle_dirs, bundle_key);
  } else if (!given) {
    registry_options.bundles = nullptr;  // the environment given names none
  }
  const VerificationSettings verification = verification_settings(options);
  if (backend_) {
    // Nothing an op can run is published before its verdict (verification_gate.hpp); a caller's
    // own gate still has its say.
    registry_options.publish_gate = [this, theirs = std::move(registry_options.publish_gate)](
                                        GpuBackend& gpu, DeviceIndex device, std::span<const LoadedVariant> batch) {
      std::vector<bool> allowed = verification_->decide(gpu, device, batch);
      if (theirs) {
        const std::vector<bool> their_word = theirs(gpu, device, batch);
        for (std::size_t i = 0; i < allowed.size() && i < their_word.size(); ++i) {
          allowed[i] = allowed[i] && their_word[i];
        }
      }
      return allowed;
    };
  }
  // A background job holds the runtime open (close waits for it); one starting after close skips.
  registry_options.background_runner = [this](const std::function<void()>& job) {
    const CallScope scope(*this, CallScope::NoThrow{});
    if (scope.held_) {
      job();
    }
  };
  registry_ = std::make_unique<KernelRegistry>(std::move(sources), std::move(registry_options));
  variant_ids_ = ops::declare_target_kernels(*registry_, target_, catalog);
  variant_of_ = [this, catalog](const KernelEntry& entry) {
    return ops::target_kernel_variant(target_, entry, catalog);
  };
  resolve_ops();
  std::vector<GateOp> gate_ops;
  for (const ResolvedOp& entry : resolved_) {
    gate_ops.push_back(GateOp{entry.base, entry.ids});
  }
  verification_ = std::make_unique<VerificationGate>(verification, std::move(gate_ops), *registry_);
  declare_pinned_shapes(options);
  if (backend_) {
    logger().info("metrale: {} on target {} ({})", backend_->describe(), target_.name, target_.source);
    device_ = registry_->load(*backend_, options.load_mode);
  } else {
    logger().info("metrale: no device ({}); target {} for compiling only", no_device_reason_, target_.name);
  }
  accept_tuning_table(options);
}

void Runtime::resolve_ops() {
  capture_ = std::make_unique<RuntimeCaptureState>();
  capture_->handles.assign(ops_.ops().size(), ops::PreparedHandles{});
  if (backend_) {
    capture_->gpu = std::make_unique<CaptureGpu>(*backend_, capture_->launches);
  }
  resolved_.clear();
  resolved_.reserve(ops_.ops().size());
  for (const ops::OpDeclaration& op : ops_.ops()) {
    ResolvedOp entry;
    entry.op = &op;
    entry.base.op = &op;
    entry.base.no_device_reason = no_device_reason_;
    entry.base.target = target_.name;
    entry.base.fallback_sm_count = target_.sm_count.value_or(kFallbackSmCount);
    entry.base.compute_capability = target_.compute_capability;
    for (std::size_t i = 0; i < op.roles.size(); ++i) {
      const ops::RoleDecl& role = op.roles[i];
      const KernelEntry* shipped = target_.find_kernel(role.kernel);
      entry.ids[i] = variant_id(role.kernel);
      entry.base.kernels[i] = ops::OpKernel{role.role,          role.kernel,
                                            shipped != nullptr, shipped != nullptr ? shipped->params : KernelParams{},
                                            KernelHandle{},     {}};
    }
    for (std::size_t i = 0; i < op.levers.size(); ++i) {
      entry.base.levers[i] = levers_.find(op.levers[i].toml_key);
    }
    resolved_.push_back(entry);
  }
}

std::optional<VariantId> Runtime::variant_id(std::string_view kernel) const {
  const CallScope scope(*this);
  const auto found = variant_ids_.find(kernel);
  return found == variant_ids_.end() ? std::nullopt : std::optional<VariantId>(found->second);
}

KernelHandle Runtime::kernel_handle(std::string_view kernel) const {
  const CallScope scope(*this);
  const std::optional<VariantId> id = variant_id(kernel);
  return (backend_ && id) ? registry_->handle(device_, *id) : KernelHandle{};
}

const Runtime::ResolvedOp& Runtime::resolved(std::string_view op) const {
  const ops::OpDeclaration& declaration = ops_.get(op);
  for (const ResolvedOp& entry : resolved_) {
    if (entry.op == &declaration) {
      return entry;
    }
  }
  throw KernelChoiceError(fmt::format("op '{}' is not resolved on this runtime", op));
}

ops::OpContext Runtime::op_context(std::string_view op) const {
  const CallScope scope(*this);
  return context_of(resolved(op));
}

ops::OpContext Runtime::call_context(std::string_view op, std::uint64_t stream, std::string_view forced_role) const {
  const CallScope scope(*this);
  const ResolvedOp& entry = resolved(op);
  if (!backend_ || !backend_->is_capturing(stream)) {
    return context_of(entry);
  }
  ops::CaptureMask mask;
  return capture_context(entry, forced_role, mask);
}

ops::OpContext Runtime::call_context_for(std::string_view op, ops::OpArgValues values, std::uint64_t stream,
                                         std::string_view forced_role) const {
  const CallScope scope(*this);
  const ResolvedOp& entry = resolved(op);
  if (!backend_ || !backend_->is_capturing(stream)) {
    ops::OpContext context = context_of(entry);
    if (backend_ && !entry.op->shape_constants.empty()) {
      take_shape_variants(context, values, stream, shape_build_for(*entry.op, forced_role));
    }
    return context;
  }
  ops::CaptureMask mask;
  return capture_context(entry, forced_role, mask, values);
}

ops::OpContext Runtime::context_of(const ResolvedOp& entry) const {
  ops::OpContext context = entry.base;
  context.gpu = backend_.get();
  // The launch path: one lock-free read per role, so a twin arriving in the background is seen.
  if (backend_) {
    for (std::size_t i = 0; i < entry.op->roles.size(); ++i) {
      if (entry.ids[i]) {
        context.kernels[i].handle = registry_->handle(device_, *entry.ids[i]);
        context.kernels[i].refusal = verification_->refusal(*entry.ids[i]);
      }
    }
  }
  return context;
}

ops::Pick Runtime::run(std::string_view op, std::span<const ops::NamedArg> args, std::uint64_t stream,
                       std::string_view role) {
  const CallScope scope(*this);
  const ResolvedOp& entry = resolved(op);
  std::array<std::uint64_t, ops::kMaxArgs> values{};
  const std::span<std::uint64_t> bound(values.data(), entry.op->args.size());
  ops::bind_args(*entry.op, args, bound);
  return run_entry(entry, ops::OpCall{bound, stream, role});
}

ops::Pick Runtime::run_entry(const ResolvedOp& entry, const ops::OpCall& call) {
  if (!backend_ || !backend_->is_capturing(call.stream)) {
    ops::OpContext context = context_of(entry);
    // Outside a capture only: a capture runs what prepare made ready and never asks for a build.
    if (backend_ && !entry.op->shape_constants.empty()) {
      take_shape_variants(context, call.args, call.stream, shape_build_for(*entry.op, call.forced_role));
    }
    return ops::run_op(context, call);
  }
  const std::string_view forced = ops::resolve_role(*entry.op, call.forced_role);
  ops::CaptureMask mask;
  const ops::OpContext context = capture_context(entry, forced, mask, call.args);
  const std::size_t forwarded = CaptureGpu::forwarded();
  try {
    ops::Pick pick = ops::run_op(context, call);
    ops::name_capture_declines(pick, context, mask);
    return pick;
  } catch (const CaptureError&) {
    throw;
  } catch (const BackendError& error) {
    // The guards found nothing to run among the prepared kernels ("no kernel to run"): the
    // capture's refusal, since nothing reached the device (a driver's failure would have).
    if (CaptureGpu::forwarded() == forwarded) {
      throw CaptureError(ops::capture_error_text(entry.op->name, error.what()));
    }
    throw;
  }
}

OpRef Runtime::op(std::string_view name) {
  const CallScope scope(*this);
  const ResolvedOp& entry = resolved(name);
  return OpRef(*this, static_cast<std::size_t>(&entry - resolved_.data()));
}

const ops::OpDeclaration& OpRef::declaration() const { return *runtime_->resolved_[index_].op; }

ops::Pick OpRef::run(std::span<const ops::NamedArg> args, std::uint64_t stream, std::string_view role) const {
  const Runtime::CallScope scope(*runtime_);
  const Runtime::ResolvedOp& entry = runtime_->resolved_[index_];
  std::array<std::uint64_t, ops::kMaxArgs> values{};
  const std::span<std::uint64_t> bound(values.data(), entry.op->args.size());
  ops::bind_args(*entry.op, args, bound);
  return runtime_->run_entry(entry, ops::OpCall{bound, stream, role});
}

ops::Pick OpRef::run_values(ops::OpArgValues values, std::uint64_t stream, std::string_view role) const {
  const Runtime::CallScope scope(*runtime_);
  const Runtime::ResolvedOp& entry = runtime_->resolved_[index_];
  ops::check_values(*entry.op, values);
  return runtime_->run_entry(entry, ops::OpCall{values, stream, role});
}

ops::Explanation Runtime::explain(std::string_view op, std::span<const ops::NamedArg> shape, bool m_given) const {
  const CallScope scope(*this);
  ops::OpContext context = op_context(op);
  std::array<std::uint64_t, ops::kMaxArgs> values{};
  const std::span<std::uint64_t> bound(values.data(), context.op->args.size());
  ops::bind_shape(*context.op, shape, bound);
  // What a call would run now: the shape variants already published (a lookup; nothing is built).
  if (backend_ && !context.op->shape_constants.empty()) {
    take_shape_variants(context, bound, 0, ShapeBuild::kNever);
  }
  ops::Explanation explanation =
      ops::explain_op(context, ops::ExplainQuery{bound, m_given, ops::given_mask(*context.op, shape)});
  explain_thresholds(context, bound, explanation);
  // Each role's verdict, and a refused kernel's refusal as the reason it does not run.
  for (ops::RoleExplanation& row : explanation.roles) {
    const std::optional<KernelVerdict> verdict = this->verdict(row.kernel);
    if (!verdict) {
      continue;
    }
    if (verdict->verdict == ops::CheckVerdict::kFailed) {
      row.verification = "refused: " + verdict->refusal;
      if (!row.runs) {
        row.reject = verdict->refusal;
      }
    } else {
      row.verification = fmt::format("{}{}", ops::to_string(verdict->verdict), verdict->cached ? " (cached)" : "");
    }
  }
  return explanation;
}

bool Runtime::verification_enabled() const {
  const CallScope scope(*this);
  return verification_ && verification_->enabled();
}

std::vector<KernelVerdict> Runtime::verdicts() const {
  const CallScope scope(*this);
  return verification_ ? verification_->verdicts() : std::vector<KernelVerdict>{};
}

std::optional<KernelVerdict> Runtime::verdict(std::string_view kernel) const {
  const CallScope scope(*this);
  const std::optional<VariantId> id = variant_id(kernel);
  return (verification_ && id) ? verification_->verdict(*id) : std::nullopt;
}

std::uint64_t Runtime::verification_checks_run() const {
  const CallScope scope(*this);
  return verification_ ? verification_->checks_run() : 0;
}

}  // namespace metrale
