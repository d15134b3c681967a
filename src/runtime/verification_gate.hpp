// runtime/verification_gate.hpp: the registry's publish gate (KernelRegistry::Options::
// publish_gate) as the runtime sets it: no kernel an op can run becomes visible before its
// verdict passed. For each loaded batch, in op declaration order and each op's role order (so a
// parent is decided before the twin checked against it), a kernel's verdict comes from the
// verdict cache or from its checks (kernel_verification.hpp) in the contexts of every op role
// that names it; a failed one stays unpublished (handle 0) and its refusal is kept, logged once,
// and read lock-free by op contexts (OpKernel::refusal).
// Invariants: verdicts are written under a mutex and read as copies; a refusal, once set, lives as
// long as the gate (op calls hold views of it); with verification off every handle is published
// and the log says so once per process; the destructor waits for checks cut off by the time limit.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "metrale/jit/kernel_registry.hpp"
#include "metrale/ops/op_declaration.hpp"
#include "runtime/kernel_verification.hpp"
#include "runtime/verdict_cache.hpp"

namespace metrale {

struct VerificationSettings {
  bool enabled = true;
  std::chrono::milliseconds time_limit{30000};
  std::optional<std::filesystem::path> verdict_dir;  // nullopt: verdicts kept in memory only
};

// METRALE_VERIFY's value: "on"/"1"/"true"/"yes" or "off"/"0"/"false"/"no" (any case); ConfigError
// naming the variable and the value otherwise. Pure.
bool parse_verify_setting(std::string_view value);

// One op as the gate checks it: its context without device or handles, and its roles' variants.
struct GateOp {
  ops::OpContext base;
  std::array<std::optional<VariantId>, ops::kMaxRoles> ids{};
};

class VerificationGate {
 public:
  VerificationGate(VerificationSettings settings, std::vector<GateOp> ops, const KernelRegistry& registry);
  VerificationGate(const VerificationGate&) = delete;
  VerificationGate& operator=(const VerificationGate&) = delete;
  ~VerificationGate();

  [[nodiscard]] bool enabled() const { return settings_.enabled; }
  // The gate itself: one flag per loaded variant (true: publish).
  std::vector<bool> decide(GpuBackend& gpu, DeviceIndex device, std::span<const LoadedVariant> batch);
  // Why `id` was refused ("" when it was not); lock-free.
  [[nodiscard]] std::string_view refusal(VariantId id) const;
  // Every verdict reached so far, by variant id.
  [[nodiscard]] std::vector<KernelVerdict> verdicts() const;
  [[nodiscard]] std::optional<KernelVerdict> verdict(VariantId id) const;
  // How many kernels were checked (not answered from the cache) by this gate.
  [[nodiscard]] std::uint64_t checks_run() const { return checks_run_.load(); }

 private:
  KernelVerdict decide_one(GpuBackend& gpu, DeviceIndex device, VariantId id,
                           const std::map<VariantId, KernelHandle>& batch);
  [[nodiscard]] std::vector<CheckUse> uses_of(GpuBackend& gpu, DeviceIndex device, VariantId id,
                                              const std::map<VariantId, KernelHandle>& batch) const;
  [[nodiscard]] std::string kernel_key(VariantId id, std::string_view arch) const;
  void refuse(VariantId id, const KernelVerdict& verdict);

  VerificationSettings settings_;
  std::vector<GateOp> ops_;
  const KernelRegistry& registry_;
  VerdictCache cache_;
  mutable std::mutex mutex_;
  std::map<VariantId, KernelVerdict> verdicts_;
  std::deque<std::string> refusal_texts_;  // never moves: refusals are viewed by op calls
  std::unique_ptr<std::atomic<const std::string*>[]> refusals_;
  std::size_t refusal_slots_ = 0;
  std::vector<Straggler> stragglers_;
  std::atomic<std::uint64_t> checks_run_{0};
};

}  // namespace metrale
