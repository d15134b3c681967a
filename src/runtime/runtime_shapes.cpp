// runtime_shapes.cpp: shape-specialised variants (ops/op_declaration.hpp's ShapeConstantDecl) on
// the runtime: pinned values declared before open() loads (one batch with the target's kernels),
// a value first met by a call asked for in the background, the specialised variant taken once
// published. Knows no op: the op, its role, its argument and the rule come from the declaration.
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

void Runtime::take_shape_variants(ops::OpContext& context, ops::OpArgValues values, std::uint64_t stream) const {
  const ops::OpDeclaration& op = *context.op;
  for (const ops::ShapeConstantDecl& constant : op.shape_constants) {
    const ShapeSlot slot = slot_of(op, constant);
    ops::OpKernel& kernel = context.kernels[slot.role];
    const ops::ShapeChoice choice = kernel.shipped ? constant.rule(values[slot.arg]) : ops::ShapeChoice{};
    if (choice.shape == 0) {
      continue;
    }
    // Once declared, a variant is found without shapes_mutex_ (the registry's lookup is itself
    // thread-safe): the mutex orders only the first declaration, off the steady call path.
    std::optional<VariantId> id = shape_variant_id(kernel, choice.shape, false);
    if (!id) {
      std::lock_guard lock(shapes_mutex_);
      id = shape_variant_id(kernel, choice.shape, false);
      // A capture records launches; a build started from one would never be waited for by it.
      if (!id && !backend_->is_capturing(stream)) {
        id = shape_variant_id(kernel, choice.shape, true);
        if (id) {
          logger().info("{}: {} = {} met: building {} with shape {} in the background", op.name, constant.arg,
                        values[slot.arg], kernel.kernel, choice.shape);
          registry_->load_in_background(*backend_, {*id});
        }
      }
    }
    const KernelHandle handle = id ? registry_->handle(device_, *id) : KernelHandle{};
    if (handle.present()) {
      kernel.handle = handle;
      kernel.params.shape = choice.shape;
    }
  }
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
  for (const ops::PinnedVariant& pinned : plan.variants) {
    ops::OpKernel kernel;
    kernel.kernel = pinned.kernel;
    kernel.params = pinned.params;
    (void)shape_variant_id(kernel, pinned.params.shape, true);
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
  const ops::OpContext context = op_context(op);
  std::array<std::uint64_t, ops::kMaxArgs> values{};
  const std::span<std::uint64_t> bound(values.data(), context.op->args.size());
  ops::bind_shape(*context.op, shape, bound);
  return shape_states(context, bound);
}

}  // namespace metrale
