// verification_gate.cpp: which loaded kernels are published, from cached or fresh verdicts.
#include "runtime/verification_gate.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "ground/log.hpp"
#include "jit/bundle.hpp"
#include "jit/entry_key.hpp"
#include "metrale/error.hpp"

namespace metrale {

bool parse_verify_setting(std::string_view value) {
  std::string lower(value);
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  if (lower == "on" || lower == "1" || lower == "true" || lower == "yes") {
    return true;
  }
  if (lower == "off" || lower == "0" || lower == "false" || lower == "no") {
    return false;
  }
  throw ConfigError(
      fmt::format("METRALE_VERIFY='{}' is neither on nor off (on, 1, true, yes; off, 0, false, no)", value));
}

VerificationGate::VerificationGate(VerificationSettings settings, std::vector<GateOp> ops,
                                   const KernelRegistry& registry)
    : settings_(std::move(settings)),
      ops_(std::move(ops)),
      registry_(registry),
      cache_(settings_.verdict_dir),
      refusal_slots_(registry.variant_count()) {
  refusals_ = std::make_unique<std::atomic<const std::string*>[]>(refusal_slots_);
  for (std::size_t i = 0; i < refusal_slots_; ++i) {
    refusals_[i].store(nullptr, std::memory_order_relaxed);
  }
}

VerificationGate::~VerificationGate() {
  // A check cut off by its time limit still holds the device; it must end before the device does.
  for (Straggler& straggler : stragglers_) {
    if (straggler.valid()) {
      straggler.wait();
    }
  }
}

std::string_view VerificationGate::refusal(VariantId id) const {
  if (id >= refusal_slots_) {
    return {};
  }
  const std::string* text = refusals_[id].load(std::memory_order_acquire);
  return text == nullptr ? std::string_view() : std::string_view(*text);
}

std::vector<KernelVerdict> VerificationGate::verdicts() const {
  const std::lock_guard lock(mutex_);
  std::vector<KernelVerdict> out;
  out.reserve(verdicts_.size());
  for (const auto& [id, verdict] : verdicts_) {
    out.push_back(verdict);
  }
  return out;
}

std::optional<KernelVerdict> VerificationGate::verdict(VariantId id) const {
  const std::lock_guard lock(mutex_);
  const auto found = verdicts_.find(id);
  return found == verdicts_.end() ? std::nullopt : std::optional<KernelVerdict>(found->second);
}

std::vector<bool> VerificationGate::decide(GpuBackend& gpu, DeviceIndex device, std::span<const LoadedVariant> batch) {
  std::vector<bool> allowed(batch.size(), true);
  if (!settings_.enabled) {
    static std::atomic<bool> said{false};
    if (!said.exchange(true)) {
      logger().info(
          "metrale: verification is off (METRALE_VERIFY=off or RuntimeOptions::verify): kernels are used "
          "without their checks");
    }
    return allowed;
  }
  std::map<VariantId, KernelHandle> loaded;
  for (const LoadedVariant& variant : batch) {
    loaded.emplace(variant.id, variant.handle);
  }
  // Op order, then role order: a parent's verdict is in before a twin is checked against it.
  std::map<VariantId, bool> passed;
  for (const GateOp& op : ops_) {
    for (std::size_t r = 0; r < op.base.op->roles.size(); ++r) {
      const std::optional<VariantId> id = op.ids[r];
      if (!id || !loaded.contains(*id) || passed.contains(*id)) {
        continue;
      }
      passed[*id] = decide_one(gpu, device, *id, loaded).verdict != ops::CheckVerdict::kFailed;
    }
  }
  // A shape-specialised variant (issue 26) is no role's own id: it is checked in its role's place.
  for (const LoadedVariant& variant : batch) {
    if (!passed.contains(variant.id) && !uses_of(gpu, device, variant.id, loaded).empty()) {
      passed[variant.id] = decide_one(gpu, device, variant.id, loaded).verdict != ops::CheckVerdict::kFailed;
    }
  }
  for (std::size_t i = 0; i < batch.size(); ++i) {
    const auto found = passed.find(batch[i].id);
    if (found == passed.end()) {
      // No op runs it: nothing to check it against, and no op hands it out.
      const KernelVariant variant = registry_.variant(batch[i].id);
      const std::lock_guard lock(mutex_);
      KernelVerdict& verdict = verdicts_[batch[i].id];
      verdict.kernel = variant.kernel;
      verdict.params = variant.params.tag();
      verdict.worst = "no op's check covers this kernel";
      continue;
    }
    allowed[i] = found->second;
  }
  return allowed;
}

namespace {

// Whether `variant` is a shape-specialised variant of role `r`'s kernel: the same kernel, a shape
// set, and a shape constant of the op on that role.
bool runs_in_role(const GateOp& op, std::size_t r, const KernelVariant& variant) {
  if (variant.params.shape == 0 || variant.kernel != op.base.kernels[r].kernel) {
    return false;
  }
  const std::string& role = op.base.op->roles[r].role;
  return std::any_of(op.base.op->shape_constants.begin(), op.base.op->shape_constants.end(),
                     [&](const ops::ShapeConstantDecl& constant) { return constant.role == role; });
}

}  // namespace

std::vector<CheckUse> VerificationGate::uses_of(GpuBackend& gpu, DeviceIndex device, VariantId id,
                                                const std::map<VariantId, KernelHandle>& batch) const {
  std::vector<CheckUse> uses;
  const KernelVariant variant = registry_.variant(id);
  for (const GateOp& op : ops_) {
    for (std::size_t r = 0; r < op.base.op->roles.size(); ++r) {
      const bool specialised = op.ids[r] != id && runs_in_role(op, r, variant);
      if (op.ids[r] != id && !specialised) {
        continue;
      }
      CheckUse use{op.base, op.base.op->roles[r].role};
      use.context.gpu = &gpu;
      for (std::size_t j = 0; j < op.base.op->roles.size(); ++j) {
        const std::optional<VariantId> other = op.ids[j];
        if (!other) {
          continue;
        }
        ops::OpKernel& kernel = use.context.kernels[j];
        kernel.refusal = refusal(*other);
        const auto candidate = batch.find(*other);
        // This batch's kernels are not published yet: the check sees them as loaded, unless refused.
        kernel.handle = !kernel.refusal.empty()    ? KernelHandle{}
                        : candidate != batch.end() ? candidate->second
                                                   : registry_.handle(device, *other);
      }
      if (specialised) {
        // The specialised variant in its role's place, with its own parameters (the check hook
        // then picks problems its shape takes).
        ops::OpKernel& kernel = use.context.kernels[r];
        const auto candidate = batch.find(id);
        kernel.handle = candidate != batch.end() ? candidate->second : registry_.handle(device, id);
        kernel.params = variant.params;
        kernel.refusal = {};
      }
      uses.push_back(std::move(use));
    }
  }
  return uses;
}

std::string VerificationGate::kernel_key(VariantId id, std::string_view arch) const {
  // The kernel's own code and that of every kernel of the ops it is checked in (a twin's verdict
  // is a statement about its parent's bytes too).
  std::vector<VariantId> keyed{id};
  for (const GateOp& op : ops_) {
    if (std::find(op.ids.begin(), op.ids.end(), std::optional<VariantId>(id)) == op.ids.end()) {
      continue;
    }
    for (const std::optional<VariantId>& other : op.ids) {
      if (other && std::find(keyed.begin(), keyed.end(), *other) == keyed.end()) {
        keyed.push_back(*other);
      }
    }
  }
  std::string joined;
  for (const VariantId kernel : keyed) {
    joined += registry_.bundle_key(kernel, arch).bundle_digest() + ";";
  }
  return fields_digest({&joined});
}

KernelVerdict VerificationGate::decide_one(GpuBackend& gpu, DeviceIndex device, VariantId id,
                                           const std::map<VariantId, KernelHandle>& batch) {
  const KernelVariant variant = registry_.variant(id);
  const std::string arch = KernelRegistry::arch_for(gpu).value_or(gpu.needs_compiled_image() ? "unknown" : "host");
  VerdictKey key{gpu.device_name(), gpu.device_uuid(), gpu.driver_version(), variant.kernel, variant.params.tag(), {}};
  try {
    key.kernel_key = kernel_key(id, arch);
  } catch (const Error& error) {
    logger().debug("metrale: no verdict key for {}: {}", variant.kernel, error.what());
  }
  std::optional<KernelVerdict> verdict = key.kernel_key.empty() ? std::nullopt : cache_.load(key);
  if (!verdict) {
    const std::vector<CheckUse> uses = uses_of(gpu, device, id, batch);
    std::vector<Straggler> cut_off;
    verdict = verify_kernel(gpu, uses, settings_.time_limit, cut_off);
    ++checks_run_;
    {
      const std::lock_guard lock(mutex_);
      for (Straggler& straggler : cut_off) {
        stragglers_.push_back(std::move(straggler));
      }
    }
    if (!key.kernel_key.empty()) {
      cache_.store(key, *verdict);
    }
  }
  verdict->kernel = variant.kernel;
  verdict->params = variant.params.tag();
  if (verdict->verdict == ops::CheckVerdict::kFailed) {
    refuse(id, *verdict);
  } else {
    logger().debug("metrale: {} ({}) {} its check{}: {}", variant.kernel, verdict->params,
                   ops::to_string(verdict->verdict), verdict->cached ? " (cached verdict)" : "", verdict->worst);
  }
  const std::lock_guard lock(mutex_);
  verdicts_[id] = *verdict;
  return *verdict;
}

void VerificationGate::refuse(VariantId id, const KernelVerdict& verdict) {
  logger().warn("metrale: {} ({}) is not used: it {}{}", verdict.kernel, verdict.params, verdict.refusal,
                verdict.cached ? " (cached verdict)" : "");
  if (id >= refusal_slots_) {
    return;
  }
  const std::lock_guard lock(mutex_);
  refusal_texts_.push_back(verdict.refusal);
  refusals_[id].store(&refusal_texts_.back(), std::memory_order_release);
}

}  // namespace metrale
