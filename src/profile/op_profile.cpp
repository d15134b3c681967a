// profile/op_profile.cpp: runs an op's kernels on a profiled host backend and prices them on a
// target's roofline. Inputs are a seeded random pattern repeated over each buffer: the kernels'
// traffic does not depend on the values, and filling gigabytes with fresh numbers would cost
// more than the profile.
// Past 400 lines because it holds one runner branch per op (four); it shrinks when the profile
// prices an op from its declaration (issue 32 item 1) instead of naming it here.
#include "profile/op_profile.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <vector>

#include "host/host_backend.hpp"
#include "metrale/error.hpp"
#include "metrale/jit/source_set.hpp"
#include "metrale/ops/fp8_act_quant.hpp"
#include "metrale/ops/ssm_ba_gates.hpp"
#include "ops/fp8_act_quant/fp8_act_quant.hpp"
#include "ops/fused_add_rmsnorm/fused_add_rmsnorm.hpp"
#include "ops/op_kernels.hpp"
#include "ops/silu_mul_fp8_quant/silu_mul_fp8_quant.hpp"
#include "ops/ssm_ba_gates/ssm_ba_gates.hpp"
#include "profile/occupancy.hpp"
#include "ref/bf16.hpp"

namespace metrale {
namespace {

constexpr std::uint64_t kDefaultWaves = 2;
constexpr std::size_t kPatternElements = std::size_t{1} << 16;
constexpr std::uint32_t kQwenVheadsPerGroup = 3;
constexpr std::uint64_t kSeed = 0x9e3779b9;

struct OpKernel {
  std::string_view name;
  std::string_view role;
};

constexpr std::array<OpKernel, 3> kBaKernels{
    {{ops::kBaGatesParentKernel, "parent"}, {ops::kBaGatesTwinKernel, "twin"}, {ops::kBaGatesMmaKernel, "mma"}}};
constexpr std::array<OpKernel, 2> kFp8Kernels{
    {{ops::kFp8QuantSharedKernel, "shared"}, {ops::kFp8QuantTwinKernel, "twin"}}};
// The parent's two launches are its two roles (priced apart, as they run), then the fused twin.
constexpr std::array<OpKernel, 3> kSiluMulKernels{
    {{ops::kSiluMulParentKernel, "parent"}, {ops::kFp8QuantSharedKernel, "quant"}, {ops::kSiluMulTwinKernel, "twin"}}};
constexpr std::array<OpKernel, 2> kRmsnormKernels{
    {{ops::kRmsnormParentKernel, "parent"}, {ops::kRmsnormTwinKernel, "twin"}}};

// A device buffer of `bytes` holding `pattern` repeated.
template <typename T>
DevicePtr filled(HostBackend& gpu, std::size_t count, const std::vector<T>& pattern) {
  const DevicePtr ptr = gpu.alloc(std::max<std::size_t>(count, 1) * sizeof(T));
  for (std::size_t at = 0; at < count; at += pattern.size()) {
    const std::size_t n = std::min(pattern.size(), count - at);
    gpu.copy_to_device(DevicePtr{ptr.address + at * sizeof(T)}, pattern.data(), n * sizeof(T));
  }
  return ptr;
}

std::span<const OpKernel> op_kernels(ProfiledOp op) {
  switch (op) {
    case ProfiledOp::kBaGates:
      return kBaKernels;
    case ProfiledOp::kFp8Quant:
      return kFp8Kernels;
    case ProfiledOp::kFusedAddRmsnorm:
      return kRmsnormKernels;
    case ProfiledOp::kSiluMulFp8Quant:
      break;
  }
  return kSiluMulKernels;
}

SourceSet embedded_sources() {
  SourceSet sources;
  sources.add_embedded_templates();
  return sources;
}

std::vector<OpKernel> chosen_kernels(const HardwareTarget& target, const ProfileRequest& request) {
  const std::span<const OpKernel> all = op_kernels(request.op);
  std::vector<OpKernel> out;
  for (const std::string& wanted : request.kernels) {
    const auto found =
        std::find_if(all.begin(), all.end(), [&](const OpKernel& k) { return k.role == wanted || k.name == wanted; });
    if (found == all.end()) {
      std::vector<std::string> names;
      for (const OpKernel& k : all) {
        names.push_back(fmt::format("{} ({})", k.role, k.name));
      }
      throw ArgumentError(fmt::format("--kernel {}: not a kernel of {} (known: {})", wanted, to_string(request.op),
                                      fmt::join(names, ", ")));
    }
    if (target.find_kernel(found->name) == nullptr) {
      throw ArgumentError(fmt::format("--kernel {}: target {} does not ship {}", wanted, target.name, found->name));
    }
    out.push_back(*found);
  }
  if (request.kernels.empty()) {
    std::copy_if(all.begin(), all.end(), std::back_inserter(out),
                 [&](const OpKernel& k) { return target.find_kernel(k.name) != nullptr; });
  }
  return out;
}

ProfileShape resolved_shape(ProfiledOp op, ProfileShape shape) {
  if (op == ProfiledOp::kBaGates && shape.vheads_per_group == 0) {
    const std::uint32_t nv = shape.n / 2;
    shape.vheads_per_group = nv != 0 && nv % kQwenVheadsPerGroup == 0 ? kQwenVheadsPerGroup : std::max(nv, 1U);
  }
  return shape;
}

// Runs one kernel of the op under the profile; returns its traffic.
class OpRunner {
 public:
  OpRunner(HostBackend& gpu, ProfiledOp op, const ProfileShape& shape) : gpu_(gpu), op_(op), shape_(shape) {
    const auto bf16 = ref::random_bf16(kPatternElements, kSeed);
    const auto floats = ref::random_floats(kPatternElements, kSeed + 1, -1.0F, 1.0F);
    const std::uint64_t m = shape.m;
    if (op == ProfiledOp::kBaGates) {
      const std::uint32_t nv = shape.n / 2;
      ba_.x = filled(gpu, m * shape.k, bf16);
      ba_.weight = filled(gpu, std::size_t{shape.n} * shape.k, bf16);
      ba_.a_log = filled(gpu, nv, floats);
      ba_.dt_bias = filled(gpu, nv, floats);
      ba_.gate_out = filled(gpu, m * shape.n, floats);
      ba_.m = shape.m;
      ba_.n = shape.n;
      ba_.k = shape.k;
      ba_.k_stride = shape.k;
      ba_.gate_stride = shape.n;
      ba_.nv = nv;
      ba_.vheads_per_group = shape.vheads_per_group;
      ops::validate_ba_gates_args(ba_);
    } else if (op == ProfiledOp::kSiluMulFp8Quant) {
      // gate and up as the two halves of one [M][2K] buffer, as an MLP's gate-up projection
      // writes them; the scratch holds a bf16 pattern, so the quant step priced alone reads values.
      gate_up_ = filled(gpu, m * shape.k * 2, bf16);
      silu_.scratch = filled(gpu, m * shape.k, bf16);
      silu_.args.gate = gate_up_;
      silu_.args.up = DevicePtr{gate_up_.address + std::uint64_t{shape.k} * 2};
      silu_.args.q = filled(gpu, m * shape.k, std::vector<std::uint8_t>(kPatternElements, 0xA5));
      silu_.args.scales = filled(gpu, m * (shape.k / ops::kFp8QuantGroupSize), floats);
      silu_.args.m = shape.m;
      silu_.args.k = shape.k;
      silu_.args.gate_row_stride = silu_.args.up_row_stride = 2 * shape.k;
      ops::validate_silu_mul_fp8_quant_args(silu_.args);
    } else if (op == ProfiledOp::kFusedAddRmsnorm) {
      // hidden = K; in place (residual_out = residual, as vLLM calls it), with the FP8 output.
      rms_ = {filled(gpu, m * shape.k, bf16),
              filled(gpu, m * shape.k, bf16),
              filled(gpu, shape.k, bf16),
              filled(gpu, m * shape.k, bf16),
              {},
              filled(gpu, m * shape.k, std::vector<std::uint8_t>(kPatternElements, 0xA5)),
              filled(gpu, m * (shape.k / ops::kFp8QuantGroupSize), floats),
              shape.m,
              shape.k,
              shape.k,
              shape.k};
      rms_.residual_out = rms_.residual;
      ops::validate_fused_add_rmsnorm_args(rms_);
    } else {
      fp8_.x = filled(gpu, m * shape.k, bf16);
      fp8_.q = filled(gpu, m * shape.k, std::vector<std::uint8_t>(kPatternElements, 0xA5));
      fp8_.scales = filled(gpu, m * (shape.k / ops::kFp8QuantGroupSize), floats);
      fp8_.m = shape.m;
      fp8_.k = shape.k;
      fp8_.x_row_stride = shape.k;
      ops::validate_fp8_quant_args(fp8_);
    }
  }
  ~OpRunner() {
    for (DevicePtr ptr :
         {ba_.x, ba_.weight, ba_.a_log, ba_.dt_bias, ba_.gate_out, fp8_.x, fp8_.q, fp8_.scales, gate_up_, silu_.scratch,
          silu_.args.q, silu_.args.scales, rms_.x, rms_.residual, rms_.weight, rms_.y, rms_.q, rms_.scales}) {
      if (ptr.address != 0) {
        gpu_.free(ptr);
      }
    }
  }
  OpRunner(const OpRunner&) = delete;
  OpRunner& operator=(const OpRunner&) = delete;

  [[nodiscard]] Dim3 block(const OpKernel& kernel, const KernelParams& params) const {
    if (op_ == ProfiledOp::kBaGates || op_ == ProfiledOp::kFusedAddRmsnorm ||
        kernel.name == ops::kSiluMulParentKernel) {
      return Dim3{params.block, 1, 1};
    }
    return Dim3{params.lanes * std::max<std::uint32_t>(params.groups, 1), 1, 1};
  }

  // `variant`: the registry's declaration of the kernel at its parameters; its source and
  // expression let the host JIT build a variant the backend has no profiled instantiation of.
  // BackendError when the backend has no such instantiation and the host JIT cannot build one.
  KernelHandle load(const OpKernel& kernel, const KernelVariant& variant) {
    LoadRequest load;
    load.kernel = kernel.name;
    load.params = variant.params;
    load.name_expression = variant.name_expression;
    load.source = variant.source;
    load.sources = &sources_.sources();
    return gpu_.load(load);
  }

  // One launch of `handle` (load's, at `params`) as the op launches it.
  void launch(const OpKernel& kernel, KernelHandle handle, const KernelParams& params) {
    const bool twin = kernel.role == "twin";
    if (op_ == ProfiledOp::kBaGates) {
      if (kernel.role == "mma") {
        ops::launch_ba_gates_mma(gpu_, handle, params, ba_);
      } else if (twin) {
        ops::launch_ba_gates_twin(gpu_, handle, params, ba_);
      } else {
        ops::launch_ba_gates_parent(gpu_, handle, params, ba_);
      }
      return;
    }
    if (op_ == ProfiledOp::kSiluMulFp8Quant) {
      launch_silu_mul(kernel, handle, params);
      return;
    }
    if (op_ == ProfiledOp::kFusedAddRmsnorm) {
      ops::launch_fused_add_rmsnorm(gpu_, handle, kernel.name, params, rms_);
      return;
    }
    ops::Fp8QuantPick pick;
    pick.kernel = handle;
    pick.twin = twin;
    pick.grid = ops::fp8_quant_grid(twin, shape_.m, shape_.k, std::max<std::uint32_t>(params.groups, 1));
    pick.block = block(kernel, params);
    ops::launch_fp8_quant(gpu_, pick, fp8_);
  }

 private:
  HostBackend& gpu_;
  ProfiledOp op_;
  ProfileShape shape_;
  SourceSet sources_ = embedded_sources();
  ops::BaGatesArgs ba_;
  ops::Fp8QuantArgs fp8_;
  ops::FusedAddRmsnormArgs rms_;
  struct {
    ops::SiluMulFp8QuantArgs args;
    DevicePtr scratch;
  } silu_;
  DevicePtr gate_up_;

  // One of the op's three launches, through the op's own launchers at `params`.
  void launch_silu_mul(const OpKernel& kernel, KernelHandle handle, const KernelParams& params) {
    if (kernel.role == "twin") {
      ops::launch_silu_mul_twin(gpu_, handle, params, silu_.args);
      return;
    }
    ops::SiluMulFp8QuantKernels kernels;
    if (kernel.role == "parent") {
      kernels.silu_mul = handle;
      kernels.silu_mul_params = params;
      ops::launch_silu_mul_bf16(gpu_, kernels, silu_.args, silu_.scratch);
    } else {
      kernels.quant = handle;
      kernels.quant_params = params;
      ops::launch_silu_mul_quant_step(gpu_, kernels, silu_.args, silu_.scratch);
    }
  }
};

}  // namespace

std::vector<std::string_view> profiled_op_kernels(ProfiledOp op) {
  std::vector<std::string_view> out;
  for (const OpKernel& kernel : op_kernels(op)) {
    out.push_back(kernel.name);
  }
  return out;
}

namespace {

// What pricing one kernel variant needs: the backend the op's buffers live on, the target and
// the shape's constants.
struct Pricing {
  const HardwareTarget& target;
  const ProfileRequest& request;
  HostBackend& gpu;
  OpRunner& runner;
  const ProfileShape& shape;
  SmLimits limits;
  std::uint32_t sm_count = 0;
  double compulsory = 0;
};

const KernelResources* resources_of(const std::map<std::string, KernelResources, std::less<>>& resources,
                                    std::string_view kernel) {
  const auto found = resources.find(kernel);
  return found == resources.end() ? nullptr : &found->second;
}

KernelVariant variant_of(const HardwareTarget& target, const KernelEntry& entry) {
  return ops::target_kernel_variant(target, entry, ops::library_catalog());
}

// One profiled run of `kernel` at `params` (the target's, or its specialised variant's), loaded as `handle`.
KernelProfile price(const Pricing& p, const OpKernel& kernel, const KernelParams& params, KernelHandle handle,
                    const KernelResources* resources) {
  const ProfiledOpInfo& info = profiled_op_info(p.request.op);
  KernelProfile row;
  row.op = std::string(info.label);
  row.op_name = std::string(info.op_name);
  row.has_n = info.has_n;
  row.kernel = std::string(kernel.name);
  row.role = std::string(kernel.role);
  row.params = params;
  row.shape = p.shape;
  std::uint32_t static_shared = 0;
  if (resources != nullptr) {
    row.registers = resources->registers;
    static_shared = static_cast<std::uint32_t>(std::max(resources->shared_bytes, 0));
  }
  const Dim3 block = p.runner.block(kernel, row.params);
  // The launch's dynamic shared memory is known only once it ran; until then the wave (what
  // a sample is cut in) counts the static part alone, and the occupancy is redone after.
  const auto occupancy_with = [&](std::uint32_t dynamic_shared) {
    return occupancy(p.limits, static_cast<std::uint32_t>(block.volume()), row.registers,
                     static_shared + dynamic_shared);
  };
  // The blocks resident at once: a sample's unit, and the latency term's wave.
  const auto wave_of = [&](const Occupancy& occ) {
    return p.request.wave_blocks != 0 ? p.request.wave_blocks
                                      : std::uint64_t{p.sm_count} * std::max<std::uint32_t>(occ.blocks_per_sm, 1);
  };
  const std::uint64_t wave = wave_of(occupancy_with(0));
  const std::uint64_t budget = p.request.full_grid            ? 0
                               : p.request.budget_blocks != 0 ? p.request.budget_blocks
                                                              : kDefaultWaves * wave;
  if (p.request.progress) {
    p.request.progress(fmt::format("profiling {} {}{} at M={} K={}{}", row.op, row.kernel,
                                   row.specialised() ? fmt::format(" (specialised {})", row.params.tag()) : "",
                                   p.shape.m, p.shape.k, info.has_n ? fmt::format(" N={}", p.shape.n) : ""));
  }
  p.gpu.begin_profile({budget, wave});
  p.runner.launch(kernel, handle, row.params);
  std::vector<LaunchTraffic> launches = p.gpu.end_profile();
  if (launches.size() != 1) {
    throw BackendError(
        fmt::format("profile of {} {}: expected one launch, saw {}", row.kernel, row.params.tag(), launches.size()));
  }
  row.traffic = std::move(launches[0]);
  const Occupancy occ = occupancy_with(row.traffic.dynamic_shared_bytes);
  row.blocks_per_sm = occ.blocks_per_sm;
  if (row.registers) {
    row.occupancy = occ.fraction;
  }
  row.prediction = predict(row.traffic, *p.target.roofline, wave_of(occ));
  row.compulsory_bytes = p.compulsory;
  row.floor_us = floor_us(p.compulsory, *p.target.roofline);
  return row;
}

}  // namespace

std::vector<KernelProfile> profile_op(const HardwareTarget& target, const ProfileRequest& request) {
  if (!target.roofline) {
    throw ArgumentError(fmt::format("target {} has no [roofline] table in {}", target.name, target.source));
  }
  const ProfileShape shape = resolved_shape(request.op, request.shape);
  const std::vector<OpKernel> kernels = chosen_kernels(target, request);
  HostBackendOptions options;
  options.profiled_kernels = true;
  options.worker_threads = request.worker_threads;
  options.jit_cache_dir = request.jit_cache_dir;
  options.sm_count = target.sm_count.value_or(kFallbackSmCount);
  if (target.compute_capability) {
    options.compute_capability = *target.compute_capability;
  }
  HostBackend gpu(options);
  OpRunner runner(gpu, request.op, shape);
  const Pricing pricing{target,
                        request,
                        gpu,
                        runner,
                        shape,
                        sm_limits(target.compute_capability),
                        options.sm_count,
                        compulsory_bytes(request.op, shape)};
  std::vector<KernelProfile> out;
  for (const OpKernel& kernel : kernels) {
    const KernelEntry& entry = *target.find_kernel(kernel.name);
    const auto constant = std::find_if(request.shape_constants.begin(), request.shape_constants.end(),
                                       [&](const ProfiledShapeConstant& c) { return c.kernel == kernel.name; });
    const bool has_constant = constant != request.shape_constants.end();
    const KernelHandle generic = runner.load(kernel, variant_of(target, entry));
    out.push_back(price(pricing, kernel, entry.params, generic, resources_of(request.resources, kernel.name)));
    if (has_constant) {
      out.back().shape_constant = *constant;
    }
    if (!has_constant || constant->shape == 0) {
      continue;
    }
    KernelEntry specialised = entry;
    specialised.params.shape = constant->shape;
    KernelHandle handle;
    try {
      handle = runner.load(kernel, variant_of(target, specialised));
    } catch (const BackendError& error) {
      if (!request.unpriced) {
        throw;
      }
      // An extra row nobody named: the generic rows stand without it.
      request.unpriced(fmt::format("{} {} (specialised on {} = {}) not priced: {}", kernel.name,
                                   specialised.params.tag(), constant->arg, constant->value, error.what()));
      continue;
    }
    out.push_back(
        price(pricing, kernel, specialised.params, handle, resources_of(request.shape_resources, kernel.name)));
    out.back().shape_constant = *constant;
  }
  return out;
}

}  // namespace metrale
