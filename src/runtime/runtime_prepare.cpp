// runtime_prepare.cpp: Runtime::prepare (every first-call thing of an op at a shape, ahead) and
// the context an op call on a stream capturing into a CUDA graph runs with, which offers only
// what prepare made ready (Runtime::run_entry in runtime.cpp calls it; ops/op_capture.hpp has the
// decisions, runtime/prepared_gpu.hpp the backends they run on).
// Invariants: the capture path allocates nothing, compiles, loads, queries and sets nothing;
// it reads a snapshot of the prepared handles, so a kernel arriving later is not picked up. A
// shape-specialised variant is prepared at its shape (built here when no call built it yet) and
// offered to a capture only at that shape.
#include <fmt/format.h>

#include <algorithm>

#include "metrale/error.hpp"
#include "metrale/runtime.hpp"
#include "ops/op_capture.hpp"
#include "runtime/prepared_gpu.hpp"

namespace metrale {
namespace {

// A stand-in address for tensor argument `index` of a dry run: never read or written, far apart
// so no two overlap, aligned past any alignment an argument may ask for.
std::uint64_t stand_in_address(std::size_t index) { return std::uint64_t{index + 1} << 36; }

}  // namespace

std::vector<ops::Pick> Runtime::prepare(std::string_view op, std::span<const ops::NamedArg> shape,
                                        std::string_view role) {
  const CallScope scope(*this);
  const ResolvedOp& entry = resolved(op);
  const ops::OpDeclaration& declaration = *entry.op;
  if (!backend_ || !capture_->gpu) {
    throw BackendError(fmt::format("prepare {}: no device: {}", declaration.name, no_device_reason_));
  }
  ops::OpContext context = context_of(entry);
  std::array<std::uint64_t, ops::kMaxArgs> values{};
  const std::span<std::uint64_t> bound(values.data(), declaration.args.size());
  ops::bind_shape(declaration, shape, bound);
  // The variant a call at this shape takes once everything arrived: built (or waited for) here.
  // Prepare for one forced role builds a variant only for that role.
  if (!declaration.shape_constants.empty()) {
    const bool build = role.empty() || shape_build_for(declaration, role) == ShapeBuild::kNow;
    take_shape_variants(context, bound, 0, build ? ShapeBuild::kNow : ShapeBuild::kNever);
  }
  for (std::size_t i = 0; i < declaration.args.size(); ++i) {
    if (declaration.args[i].tensor() && bound[i] == 0) {
      bound[i] = stand_in_address(i);
    }
  }
  // The guards' own pick first (its errors are the caller's), then every loaded role forced, so
  // the kernels a capture may fall back to are ready too (a role that refuses the shape is skipped).
  std::vector<std::string_view> asked;
  if (!role.empty()) {
    asked.push_back(ops::resolve_role(declaration, role));
  } else {
    asked.emplace_back();
    for (std::size_t i = 0; i < declaration.roles.size(); ++i) {
      if (context.kernels[i].handle.present()) {
        asked.push_back(declaration.roles[i].role);
      }
    }
  }
  PrepareGpu dry(*backend_, capture_->launches);
  context.gpu = &dry;
  std::vector<ops::Pick> picks;
  for (const std::string_view forced : asked) {
    try {
      picks.push_back(ops::run_op(context, ops::OpCall{bound, 0, forced}));
    } catch (const Error&) {
      if (forced.empty() || !role.empty()) {
        throw;
      }
    }
  }
  const std::vector<KernelHandle>& launched = dry.launched();
  std::lock_guard lock(capture_->mutex);
  ops::PreparedHandles& prepared = capture_->handles[static_cast<std::size_t>(&entry - resolved_.data())];
  for (std::size_t i = 0; i < declaration.roles.size(); ++i) {
    const KernelHandle handle = context.kernels[i].handle;
    if (handle.present() && std::find(launched.begin(), launched.end(), handle) != launched.end() &&
        !prepared[i].keep(context.kernels[i].params.shape, handle)) {
      throw ArgumentError(
          fmt::format("prepare {}: role '{}' has {} shape-specialised variants prepared already, the most "
                      "a capture keeps ready",
                      declaration.name, declaration.roles[i].role, ops::kMaxPreparedShapes));
    }
  }
  return picks;
}

ops::OpContext Runtime::capture_context(const ResolvedOp& entry, std::string_view forced_role, ops::CaptureMask& mask,
                                        ops::OpArgValues values) const {
  ops::PreparedHandles prepared;
  {
    std::lock_guard lock(capture_->mutex);
    prepared = capture_->handles[static_cast<std::size_t>(&entry - resolved_.data())];
  }
  ops::OpContext context = context_of(entry);
  // The call's shape variants as published (a lookup: nothing declared, built or asked for), so a
  // variant prepared at this call's shape is the one offered.
  if (!values.empty() && !entry.op->shape_constants.empty()) {
    take_shape_variants(context, values, 0, ShapeBuild::kNever);
  }
  mask = ops::mask_for_capture(context, prepared);
  if (const std::optional<std::string> refusal = ops::capture_refusal(context, mask, forced_role)) {
    throw CaptureError(*refusal);
  }
  context.gpu = capture_->gpu.get();
  return context;
}

}  // namespace metrale
