// runtime_forced.cpp: the op entry points with the caller's KernelChoice, the one place that
// runs a kernel the caller forces (the C API's args.kernel and the CLI's --kernel both land here).
// Invariants: a forced kernel is checked present before anything launches (KernelChoiceError
// naming target and kernel otherwise) and keeps the op's validation; FP8 forces by blanking the
// other kernel, so the op's own pick, grid and block are the ones launched.
#include <fmt/format.h>

#include "metrale/error.hpp"
#include "metrale/runtime.hpp"
#include "ops/op_kernels.hpp"

namespace metrale {
namespace {

KernelHandle require_built(const HardwareTarget& target, KernelHandle handle, std::string_view kernel) {
  if (!handle.present()) {
    throw KernelChoiceError(fmt::format("target {} does not ship {} (or it failed to build)", target.name, kernel));
  }
  return handle;
}

}  // namespace

ops::BaGatesPick Runtime::ssm_ba_gates(const ops::BaGatesArgs& args, std::uint64_t stream, KernelChoice choice) {
  if (choice == KernelChoice::kGuard) {
    return ssm_ba_gates(args, stream);
  }
  GpuBackend& gpu = require_device();
  const ops::BaGatesKernels kernels = ba_gates_kernels();
  ops::BaGatesPick pick;
  switch (choice) {
    case KernelChoice::kMma:
      pick.kernel = require_built(target_, kernels.mma, ops::kBaGatesMmaKernel);
      pick.mma = true;
      break;
    case KernelChoice::kTwin:
      pick.kernel = require_built(target_, kernels.twin, ops::kBaGatesTwinKernel);
      pick.twin = true;
      break;
    case KernelChoice::kParent:
    case KernelChoice::kGuard:
      pick.kernel = require_built(target_, kernels.parent, ops::kBaGatesParentKernel);
      pick.reject = kForcedKernelReason;
      break;
  }
  ops::validate_ba_gates_args(args);
  if (pick.mma) {
    ops::launch_ba_gates_mma(gpu, pick.kernel, kernels.mma_params, args, stream);
  } else if (pick.twin) {
    ops::launch_ba_gates_twin(gpu, pick.kernel, kernels.twin_params, args, stream);
  } else {
    ops::launch_ba_gates_parent(gpu, pick.kernel, kernels.parent_params, args, stream);
  }
  return pick;
}

ops::Fp8QuantPick Runtime::fp8_act_quant(const ops::Fp8QuantArgs& args, std::uint64_t stream, KernelChoice choice) {
  if (choice == KernelChoice::kGuard) {
    return fp8_act_quant(args, stream);
  }
  if (choice == KernelChoice::kMma) {
    throw KernelChoiceError(
        "the tensor-core kernel was forced for fp8_act_quant: only the BA-gates op has a "
        "tensor-core kernel");
  }
  GpuBackend& gpu = require_device();
  // Given one kernel, the op's pick takes it: its validation, grid and block stay the op's.
  ops::Fp8QuantKernels kernels = fp8_quant_kernels();
  const bool twin = choice == KernelChoice::kTwin;
  if (twin) {
    require_built(target_, kernels.twin, ops::kFp8QuantTwinKernel);
    kernels.shared = KernelHandle{};
  } else {
    require_built(target_, kernels.shared, ops::kFp8QuantSharedKernel);
    kernels.twin = KernelHandle{};
  }
  ops::Fp8QuantPick pick = ops::fp8_act_quant(gpu, kernels, twin, args, stream);
  if (!twin) {
    pick.reject = kForcedKernelReason;
  }
  return pick;
}

}  // namespace metrale
