// ops_bench_roles.cpp: the roles of ops_bench_roles.hpp, read from the runtime's op contexts.
#include "ops_bench_roles.hpp"

#include <optional>
#include <vector>

#include "metrale/runtime.hpp"

namespace metrale::bench {
namespace {

// One role's handle and parameters as the runtime holds them now (its op context); `params`
// keeps the op's defaults when the target does not ship the role. The bench launches each kernel
// directly: it times kernels, not the op's pick.
// Returns why verification refused the role on this device, empty when it did not: this runtime's
// refusal (its handle is then 0) or the child process's (settings.refused; the handle is dropped
// here, so the kernel is never launched and the op's own pick passes over it, as the library's does).
std::string take_role(const ops::OpContext& context, std::string_view role, const BenchSettings& settings,
                      KernelHandle& handle, KernelParams& params) {
  const ops::OpKernel& kernel = context.kernel(role);
  handle = kernel.handle;
  params = kernel.shipped ? kernel.params : params;
  std::string refusal(kernel.refusal);
  if (refusal.empty() && kernel.shipped) {
    if (const auto found = settings.refused.find(refusal_key(kernel.kernel, kernel.params.tag()));
        found != settings.refused.end()) {
      refusal = found->second;
    }
  }
  if (!refusal.empty()) {
    handle = KernelHandle{0};
  }
  return refusal;
}

}  // namespace

ops::BaGatesKernels ba_gates_kernels(const Runtime& runtime, const BenchSettings& settings, BaRefusals& refusals) {
  const ops::OpContext context = runtime.op_context("ssm_ba_gates");
  ops::BaGatesKernels kernels;
  refusals.parent = take_role(context, "parent", settings, kernels.parent, kernels.parent_params);
  refusals.twin = take_role(context, "twin", settings, kernels.twin, kernels.twin_params);
  refusals.mma = take_role(context, "tensor_core", settings, kernels.mma, kernels.mma_params);
  refusals.decode = take_role(context, "decode", settings, kernels.splitk, kernels.splitk_params);
  kernels.fallback_sm_count = context.fallback_sm_count;
  return kernels;
}

KernelResult new_result(std::string op, std::string kernel, std::uint32_t m, std::uint32_t k, std::uint32_t n) {
  KernelResult result;
  result.op = std::move(op);
  result.kernel = std::move(kernel);
  result.m = m;
  result.k = k;
  result.n = n;
  return result;
}

KernelResult refused_result(std::string op, std::string kernel, std::uint32_t m, std::uint32_t k, std::uint32_t n,
                            std::uint64_t bytes, const std::string& refusal) {
  KernelResult result = new_result(std::move(op), std::move(kernel), m, k, n);
  result.bytes = bytes;
  result.refused = refusal;
  result.check_note = "refused by verification: " + refusal;
  return result;
}

// The tensor-core kernel's shape-specialised variant for N when the runtime has it published
// (hopper pins N = 96; Runtime::shape_variants says which), else an absent handle: the bench
// times it beside the generic form, so a device run compares the two at each M (issue 26).

ShapedMma shaped_mma(Runtime& runtime, const BenchSettings& settings, std::uint32_t n, std::uint32_t k,
                     std::uint32_t vpg, std::string& refusal) {
  const std::vector<ops::NamedArg> shape{{"m", 1}, {"n", n}, {"k", k}, {"vheads_per_group", vpg}};
  const std::optional<DeviceIndex> device = runtime.registry().device_index(*runtime.backend());
  for (const ShapeVariantState& state : runtime.shape_variants("ssm_ba_gates", shape)) {
    if (state.role != "tensor_core" || !state.published || !device) {
      continue;
    }
    if (const auto found = settings.refused.find(refusal_key(state.kernel, state.params.tag()));
        found != settings.refused.end()) {
      refusal = found->second;
      return ShapedMma{KernelHandle{0}, state.params};
    }
    if (const std::optional<VariantId> id = runtime.registry().find(state.kernel, state.params)) {
      return ShapedMma{runtime.registry().handle(*device, *id), state.params};
    }
  }
  return {};
}

ops::Fp8QuantKernels fp8_quant_kernels(const Runtime& runtime, const BenchSettings& settings,
                                       std::array<std::string, 2>& refusals) {
  const ops::OpContext context = runtime.op_context("fp8_act_quant");
  ops::Fp8QuantKernels kernels;
  refusals[0] = take_role(context, "parent", settings, kernels.shared, kernels.shared_params);
  refusals[1] = take_role(context, "twin", settings, kernels.twin, kernels.twin_params);
  kernels.fallback_sm_count = context.fallback_sm_count;
  return kernels;
}

}  // namespace metrale::bench
