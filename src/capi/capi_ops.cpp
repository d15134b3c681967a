// capi_ops.cpp: metrale_ssm_ba_gates and metrale_fp8_act_quant: the C arguments become the
// ops' arguments; the guard picks (METRALE_KERNEL_AUTO) or the caller forces one kernel.
// Invariants: forcing is the runtime's (Runtime::ssm_ba_gates / fp8_act_quant with a
// KernelChoice); its refusals are METRALE_ERROR_ARGUMENT naming args.kernel; the pick is
// written only after the launch returned.
#include <fmt/format.h>

#include "capi_call.hpp"
#include "capi_pick.hpp"
#include "capi_runtime.hpp"
#include "metrale/error.hpp"
#include "metrale/ops/fp8_act_quant.hpp"
#include "metrale/ops/ssm_ba_gates.hpp"
#include "ops/op_kernels.hpp"

namespace metrale::capi {
namespace {

// The C choice as the runtime's; FP8's refusal of MMA is the runtime's (KernelChoiceError).
KernelChoice kernel_choice(metrale_kernel_choice choice) {
  switch (choice) {
    case METRALE_KERNEL_AUTO:
      return KernelChoice::kGuard;
    case METRALE_KERNEL_TWIN:
      return KernelChoice::kTwin;
    case METRALE_KERNEL_PARENT:
      return KernelChoice::kParent;
    case METRALE_KERNEL_MMA:
      return KernelChoice::kMma;
  }
  throw CapiError(METRALE_ERROR_ARGUMENT, fmt::format("args.kernel {} is not AUTO (0), TWIN (1), PARENT (2) or MMA (3)",
                                                      static_cast<int>(choice)));
}

// Runs `op` with the forced-kernel refusals named after the C argument that asked for them.
template <typename Op>
auto with_kernel_arg(Op&& op) {
  try {
    return op();
  } catch (const KernelChoiceError& error) {
    throw CapiError(METRALE_ERROR_ARGUMENT, fmt::format("args.kernel: {}", error.what()));
  }
}

ops::BaGatesArgs ba_gates_args(const metrale_ba_gates_args& a) {
  return ops::BaGatesArgs{DevicePtr{a.x},
                          DevicePtr{a.weight},
                          DevicePtr{a.a_log},
                          DevicePtr{a.dt_bias},
                          DevicePtr{a.gate_out},
                          a.m,
                          a.n,
                          a.k,
                          a.k_stride,
                          a.gate_stride,
                          a.nv,
                          a.vheads_per_group};
}

metrale_pick run_ba_gates(metrale_runtime* handle, const metrale_ba_gates_args& c_args, std::uint64_t stream) {
  const KernelChoice choice = kernel_choice(c_args.kernel);
  device_of(handle);  // no device: METRALE_ERROR_NO_DEVICE, before the arguments are read
  Runtime& runtime = runtime_of(handle);
  const ops::BaGatesArgs args = ba_gates_args(c_args);
  return ba_gates_pick_of(with_kernel_arg([&] { return runtime.ssm_ba_gates(args, stream, choice); }));
}

ops::Fp8QuantArgs fp8_args(const metrale_fp8_quant_args& a) {
  if (a.scale_layout != METRALE_SCALES_ROW_MAJOR && a.scale_layout != METRALE_SCALES_COLUMN_MAJOR) {
    throw CapiError(METRALE_ERROR_ARGUMENT, fmt::format("args.scale_layout {} is not ROW_MAJOR (0) or COLUMN_MAJOR (1)",
                                                        static_cast<int>(a.scale_layout)));
  }
  return ops::Fp8QuantArgs{DevicePtr{a.x},
                           DevicePtr{a.q},
                           DevicePtr{a.scales},
                           a.m,
                           a.k,
                           a.x_row_stride,
                           a.scale_layout == METRALE_SCALES_COLUMN_MAJOR ? ops::Fp8ScaleLayout::kColumnMajor
                                                                         : ops::Fp8ScaleLayout::kRowMajor,
                           a.m_aligned,
                           a.pow2_scales != 0 ? ops::Fp8ScaleKind::kPow2 : ops::Fp8ScaleKind::kFp32};
}

metrale_pick run_fp8_quant(metrale_runtime* handle, const metrale_fp8_quant_args& c_args, std::uint64_t stream) {
  const KernelChoice choice = kernel_choice(c_args.kernel);
  device_of(handle);  // no device: METRALE_ERROR_NO_DEVICE, before the arguments are read
  Runtime& runtime = runtime_of(handle);
  const ops::Fp8QuantArgs args = fp8_args(c_args);
  const ops::Fp8QuantPick pick = with_kernel_arg([&] { return runtime.fp8_act_quant(args, stream, choice); });
  return to_pick(pick.twin ? ops::kFp8QuantTwinKernel : ops::kFp8QuantSharedKernel, pick.twin, pick.reject);
}

}  // namespace

metrale_pick to_pick(std::string_view kernel, bool twin, const std::optional<std::string_view>& reason) {
  return metrale_pick{intern(kernel), twin ? 1 : 0, reason ? intern(*reason) : nullptr, 0, nullptr};
}

metrale_pick ba_gates_pick_of(const ops::BaGatesPick& pick) {
  const std::string_view kernel =
      pick.mma ? ops::kBaGatesMmaKernel : (pick.twin ? ops::kBaGatesTwinKernel : ops::kBaGatesParentKernel);
  metrale_pick out = to_pick(kernel, pick.twin, pick.mma ? std::nullopt : pick.reject);
  out.tensor_core = pick.mma ? 1 : 0;
  out.tensor_core_reason = pick.mma_reject ? intern(*pick.mma_reject) : nullptr;
  return out;
}

// The two ops' C entry points: checks the struct, runs, writes the pick only after the launch.
template <typename Args, typename Run>
metrale_status call_op(const char* name, const Args* args, metrale_pick* pick, Run run) {
  return capi_call(name, [&] {
    require_struct(args, "args");
    const metrale_pick ran = run(*args);
    if (pick != nullptr) {
      *pick = ran;
    }
  });
}

}  // namespace metrale::capi

extern "C" {

void metrale_ba_gates_args_init(metrale_ba_gates_args* args) {
  if (args != nullptr) {
    *args = metrale_ba_gates_args{};
    args->struct_size = sizeof(metrale_ba_gates_args);
  }
}

metrale_status metrale_ssm_ba_gates(metrale_runtime* runtime, const metrale_ba_gates_args* args, uint64_t stream,
                                    metrale_pick* pick) {
  using namespace metrale::capi;
  return call_op("metrale_ssm_ba_gates", args, pick,
                 [&](const metrale_ba_gates_args& a) { return run_ba_gates(runtime, a, stream); });
}

void metrale_fp8_quant_args_init(metrale_fp8_quant_args* args) {
  if (args != nullptr) {
    *args = metrale_fp8_quant_args{};
    args->struct_size = sizeof(metrale_fp8_quant_args);
  }
}

metrale_status metrale_fp8_act_quant(metrale_runtime* runtime, const metrale_fp8_quant_args* args, uint64_t stream,
                                     metrale_pick* pick) {
  using namespace metrale::capi;
  return call_op("metrale_fp8_act_quant", args, pick,
                 [&](const metrale_fp8_quant_args& a) { return run_fp8_quant(runtime, a, stream); });
}

}  // extern "C"
