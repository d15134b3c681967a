// runtime_shapes.cpp: shape-specialised variants (ops/op_declaration.hpp's ShapeConstantDecl) on
// the runtime: pinned values declared before open() loads (one batch with the target's kernels),
// a value first met by a call asked for in the background, the specialised variant taken once
// published. With LoadMode::kBackgroundTwins a kernel with pinned values has its generic form
// left out of open()'s batch (RuntimeOptions::generic_at_open says otherwise): a value the rule refuses asks for it,
// the guards' next kernel running until it arrives; an unpinned value the rule takes asks for its own variant instead
// (it compiles faster than the generic would). prepare builds on its thread what a call at its shape takes; a capture
// only looks up what is published. Knows no op: the op, its role, its argument and the rule come from the declaration.
// Invariants: a call during a CUDA graph capture never declares nor requests a variant (it takes
// one already published); each variant is declared and requested once (shapes_mutex_); a value
// the rule refuses stays on the generic variant, and the refusal is the rule's named reason.
#include <fmt/format.h>

#include <algorithm>

#include "ground/log.hpp"
#include "metrale/error.hpp"
#include "metrale/runtime.hpp"
#include "ops/pinned_shapes.hpp"

namespace metrale {

namespace {

struct ShapeSlot {
  std::size_t role = 0;
  std::size_t arg = 0;
};

// The role and argument indices of a shape constant (check_declaration made sure they exist).
ShapeSlot slot_of(const ops::OpDeclaration& op, const ops::ShapeConstantDecl& shape) {
  return ShapeSlot{op.role_index(shape.role).value_or(0), op.arg_index(shape.arg).value_or(0)};
}

}  // namespace

Runtime::ShapeBuild Runtime::shape_build_for(const ops::OpDeclaration& op, std::string_view forced_role) {
  if (forced_role.empty()) {
    return ShapeBuild::kInBackground;
  }
  const std::string_view role = ops::resolve_role(op, forced_role);
  const bool shaped = std::any_of(op.shape_constants.begin(), op.shape_constants.end(),
                                  [&](const ops::ShapeConstantDecl& constant) { return constant.role == role; });
  return shaped ? ShapeBuild::kNow : ShapeBuild::kInBackground;
}

std::optional<VariantId> Runtime::shape_variant_id(const ops::OpKernel& kernel, std::uint32_t shape,
                                                   bool declare) const {
  KernelParams params = kernel.params;
  params.shape = shape;
  if (std::optional<VariantId> known = registry_->find(kernel.kernel, params)) {
    return known;
  }
  const KernelEntry* shipped = target_.find_kernel(kernel.kernel);
  if (!declare || shipped == nullptr) {
    return std::nullopt;
  }
  KernelEntry entry = *shipped;
  entry.params = params;
  return registry_->declare(variant_of_(entry));
}

void Runtime::take_shape_variants(ops::OpContext& context, ops::OpArgValues values, std::uint64_t stream,
                                  ShapeBuild build) const {
  const ops::OpDeclaration& op = *context.op;
  for (const ops::ShapeConstantDecl& constant : op.shape_constants) {
    const ShapeSlot slot = slot_of(op, constant);
    ops::OpKernel& kernel = context.kernels[slot.role];
    const ops::ShapeChoice choice = kernel.shipped ? constant.rule(values[slot.arg]) : ops::ShapeChoice{};
    if (choice.shape == 0) {
      // A value no variant is specialised for runs the generic form: built now if open() left it.
      if (kernel.shipped && !kernel.handle.present() && build != ShapeBuild::kNever) {
        take_generic_form(kernel, stream, build);
      }
      continue;
    }
    // Once declared, a variant is found without shapes_mutex_ (the registry's lookup is itself
    // thread-safe): the mutex orders only the first declaration, off the steady call path.
    std::optional<VariantId> id = shape_variant_id(kernel, choice.shape, false);
    bool build_here = false;
    if (!id && build != ShapeBuild::kNever) {
      std::lock_guard lock(shapes_mutex_);
      id = shape_variant_id(kernel, choice.shape, false);
      // A capture records launches; a build started from one would never be waited for by it.
      if (!id && !backend_->is_capturing(stream)) {
        id = shape_variant_id(kernel, choice.shape, true);
        if (id && build == ShapeBuild::kInBackground) {
          logger().info("{}: {} = {} met: building {} with shape {} in the background", op.name, constant.arg,
                        values[slot.arg], kernel.kernel, choice.shape);
          registry_->load_in_background(*backend_, {*id});
        }
        build_here = id && build == ShapeBuild::kNow;
      }
    }
    if (id && build == ShapeBuild::kNow && !registry_->handle(device_, *id).present()) {
      // Declared here: built here, outside the mutex (a call meanwhile finds it declared and runs
      // what is there). Declared before: its build is in flight (or failed, or was refused).
      if (build_here) {
        logger().info("{}: {} = {}: building {} with shape {} for prepare", op.name, constant.arg, values[slot.arg],
                      kernel.kernel, choice.shape);
        registry_->load_now(*backend_, std::span<const VariantId>(&*id, 1));
      } else {
        registry_->wait_background();
      }
    }
    const KernelHandle handle = id ? registry_->handle(device_, *id) : KernelHandle{};
    if (handle.present()) {
      kernel.handle = handle;
      kernel.params.shape = choice.shape;
    } else if (!kernel.handle.present() && build == ShapeBuild::kNow) {
      take_generic_form(kernel, stream, build);  // its variant failed or was refused
    }
  }
}

void Runtime::take_generic_form(ops::OpKernel& kernel, std::uint64_t stream, ShapeBuild build) const {
  // generic_on_request_ is written once, in open(), before any call: read without the mutex, so a
  // generic form that is merely absent (failed, refused) costs a call no lock.
  if (generic_on_request_.empty()) {
    return;
  }
  const std::optional<VariantId> id = registry_->find(kernel.kernel, kernel.params);
  if (!id || std::find(generic_on_request_.begin(), generic_on_request_.end(), *id) == generic_on_request_.end()) {
    return;
  }
  bool asked = false;
  {
    std::lock_guard lock(shapes_mutex_);
    asked = std::find(generic_requested_.begin(), generic_requested_.end(), *id) != generic_requested_.end();
    if (!asked && backend_->is_capturing(stream)) {
      return;
    }
    if (!asked) {
      generic_requested_.push_back(*id);
    }
  }
  if (asked && build == ShapeBuild::kNow) {
    registry_->wait_background();  // a call asked for it in the background: prepare waits for it
  } else if (!asked && build == ShapeBuild::kNow) {
    logger().info("{} {}: building the generic form for prepare", kernel.kernel, kernel.params.tag());
    registry_->load_now(*backend_, std::span<const VariantId>(&*id, 1));
  } else if (!asked) {
    logger().info("{} {}: a value no pinned shape covers met: building the generic form in the background",
                  kernel.kernel, kernel.params.tag());
    registry_->load_in_background(*backend_, {*id});
  }
  kernel.handle = registry_->handle(device_, *id);
}

void Runtime::declare_pinned_shapes(const RuntimeOptions& options) {
  std::vector<ops::PinRequest> pins = ops::target_pins(target_);
  for (const auto& [key, values] : options.shapes) {
    pins.push_back(ops::options_pin(key, values));
  }
  const ops::PinnedPlan plan = ops::plan_pinned_shapes(target_, pins, ops_);
  for (const ops::PinnedRefusal& refused : plan.refused) {
    logger().warn("{} = {}: stays on the generic variant: {}", refused.where, refused.value, refused.reason);
  }
  std::lock_guard lock(shapes_mutex_);
  std::vector<VariantId> pinned_ids;
  for (const ops::PinnedVariant& pinned : plan.variants) {
    ops::OpKernel kernel;
    kernel.kernel = pinned.kernel;
    kernel.params = pinned.params;
    if (const std::optional<VariantId> id = shape_variant_id(kernel, pinned.params.shape, true)) {
      pinned_ids.push_back(*id);
    }
  }
  if (options.load_mode == LoadMode::kBackgroundTwins && !options.generic_at_open) {
    generic_on_request_ = ops::defer_generic_forms(*registry_, pinned_ids);
  }
}

std::vector<ShapeVariantState> Runtime::shape_states(const ops::OpContext& context, ops::OpArgValues values) const {
  std::vector<ShapeVariantState> states;
  const ops::OpDeclaration& op = *context.op;
  for (const ops::ShapeConstantDecl& constant : op.shape_constants) {
    const ShapeSlot slot = slot_of(op, constant);
    const ops::OpKernel& kernel = context.kernels[slot.role];
    ShapeVariantState state{constant.role, kernel.kernel, constant.arg, values[slot.arg], 0, {},
                            kernel.params, false,         false};
    const ops::ShapeChoice choice =
        kernel.shipped ? constant.rule(state.value) : ops::ShapeChoice{0, "the target does not ship the kernel"};
    state.shape = choice.shape;
    state.refusal = choice.refusal;
    if (choice.shape != 0) {
      state.params.shape = choice.shape;
      std::optional<VariantId> id;
      {
        std::lock_guard lock(shapes_mutex_);
        id = shape_variant_id(kernel, choice.shape, false);
      }
      state.declared = id.has_value();
      state.published = backend_ && id && registry_->handle(device_, *id).present();
    }
    states.push_back(state);
  }
  return states;
}

std::vector<ShapeVariantState> Runtime::shape_variants(std::string_view op,
                                                       std::span<const ops::NamedArg> shape) const {
  const CallScope scope(*this);
  const ops::OpContext context = op_context(op);
  std::array<std::uint64_t, ops::kMaxArgs> values{};
  const std::span<std::uint64_t> bound(values.data(), context.op->args.size());
  ops::bind_shape(*context.op, shape, bound);
  return shape_states(context, bound);
}

}  // namespace metrale
