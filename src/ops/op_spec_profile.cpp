// ops/op_spec_profile.cpp: the profile's hook of an op declared as data (TOML, JSON, a Python
// dict), derived from its compiled program alone: `metrale-jit profile --op-file` then prices an
// engine's op as it does the library's. The shape's m, n and k (and vheads_per_group when not 0)
// fill the scalars of those names, every other scalar takes its fallback; each tensor is allocated
// at its declared dims, an output declared in place of an input at that input's address; each role
// launches through launch_role, the call path's own launcher, at the kernel parameters it is priced
// at. The compulsory bytes are every tensor's declared bytes once (read or written once).
// Invariants: a required scalar the shape does not give, a tensor with no dims, and a shape the
// op's rules refuse are ArgumentErrors naming the op and the argument or rule; the program and the
// kernels' names live as long as the hook.
#include <fmt/format.h>

#include <array>
#include <deque>
#include <string>

#include "metrale/error.hpp"
#include "ops/op_profile_hook.hpp"
#include "ops/op_spec_program.hpp"

namespace metrale::ops {
namespace {

// The hook with the strings its kernels view.
struct SpecOpProfile final : OpProfile {
  std::deque<std::string> names;
};

// The call's values at `shape`, tensors left at 0.
std::array<std::uint64_t, kMaxArgs> shape_values(const SpecProgram& program, const ProfileShape& shape) {
  std::array<std::uint64_t, kMaxArgs> values{};
  for (std::size_t i = 0; i < program.args.size(); ++i) {
    const ArgDecl& arg = program.args[i];
    if (arg.tensor()) {
      continue;
    }
    if (arg.name == "m" || arg.name == "n" || arg.name == "k") {
      values[i] = arg.name == "m" ? shape.m : arg.name == "n" ? shape.n : shape.k;
    } else if (arg.name == "vheads_per_group" && shape.vheads_per_group != 0) {
      values[i] = shape.vheads_per_group;
    } else if (arg.fallback) {
      values[i] = *arg.fallback;
    } else {
      throw ArgumentError(
          fmt::format("profile of {}: its argument '{}' has no fallback, and the profile gives only "
                      "m, n, k and vheads_per_group",
                      program.op, arg.name));
    }
  }
  return values;
}

// Elements of tensor `i` at `slots` (its dims' product).
std::uint64_t tensor_elements(const SpecProgram& program, std::size_t i, const SpecSlots& slots) {
  const ArgDecl& arg = program.args[i];
  if (program.dims[i].empty()) {
    throw ArgumentError(fmt::format("profile of {}: tensor '{}' declares no dims, so the profile cannot size it",
                                    program.op, arg.name));
  }
  std::uint64_t elements = 1;
  for (const Expr& dim : program.dims[i]) {
    const ExprResult result = dim.evaluate(slots);
    if (!result.ok() || result.value < 0 ||
        __builtin_mul_overflow(elements, static_cast<std::uint64_t>(result.value), &elements)) {
      throw ArgumentError(fmt::format("profile of {}: tensor '{}': dim '{}' is {} at this shape", program.op, arg.name,
                                      dim.text(), result.ok() ? "out of range" : to_string(result.fault)));
    }
  }
  return elements;
}

class SpecLaunches final : public ProfiledLaunches {
 public:
  SpecLaunches(std::shared_ptr<const SpecProgram> program, GpuBackend& gpu, const ProfileShape& shape)
      : program_(std::move(program)), buffers_(gpu), values_(shape_values(*program_, shape)) {
    const SpecProgram& p = *program_;
    fill_arg_slots(p, values(), slots_);
    for (std::size_t i = 0; i < p.args.size(); ++i) {
      const ArgDecl& arg = p.args[i];
      if (!arg.tensor() || !arg.in_place_of.empty()) {
        continue;
      }
      const std::uint64_t elements = tensor_elements(p, i, slots_);
      switch (arg.dtype) {
        case DType::kBf16:
          values_[i] = buffers_.bf16(elements).address;
          break;
        case DType::kFp32:
          values_[i] = buffers_.floats(elements).address;
          break;
        default:
          values_[i] = buffers_.bytes(elements * dtype_bytes(arg.dtype)).address;
      }
    }
    for (std::size_t i = 0; i < p.args.size(); ++i) {
      if (p.args[i].tensor() && !p.args[i].in_place_of.empty()) {
        values_[i] = values_[*index_of(p.args[i].in_place_of)];
      }
    }
    fill_arg_slots(p, values(), slots_);
    check_shape_rules(p, values(), slots_);
    slots_[p.device_slots] = gpu.sm_count().value_or(1);
    const std::optional<ComputeCapability> cc = gpu.compute_capability();
    slots_[p.device_slots + 1] = cc ? cc->major : 0;
    slots_[p.device_slots + 2] = cc ? cc->minor : 0;
  }
  [[nodiscard]] Dim3 block(const ProfiledKernel& kernel, const KernelParams& params) const override {
    SpecSlots slots = slots_;
    const CompiledRole& role = with_role(kernel, params, slots);
    return role_block(*program_, role, values(), slots);
  }
  void launch(const ProfiledKernel& kernel, KernelHandle handle, const KernelParams& params) override {
    SpecSlots slots = slots_;
    const CompiledRole& role = with_role(kernel, params, slots);
    launch_role(*program_, role, buffers_.gpu(), handle, values(), slots, 0);
  }

 private:
  [[nodiscard]] OpArgValues values() const { return {values_.data(), program_->args.size()}; }
  [[nodiscard]] std::optional<std::size_t> index_of(std::string_view name) const {
    for (std::size_t i = 0; i < program_->args.size(); ++i) {
      if (program_->args[i].name == name) {
        return i;
      }
    }
    return std::nullopt;
  }
  // The role of `kernel`, its parameters and presence written into `slots`.
  const CompiledRole& with_role(const ProfiledKernel& kernel, const KernelParams& params, SpecSlots& slots) const {
    for (const auto& role : program_->roles) {
      if (role->role == kernel.role) {
        const std::size_t base = program_->role_slots + 4 * role->index;
        slots[base] = params.block;
        slots[base + 1] = params.lanes;
        slots[base + 2] = params.groups;
        slots[base + 3] = 1;
        return *role;
      }
    }
    throw ArgumentError(fmt::format("profile of {}: no role '{}'", program_->op, kernel.role));
  }

  std::shared_ptr<const SpecProgram> program_;
  ProfileBuffers buffers_;
  std::array<std::uint64_t, kMaxArgs> values_;
  SpecSlots slots_{};
};

}  // namespace

std::shared_ptr<const OpProfile> spec_profile(const std::shared_ptr<const SpecProgram>& program, const OpSpec& spec) {
  auto profile = std::make_shared<SpecOpProfile>();
  const std::string& label = profile->names.emplace_back(spec.name);
  profile->label = label;
  for (const SpecRole& role : spec.roles) {
    const std::string& name = profile->names.emplace_back(role.kernel.kernel);
    const std::string& role_name = profile->names.emplace_back(role.role);
    profile->kernels.push_back({name, role_name});
  }
  for (const ArgDecl& arg : spec.args) {
    profile->has_n = profile->has_n || (arg.name == "n" && !arg.tensor());
  }
  profile->compulsory_bytes = [program](const ProfileShape& shape) {
    const std::array<std::uint64_t, kMaxArgs> values = shape_values(*program, shape);
    SpecSlots slots{};
    fill_arg_slots(*program, {values.data(), program->args.size()}, slots);
    double bytes = 0;
    for (std::size_t i = 0; i < program->args.size(); ++i) {
      if (program->args[i].tensor()) {
        bytes += static_cast<double>(tensor_elements(*program, i, slots)) * dtype_bytes(program->args[i].dtype);
      }
    }
    return bytes;
  };
  profile->prepare = [program](GpuBackend& gpu, const ProfileShape& shape) -> std::unique_ptr<ProfiledLaunches> {
    return std::make_unique<SpecLaunches>(program, gpu, shape);
  };
  return profile;
}

}  // namespace metrale::ops
