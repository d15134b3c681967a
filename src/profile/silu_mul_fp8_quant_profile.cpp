// profile/silu_mul_fp8_quant_profile.cpp: the SiLU-and-mul FP8 quant op's launches on a profiled
// host backend, priced by the cost model. Inputs are a seeded random pattern repeated over each
// buffer: the kernels' traffic does not depend on the values.
#include "profile/silu_mul_fp8_quant_profile.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "host/host_backend.hpp"
#include "metrale/error.hpp"
#include "metrale/jit/source_set.hpp"
#include "ops/op_kernels.hpp"
#include "ops/silu_mul_fp8_quant.hpp"
#include "profile/cost_model.hpp"
#include "profile/occupancy.hpp"
#include "ref/bf16.hpp"

namespace metrale {
namespace {

constexpr std::size_t kPatternElements = std::size_t{1} << 16;
constexpr std::uint64_t kSeed = 0x5111;
constexpr std::uint64_t kWaves = 2;

DevicePtr filled(HostBackend& gpu, std::size_t bytes, const std::vector<std::uint16_t>& pattern) {
  const DevicePtr ptr = gpu.alloc(std::max<std::size_t>(bytes, 2));
  const std::size_t chunk = pattern.size() * sizeof(std::uint16_t);
  for (std::size_t at = 0; at < bytes; at += chunk) {
    gpu.copy_to_device(DevicePtr{ptr.address + at}, pattern.data(), std::min(chunk, bytes - at));
  }
  return ptr;
}

KernelHandle load(HostBackend& gpu, const HardwareTarget& target, std::string_view kernel, const SourceSet& sources) {
  const KernelEntry* entry = target.find_kernel(kernel);
  const KernelVariant variant = ops::target_kernel_variant(target, *entry, ops::library_catalog());
  LoadRequest request;
  request.kernel = kernel;
  request.params = variant.params;
  request.name_expression = variant.name_expression;
  request.source = variant.source;
  request.sources = &sources.sources();
  return gpu.load(request);
}

}  // namespace

SiluMulProfile profile_silu_mul_fp8_quant(const HardwareTarget& target, std::uint32_t m, std::uint32_t k,
                                          unsigned worker_threads) {
  if (!target.roofline) {
    throw ArgumentError(fmt::format("target {} has no [roofline] table in {}", target.name, target.source));
  }
  for (const std::string_view kernel : {ops::kSiluMulParentKernel, ops::kFp8QuantSharedKernel}) {
    if (target.find_kernel(kernel) == nullptr) {
      throw ArgumentError(fmt::format("target {} does not ship {}", target.name, kernel));
    }
  }
  HostBackendOptions options;
  options.profiled_kernels = true;
  options.worker_threads = worker_threads;
  options.sm_count = target.sm_count.value_or(kFallbackSmCount);
  if (target.compute_capability) {
    options.compute_capability = *target.compute_capability;
  }
  HostBackend gpu(options);
  SourceSet sources;
  sources.add_embedded_templates();

  ops::SiluMulFp8QuantKernels kernels;
  kernels.silu_mul = load(gpu, target, ops::kSiluMulParentKernel, sources);
  kernels.silu_mul_params = target.find_kernel(ops::kSiluMulParentKernel)->params;
  kernels.quant = load(gpu, target, ops::kFp8QuantSharedKernel, sources);
  kernels.quant_params = target.find_kernel(ops::kFp8QuantSharedKernel)->params;
  const bool has_twin = target.find_kernel(ops::kSiluMulTwinKernel) != nullptr;
  if (has_twin) {
    kernels.twin = load(gpu, target, ops::kSiluMulTwinKernel, sources);
    kernels.twin_params = target.find_kernel(ops::kSiluMulTwinKernel)->params;
  }

  // gate and up as the two halves of one [M][2K] buffer, as an MLP's gate-up projection writes them.
  const std::uint64_t mk = std::uint64_t{m} * k;
  const auto pattern = ref::random_bf16(kPatternElements, kSeed);
  const DevicePtr gate_up = filled(gpu, mk * 2 * 2, pattern);
  const DevicePtr q = gpu.alloc(std::max<std::uint64_t>(mk, 1));
  const DevicePtr scales = gpu.alloc(std::max<std::uint64_t>(std::uint64_t{m} * (k / ops::kFp8QuantGroupSize) * 4, 4));
  const DevicePtr scratch = gpu.alloc(std::max<std::uint64_t>(ops::silu_mul_scratch_bytes(m, k), 2));
  ops::SiluMulFp8QuantArgs args;
  args.gate = gate_up;
  args.up = DevicePtr{gate_up.address + std::uint64_t{k} * 2};
  args.q = q;
  args.scales = scales;
  args.m = m;
  args.k = k;
  args.gate_row_stride = args.up_row_stride = 2 * k;

  SiluMulProfile out;
  out.floor_bytes = ops::silu_mul_fp8_quant_floor_bytes(m, k);
  out.floor_us = floor_us(out.floor_bytes, *target.roofline);
  const SmLimits limits = sm_limits(target.compute_capability);
  // The wave (a sample's unit, the latency term's) from each launch's own block size.
  const auto wave_of = [&](const LaunchTraffic& traffic) {
    const Occupancy occ = occupancy(limits, static_cast<std::uint32_t>(traffic.block.volume()), std::nullopt,
                                    traffic.dynamic_shared_bytes);
    return std::pair{occ, std::uint64_t{options.sm_count} * std::max<std::uint32_t>(occ.blocks_per_sm, 1)};
  };
  const auto price = [&](std::vector<LaunchTraffic> launches, std::string_view role,
                         std::initializer_list<std::pair<std::string_view, KernelParams>> kernels_run) {
    if (launches.size() != kernels_run.size()) {
      throw BackendError(fmt::format("profile of {}: expected {} launches, saw {}", ops::kSiluMulTwinKernel,
                                     kernels_run.size(), launches.size()));
    }
    double total = 0;
    auto named = kernels_run.begin();
    for (LaunchTraffic& traffic : launches) {
      KernelProfile row;
      row.op = "silu_mul_fp8_quant";
      row.kernel = std::string(named->first);
      row.role = std::string(role);
      row.params = named->second;
      row.shape = ProfileShape{m, 0, k, 0};
      const auto [occ, wave] = wave_of(traffic);
      row.blocks_per_sm = occ.blocks_per_sm;
      row.traffic = std::move(traffic);
      row.prediction = predict(row.traffic, *target.roofline, wave);
      row.compulsory_bytes = out.floor_bytes;
      row.floor_us = out.floor_us;
      total += row.prediction.predicted_us;
      out.rows.push_back(std::move(row));
      ++named;
    }
    return total;
  };
  // Each launch is sampled in two of its own waves (sm_count x its blocks per SM), as profile_op does.
  const auto sampling_for = [&](std::uint32_t threads) {
    const Occupancy occ = occupancy(limits, threads, std::nullopt, 0);
    const std::uint64_t wave = std::uint64_t{options.sm_count} * std::max<std::uint32_t>(occ.blocks_per_sm, 1);
    return ProfileSampling{kWaves * wave, wave};
  };
  ops::validate_silu_mul_fp8_quant_args(args);
  gpu.begin_profile(sampling_for(kernels.silu_mul_params.block));
  ops::launch_silu_mul_bf16(gpu, kernels, args, scratch);
  out.parent_us = price(gpu.end_profile(), "parent", {{ops::kSiluMulParentKernel, kernels.silu_mul_params}});
  gpu.begin_profile(sampling_for(kernels.quant_params.lanes * kernels.quant_params.groups));
  ops::launch_silu_mul_quant_step(gpu, kernels, args, scratch);
  out.parent_us += price(gpu.end_profile(), "parent", {{ops::kFp8QuantSharedKernel, kernels.quant_params}});
  if (has_twin) {
    gpu.begin_profile(sampling_for(kernels.twin_params.lanes * kernels.twin_params.groups));
    ops::launch_silu_mul_twin(gpu, kernels.twin, kernels.twin_params, args);
    out.twin_us = price(gpu.end_profile(), "twin", {{ops::kSiluMulTwinKernel, kernels.twin_params}});
  }
  for (const DevicePtr ptr : {gate_up, q, scales, scratch}) {
    gpu.free(ptr);
  }
  return out;
}

}  // namespace metrale
