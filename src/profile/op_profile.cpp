// profile/op_profile.cpp: runs an op's kernels on a profiled host backend through its
// declaration's profile hook (which makes the op's buffers and launches each kernel as the op
// does) and prices them on a target's roofline. Names no op.
#include "profile/op_profile.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <vector>

#include "host/host_backend.hpp"
#include "metrale/error.hpp"
#include "metrale/jit/source_set.hpp"
#include "ops/op_kernels.hpp"
#include "profile/occupancy.hpp"

namespace metrale {
namespace {

constexpr std::uint64_t kDefaultWaves = 2;

using ops::ProfiledKernel;

SourceSet embedded_sources() {
  SourceSet sources;
  sources.add_embedded_templates();
  return sources;
}

std::vector<ProfiledKernel> chosen_kernels(const HardwareTarget& target, const ops::OpProfile& profile,
                                           const ProfileRequest& request) {
  const std::vector<ProfiledKernel>& all = profile.kernels;
  std::vector<ProfiledKernel> out;
  for (const std::string& wanted : request.kernels) {
    const auto found = std::find_if(all.begin(), all.end(),
                                    [&](const ProfiledKernel& k) { return k.role == wanted || k.name == wanted; });
    if (found == all.end()) {
      std::vector<std::string> names;
      names.reserve(all.size());
      for (const ProfiledKernel& k : all) {
        names.push_back(fmt::format("{} ({})", k.role, k.name));
      }
      throw ArgumentError(
          fmt::format("--kernel {}: not a kernel of {} (known: {})", wanted, profile.label, fmt::join(names, ", ")));
    }
    if (target.find_kernel(found->name) == nullptr) {
      throw ArgumentError(fmt::format("--kernel {}: target {} does not ship {}", wanted, target.name, found->name));
    }
    out.push_back(*found);
  }
  if (request.kernels.empty()) {
    std::copy_if(all.begin(), all.end(), std::back_inserter(out),
                 [&](const ProfiledKernel& k) { return target.find_kernel(k.name) != nullptr; });
  }
  return out;
}

// `variant`: the registry's declaration of the kernel at its parameters; its source and
// expression let the host JIT build a variant the backend has no profiled instantiation of.
// BackendError when the backend has no such instantiation and the host JIT cannot build one.
KernelHandle load(HostBackend& gpu, const SourceSet& sources, const ProfiledKernel& kernel,
                  const KernelVariant& variant) {
  LoadRequest load;
  load.kernel = kernel.name;
  load.params = variant.params;
  load.name_expression = variant.name_expression;
  load.source = variant.source;
  load.sources = &sources.sources();
  return gpu.load(load);
}

}  // namespace

const ops::OpProfile& op_profile(const ops::OpDeclaration& op) {
  if (op.profile == nullptr) {
    throw ArgumentError(fmt::format("the profile cannot price op {} (its declaration has no profile hook)", op.name));
  }
  return *op.profile;
}

std::vector<std::string_view> profiled_op_kernels(const ops::OpDeclaration& op) {
  std::vector<std::string_view> out;
  for (const ProfiledKernel& kernel : op_profile(op).kernels) {
    out.push_back(kernel.name);
  }
  return out;
}

double compulsory_bytes(const ops::OpDeclaration& op, const ProfileShape& shape) {
  const ops::OpProfile& profile = op_profile(op);
  return profile.compulsory_bytes(profile.resolve_shape ? profile.resolve_shape(shape) : shape);
}

namespace {

// What pricing one kernel variant needs: the backend the op's buffers live on, the target and
// the shape's constants.
struct Pricing {
  const HardwareTarget& target;
  const ProfileRequest& request;
  const ops::OpDeclaration& op;
  HostBackend& gpu;
  ops::ProfiledLaunches& launches;
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
KernelProfile price(const Pricing& p, const ProfiledKernel& kernel, const KernelParams& params, KernelHandle handle,
                    const KernelResources* resources) {
  const ops::OpProfile& info = *p.op.profile;
  KernelProfile row;
  row.op = std::string(info.label);
  row.op_name = p.op.name;
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
  const Dim3 block = p.launches.block(kernel, row.params);
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
  p.launches.launch(kernel, handle, row.params);
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
  if (request.op == nullptr) {
    throw ArgumentError("profile: no op given");
  }
  const ops::OpProfile& profile = op_profile(*request.op);
  const ProfileShape shape = profile.resolve_shape ? profile.resolve_shape(request.shape) : request.shape;
  const std::vector<ProfiledKernel> kernels = chosen_kernels(target, profile, request);
  HostBackendOptions options;
  options.profiled_kernels = true;
  options.worker_threads = request.worker_threads;
  options.jit_cache_dir = request.jit_cache_dir;
  options.sm_count = target.sm_count.value_or(kFallbackSmCount);
  if (target.compute_capability) {
    options.compute_capability = *target.compute_capability;
  }
  HostBackend gpu(options);
  const std::unique_ptr<ops::ProfiledLaunches> launches = profile.prepare(gpu, shape);
  const SourceSet sources = embedded_sources();
  const Pricing pricing{target,
                        request,
                        *request.op,
                        gpu,
                        *launches,
                        shape,
                        sm_limits(target.compute_capability),
                        options.sm_count,
                        profile.compulsory_bytes(shape)};
  std::vector<KernelProfile> out;
  for (const ProfiledKernel& kernel : kernels) {
    const KernelEntry& entry = *target.find_kernel(kernel.name);
    const auto constant = std::find_if(request.shape_constants.begin(), request.shape_constants.end(),
                                       [&](const ProfiledShapeConstant& c) { return c.kernel == kernel.name; });
    const bool has_constant = constant != request.shape_constants.end();
    const KernelHandle generic = load(gpu, sources, kernel, variant_of(target, entry));
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
      handle = load(gpu, sources, kernel, variant_of(target, specialised));
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
