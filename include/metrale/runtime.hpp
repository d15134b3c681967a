// metrale/runtime.hpp: what an engine opens once per device: the backend, the selected
// target, the resolved levers, the registry with every kernel the target ships, and the ops.
// Invariants: "no device" is a state, not an error (has_device() is false and the reason is
// kept; ops then throw BackendError naming it); the ops read their handles lock-free on every
// call, so a twin arriving in the background is picked up by the next call.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "metrale/environment.hpp"
#include "metrale/gpu/gpu_backend.hpp"
#include "metrale/host/host_kernel.hpp"
#include "metrale/jit/kernel_registry.hpp"
#include "metrale/ops/fp8_act_quant.hpp"
#include "metrale/ops/ssm_ba_gates.hpp"
#include "metrale/target/hardware_target.hpp"
#include "metrale/target/levers.hpp"

namespace metrale {

enum class BackendChoice {
  kAuto,  // the CUDA device when there is one, else "no device"
  kCuda,  // the CUDA device; "no device" when there is none
  kHost,  // the host backend: the same templates, run on the CPU
};

// Which kernel an op call runs: kGuard lets the op's guards pick; the others force one kernel
// (kParent is the FP8 shared kernel; kMma the BA tensor-core kernel, which FP8 lacks).
enum class KernelChoice { kGuard, kParent, kTwin, kMma };

// The pick's reject when a forced kernel other than a twin ran.
inline constexpr std::string_view kForcedKernelReason = "forced by the caller's kernel choice";

struct RuntimeOptions {
  BackendChoice backend = BackendChoice::kAuto;
  int device_ordinal = 0;
  // The target to use instead of the one the device selects; also the target of a runtime
  // with no device or on the host backend (default "hopper").
  std::optional<std::string> target;
  LoadMode load_mode = LoadMode::kWaitForAll;
  std::uint32_t host_sm_count = 132;
  std::uint32_t host_worker_threads = 0;  // 0: the hardware threads
  // An engine's own kernels for the host backend (make_host_kernel over a template compiled with
  // metrale/host/cuda_host_prelude.hpp), loadable beside the library's; ignored on a device.
  std::vector<HostKernelInfo> host_kernels;
  // An engine's own template sources (file name -> text), beside the library's templates; a
  // declaration's `source` names one of them (or a library template).
  std::map<std::string, std::string> sources;
  // An engine's kernels: a target's HARDWARE.toml ships them by these names, and open() builds
  // them with the library's own in one batch (parents first, background variants after).
  std::vector<KernelDeclaration> kernels;
  EnvLookup env = process_environment();
  std::optional<KernelRegistry::Options> registry;  // default: the process memory cache + disk cache
  // The disk cache's directory instead of METRALE_CACHE_DIR / XDG_CACHE_HOME / ~/.cache/metrale
  // (an unusable one means memory only, with one warning); ignored when `registry` is given.
  std::optional<std::string> cache_dir;
  // Ahead-of-time bundles (directories written by `metrale-jit build --bundle`), looked in
  // before the disk cache and NVRTC, followed by those of METRALE_BUNDLE_DIR (':'-separated).
  std::vector<std::string> bundle_dirs;
};

class Runtime {
 public:
  static std::unique_ptr<Runtime> open(RuntimeOptions options = {});
  // A runtime over a backend the caller made (tests, an engine with its own backend).
  static std::unique_ptr<Runtime> open_with(std::unique_ptr<GpuBackend> backend, RuntimeOptions options = {});

  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;
  ~Runtime();

  [[nodiscard]] bool has_device() const { return backend_ != nullptr; }
  [[nodiscard]] const std::string& no_device_reason() const { return no_device_reason_; }
  [[nodiscard]] GpuBackend* backend() { return backend_.get(); }
  [[nodiscard]] const GpuBackend* backend() const { return backend_.get(); }
  [[nodiscard]] const HardwareTarget& target() const { return target_; }
  [[nodiscard]] const Levers& levers() const { return levers_; }
  [[nodiscard]] KernelRegistry& registry() { return *registry_; }
  [[nodiscard]] std::optional<VariantId> variant_id(std::string_view kernel) const;
  // The registry handle of a kernel the target ships (the library's or an engine's), read
  // lock-free; 0 when absent (not shipped, still building, failed, or no device).
  [[nodiscard]] KernelHandle kernel_handle(std::string_view kernel) const;

  // The op's kernels as loaded now (absent while a background twin is still building).
  [[nodiscard]] ops::BaGatesKernels ba_gates_kernels() const;
  [[nodiscard]] ops::Fp8QuantKernels fp8_quant_kernels() const;

  // Validate, guard, pick, log once per slot, launch. Throw ArgumentError for a shape no
  // kernel can take and BackendError when there is no device.
  ops::BaGatesPick ssm_ba_gates(const ops::BaGatesArgs& args, std::uint64_t stream = 0);
  ops::Fp8QuantPick fp8_act_quant(const ops::Fp8QuantArgs& args, std::uint64_t stream = 0);

  // The same with the caller's choice: kGuard is the op above; a forced kernel keeps the op's
  // validation (and, for FP8, its grid) and the pick reports it (reject kForcedKernelReason for
  // a forced parent / shared kernel, nullopt for a twin or the tensor-core kernel). Throws
  // KernelChoiceError, before anything launches, when the target did not build the forced
  // kernel (naming target and kernel) and for kMma on FP8.
  ops::BaGatesPick ssm_ba_gates(const ops::BaGatesArgs& args, std::uint64_t stream, KernelChoice choice);
  ops::Fp8QuantPick fp8_act_quant(const ops::Fp8QuantArgs& args, std::uint64_t stream, KernelChoice choice);

 private:
  Runtime() = default;
  void initialise(RuntimeOptions& options);
  // One op kernel as resolved once at open: its registry id (absent when the target does not
  // ship it) and its template parameters, so an op call only reads the handle.
  struct OpKernelSlot {
    std::optional<VariantId> id;
    KernelParams params;
  };
  [[nodiscard]] OpKernelSlot resolve_slot(std::string_view kernel, const KernelParams& fallback) const;
  [[nodiscard]] KernelHandle handle(const OpKernelSlot& slot) const;
  GpuBackend& require_device();

  std::unique_ptr<GpuBackend> backend_;
  std::string no_device_reason_;
  HardwareTarget target_;
  Levers levers_;
  std::unique_ptr<KernelRegistry> registry_;
  std::map<std::string, VariantId, std::less<>> variant_ids_;
  OpKernelSlot ba_parent_, ba_twin_, fp8_shared_, fp8_twin_, ba_mma_;
  DeviceIndex device_ = 0;
};

}  // namespace metrale
