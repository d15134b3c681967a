// capi_explain.cpp: metrale_explain_*: what an op call would run for a shape on this runtime,
// and the smallest M the twin takes, from the ops' own pick functions (so it cannot disagree
// with them). With a device a kernel counts as present when its handle is; without one, when
// the target ships it (as the CLI's explain).
#include <fmt/format.h>

#include "capi_call.hpp"
#include "capi_pick.hpp"
#include "capi_runtime.hpp"
#include "metrale/ops/fp8_act_quant.hpp"
#include "metrale/ops/ssm_ba_gates.hpp"
#include "ops/fp8_act_quant_floor.hpp"
#include "ops/op_kernels.hpp"
#include "ops/ssm_ba_gates_guard.hpp"
#include "ops/ssm_ba_gates_mma_guard.hpp"

namespace metrale::capi {
namespace {

KernelHandle present_as(const Runtime& runtime, KernelHandle handle, std::string_view kernel) {
  if (runtime.has_device()) {
    return handle;
  }
  return KernelHandle{runtime.target().find_kernel(kernel) != nullptr ? 1U : 0U};
}

metrale_explanation start(const metrale_runtime* handle, const metrale_explanation& caller, std::size_t lever) {
  metrale_explanation out;
  metrale_explanation_init(&out);
  out.struct_size = caller.struct_size;
  const metrale_runtime::Lever& value = lever_of(handle, lever);
  out.requested = value.value ? 1 : 0;
  out.lever_origin = value.origin.c_str();
  out.sm_count = handle->sm_count;
  return out;
}

void set_min(metrale_explanation& out, std::uint32_t min_m, const std::optional<std::string_view>& reject) {
  out.twin_min_m = reject ? 0 : min_m;
  out.twin_min_reason = reject ? intern(*reject) : nullptr;
}

// The tensor-core guard's query: the device's compute capability (the target's without a
// device), buffers assumed 16-byte aligned (the op refuses others before any guard runs).
ops::BaGatesMmaQuery tensor_core_query(const Runtime& runtime, KernelHandle mma, bool requested, std::uint32_t sm_count,
                                       std::uint32_t m, std::uint32_t n, std::uint32_t k, std::uint32_t k_stride) {
  ops::BaGatesMmaQuery query;
  query.requested = requested;
  query.kernel_present = mma.present();
  if (runtime.has_device()) {
    ops::set_mma_variant(query, runtime.ba_gates_kernels().mma_params, runtime.backend()->compute_capability(),
                         runtime.backend()->max_dynamic_shared_bytes());
  } else {
    ops::set_mma_variant(query, runtime.ba_gates_kernels().mma_params, runtime.target().compute_capability,
                         std::nullopt);
  }
  query.m = m;
  query.n = n;
  query.k = k;
  query.k_stride = k_stride;
  query.sm_count = sm_count;
  return query;
}

metrale_explanation explain_ba(const metrale_runtime* handle, std::uint32_t m, std::uint32_t n, std::uint32_t k,
                               std::uint32_t k_stride, const metrale_explanation& caller) {
  const Runtime& runtime = runtime_of(handle);
  metrale_explanation out = start(handle, caller, kBaGatesTwinLever);
  const ops::BaGatesKernels kernels = runtime.ba_gates_kernels();
  const KernelHandle parent = present_as(runtime, kernels.parent, ops::kBaGatesParentKernel);
  const KernelHandle twin = present_as(runtime, kernels.twin, ops::kBaGatesTwinKernel);
  const KernelHandle mma = present_as(runtime, kernels.mma, ops::kBaGatesMmaKernel);
  const std::uint32_t stride = k_stride == 0 ? k : k_stride;
  const bool requested = out.requested != 0;
  const bool tc_requested = lever_of(handle, kBaGatesTensorCoreLever).value;
  const ops::BaGatesPick pick = ops::ba_gates_pick_with_mma(
      tensor_core_query(runtime, mma, tc_requested, out.sm_count, m, n, k, stride), mma, requested, parent, twin);
  out.pick = ba_gates_pick_of(pick);
  out.twin_present = twin.present() ? 1 : 0;
  out.parent_present = parent.present() ? 1 : 0;
  const std::uint32_t min_m = ops::ba_gates_min_tokens(out.sm_count);
  set_min(out, min_m, ops::ssm_ba_gates_hopper_reject(requested, twin.present(), min_m, n, k, stride, out.sm_count));
  out.tensor_core_requested = tc_requested ? 1 : 0;
  out.tensor_core_present = mma.present() ? 1 : 0;
  ops::BaGatesMmaQuery at_min = tensor_core_query(runtime, mma, tc_requested, out.sm_count, 0, n, k, stride);
  at_min.m = ops::ba_gates_mma_min_m(at_min);
  const std::optional<std::string_view> tc_reject = ops::ssm_ba_gates_mma_reject(at_min);
  out.tensor_core_min_m = tc_reject ? 0 : at_min.m;
  out.tensor_core_min_reason = tc_reject ? intern(*tc_reject) : nullptr;
  return out;
}

metrale_explanation explain_fp8(const metrale_runtime* handle, std::uint32_t m, std::uint32_t k,
                                const metrale_explanation& caller) {
  const Runtime& runtime = runtime_of(handle);
  metrale_explanation out = start(handle, caller, kFp8TwinLever);
  ops::Fp8QuantKernels kernels = runtime.fp8_quant_kernels();
  kernels.shared = present_as(runtime, kernels.shared, ops::kFp8QuantSharedKernel);
  kernels.twin = present_as(runtime, kernels.twin, ops::kFp8QuantTwinKernel);
  const bool requested = out.requested != 0;
  const ops::Fp8QuantPick pick = ops::fp8_quant_pick(requested, kernels, m, k, out.sm_count);
  out.pick = to_pick(pick.twin ? ops::kFp8QuantTwinKernel : ops::kFp8QuantSharedKernel, pick.twin, pick.reject);
  out.twin_present = kernels.twin.present() ? 1 : 0;
  out.parent_present = kernels.shared.present() ? 1 : 0;
  const std::uint32_t groups = kernels.twin_params.groups;
  const std::uint32_t min_m = ops::fp8_quant_hopper_min_m(k, out.sm_count, groups);
  set_min(out, min_m,
          ops::fp8_act_quant_hopper_reject(requested, kernels.twin.present(), kernels.shared.present(), min_m, k,
                                           out.sm_count, groups));
  return out;
}

}  // namespace
}  // namespace metrale::capi

extern "C" {

void metrale_explanation_init(metrale_explanation* explanation) {
  if (explanation != nullptr) {
    *explanation = metrale_explanation{};
    explanation->struct_size = sizeof(metrale_explanation);
  }
}

metrale_status metrale_explain_ssm_ba_gates(const metrale_runtime* runtime, uint32_t m, uint32_t n, uint32_t k,
                                            uint32_t k_stride, metrale_explanation* explanation) {
  using namespace metrale::capi;
  return capi_call("metrale_explain_ssm_ba_gates", [&] {
    require_struct(explanation, "explanation");
    *explanation = explain_ba(runtime, m, n, k, k_stride, *explanation);
  });
}

metrale_status metrale_explain_fp8_act_quant(const metrale_runtime* runtime, uint32_t m, uint32_t k,
                                             metrale_explanation* explanation) {
  using namespace metrale::capi;
  return capi_call("metrale_explain_fp8_act_quant", [&] {
    require_struct(explanation, "explanation");
    *explanation = explain_fp8(runtime, m, k, *explanation);
  });
}

}  // extern "C"
