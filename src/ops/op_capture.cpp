// op_capture.cpp: the capture decisions of ops/op_capture.hpp (which kernels a capture may run,
// the verdicts it names, the launch configurations prepare saw).
#include "ops/op_capture.hpp"

#include <fmt/format.h>

namespace metrale::ops {

KernelHandle PreparedRole::at(std::uint32_t shape) const {
  if (shape == 0) {
    return generic;
  }
  for (std::size_t i = 0; i < kMaxPreparedShapes; ++i) {
    if (shapes[i] == shape) {
      return specialised[i];
    }
  }
  return {};
}

bool PreparedRole::keep(std::uint32_t shape, KernelHandle handle) {
  if (shape == 0) {
    generic = handle;
    return true;
  }
  for (std::size_t i = 0; i < kMaxPreparedShapes; ++i) {
    if (shapes[i] == shape || shapes[i] == 0) {
      shapes[i] = shape;
      specialised[i] = handle;
      return true;
    }
  }
  return false;
}

CaptureMask mask_for_capture(OpContext& context, const PreparedHandles& prepared) {
  CaptureMask mask;
  const std::size_t roles = context.op != nullptr ? context.op->roles.size() : 0;
  for (std::size_t i = 0; i < roles; ++i) {
    OpKernel& kernel = context.kernels[i];
    const PreparedRole& role = prepared[i];
    const KernelHandle live = kernel.handle;
    // The prepared handle, not the live one: what the capture records is what prepare made ready.
    KernelHandle offered = kernel.params.shape != 0 ? role.at(kernel.params.shape) : KernelHandle{};
    if (!offered.present()) {
      offered = role.generic;
      kernel.params.shape = 0;  // the generic form takes any shape; its launcher checks none
    }
    mask.declined[i] = live.present() && !offered.present();
    kernel.handle = offered;
    mask.offered += offered.present() ? 1U : 0U;
  }
  return mask;
}

std::optional<std::string> capture_refusal(const OpContext& context, const CaptureMask& mask,
                                           std::string_view forced_role) {
  const std::string_view op = context.op != nullptr ? std::string_view(context.op->name) : "an op";
  if (mask.offered == 0) {
    return capture_error_text(op, "no kernel of it is prepared");
  }
  if (!forced_role.empty() && context.op != nullptr) {
    const auto index = context.op->role_index(forced_role);
    if (index && !context.kernels[*index].handle.present()) {
      return capture_error_text(op, fmt::format("the forced role '{}' is not prepared", forced_role));
    }
  }
  return std::nullopt;
}

void name_capture_declines(Pick& pick, const OpContext& context, const CaptureMask& mask) {
  if (context.op == nullptr) {
    return;
  }
  for (std::size_t v = 0; v < pick.verdict_count; ++v) {
    Verdict& verdict = pick.verdicts[v];
    const auto index = context.op->role_index(verdict.role);
    if (verdict.reason && index && mask.declined[*index]) {
      verdict.reason = kNotPreparedForCapture;
    }
  }
}

PreparedLaunch launch_key(KernelHandle kernel, const LaunchConfig& config) {
  PreparedLaunch key;
  key.kernel = kernel;
  key.block_threads = config.block.volume();
  key.dynamic_shared_bytes = config.dynamic_shared_bytes;
  key.cluster_blocks = config.cluster_blocks;
  return key;
}

bool same_configuration(const PreparedLaunch& a, const PreparedLaunch& b) {
  return a.kernel == b.kernel && a.block_threads == b.block_threads &&
         a.dynamic_shared_bytes == b.dynamic_shared_bytes && a.cluster_blocks == b.cluster_blocks;
}

const PreparedLaunch* find_prepared(std::span<const PreparedLaunch> prepared, const PreparedLaunch& key) {
  for (const PreparedLaunch& record : prepared) {
    if (same_configuration(record, key)) {
      return &record;
    }
  }
  return nullptr;
}

std::string capture_error_text(std::string_view op, std::string_view problem) {
  return fmt::format(
      "{} on a capturing stream: {}; call prepare (Runtime::prepare, metrale_op_prepare, rt.prepare) with this "
      "shape before the capture (nothing was launched; the capture is intact)",
      op, problem);
}

}  // namespace metrale::ops
