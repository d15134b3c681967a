// op_runner.cpp: device buffers, poison, launch (guarded or forced) and download for both ops.
#include "op_runner.hpp"

#include <fmt/format.h>

#include <bit>
#include <cstring>

#include "cli_support.hpp"
#include "gpu/cuda_backend.hpp"
#include "metrale/error.hpp"
#include "ops/op_kernels.hpp"
#include "ops/ssm_ba_gates_guard.hpp"
#include "target/hardware_loader.hpp"

namespace metrale::cli {
namespace {

// One allocation on a backend, freed when it goes out of scope.
class DeviceBuffer {
 public:
  template <typename T>
  DeviceBuffer(GpuBackend& gpu, const std::vector<T>& values)
      : gpu_(gpu), ptr_(gpu.alloc(values.size() * sizeof(T))), bytes_(values.size() * sizeof(T)) {
    try {
      gpu.copy_to_device(ptr_, values.data(), bytes_);
    } catch (...) {
      gpu.free(ptr_);
      throw;
    }
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() {
    try {
      gpu_.free(ptr_);
    } catch (const std::exception&) {  // a failing free must not mask the error being reported
    }
  }
  template <typename T>
  std::vector<T> download() const {
    std::vector<T> values(bytes_ / sizeof(T));
    gpu_.copy_to_host(values.data(), ptr_, bytes_);
    return values;
  }
  [[nodiscard]] DevicePtr ptr() const { return ptr_; }

 private:
  GpuBackend& gpu_;
  DevicePtr ptr_;
  std::size_t bytes_;
};

GpuBackend& device_of(Runtime& runtime) {
  if (!runtime.has_device()) {
    throw BackendError(fmt::format("no device: {}", runtime.no_device_reason()));
  }
  return *runtime.backend();
}

KernelHandle require_shipped(Runtime& runtime, KernelHandle handle, std::string_view kernel) {
  if (!handle.present()) {
    throw UsageError(
        fmt::format("--kernel: target {} does not ship {} (or it failed to build)", runtime.target().name, kernel));
  }
  return handle;
}

constexpr std::string_view kForced = "forced by --kernel";

}  // namespace

std::unique_ptr<Runtime> open_device_or_host(const std::string& target) {
  RuntimeOptions options;
  if (!target.empty()) {
    const HardwareTarget& named = require_target(load_targets(), target);
    options.target = target;
    options.host_sm_count = named.sm_count.value_or(kFallbackSmCount);
  }
  CudaBackendOpen opened = CudaBackend::open(options.device_ordinal);
  if (opened.backend) {
    return Runtime::open_with(std::move(opened.backend), std::move(options));
  }
  options.backend = BackendChoice::kHost;
  return Runtime::open(std::move(options));
}

KernelChoice parse_kernel_choice(std::string_view text) {
  if (text.empty()) {
    return KernelChoice::kGuard;
  }
  if (text == "twin") {
    return KernelChoice::kTwin;
  }
  if (text == "parent" || text == "shared") {
    return KernelChoice::kParent;
  }
  if (text == "mma") {
    return KernelChoice::kMma;
  }
  throw UsageError(fmt::format("--kernel {}: expected twin, parent, mma (BA) or shared (FP8)", text));
}

BaGatesResult run_ba_gates(Runtime& runtime, const BaGatesProblem& problem, KernelChoice choice) {
  GpuBackend& gpu = device_of(runtime);
  const ref::BaGatesRefShape& s = problem.shape;
  const std::vector<float> poison(static_cast<std::size_t>(s.m) * s.gate_stride,
                                  std::bit_cast<float>(kPoisonFloatBits));
  const DeviceBuffer x(gpu, problem.x);
  const DeviceBuffer weight(gpu, problem.weight);
  const DeviceBuffer a_log(gpu, problem.a_log);
  const DeviceBuffer dt_bias(gpu, problem.dt_bias);
  const DeviceBuffer gate_out(gpu, poison);
  const ops::BaGatesArgs args{x.ptr(), weight.ptr(), a_log.ptr(), dt_bias.ptr(), gate_out.ptr(), s.m,
                              s.n,     s.k,          s.k_stride,  s.gate_stride, s.nv,           s.vheads_per_group};
  const ops::BaGatesKernels kernels = runtime.ba_gates_kernels();
  BaGatesResult result;
  switch (choice) {
    case KernelChoice::kGuard: {
      const ops::BaGatesPick pick = runtime.ssm_ba_gates(args);
      if (pick.mma) {
        result.ran = {std::string(ops::kBaGatesMmaKernel), false, "none: the tensor-core kernel runs"};
      } else {
        result.ran = {std::string(pick.twin ? ops::kBaGatesTwinKernel : ops::kBaGatesParentKernel), pick.twin,
                      pick.reject ? std::optional<std::string>(*pick.reject) : std::nullopt};
      }
      break;
    }
    case KernelChoice::kMma:
      ops::validate_ba_gates_args(args);
      ops::launch_ba_gates_mma(gpu, require_shipped(runtime, kernels.mma, ops::kBaGatesMmaKernel), kernels.mma_params,
                               args);
      result.ran = {std::string(ops::kBaGatesMmaKernel), false, std::string(kForced)};
      break;
    case KernelChoice::kTwin:
      ops::validate_ba_gates_args(args);
      ops::launch_ba_gates_twin(gpu, require_shipped(runtime, kernels.twin, ops::kBaGatesTwinKernel),
                                kernels.twin_params, args);
      result.ran = {std::string(ops::kBaGatesTwinKernel), true, std::nullopt};
      break;
    case KernelChoice::kParent:
      ops::validate_ba_gates_args(args);
      ops::launch_ba_gates_parent(gpu, require_shipped(runtime, kernels.parent, ops::kBaGatesParentKernel),
                                  kernels.parent_params, args);
      result.ran = {std::string(ops::kBaGatesParentKernel), false, std::string(kForced)};
      break;
  }
  gpu.synchronize(0);
  result.gate_out = gate_out.download<float>();
  return result;
}

Fp8Result run_fp8_quant(Runtime& runtime, const Fp8Problem& problem, KernelChoice choice) {
  GpuBackend& gpu = device_of(runtime);
  const std::uint32_t groups = problem.k / ops::kFp8QuantGroupSize;
  const std::size_t scale_count = problem.layout == ops::Fp8ScaleLayout::kColumnMajor
                                      ? static_cast<std::size_t>(problem.m_aligned) * groups
                                      : static_cast<std::size_t>(problem.m) * groups;
  const DeviceBuffer x(gpu, problem.x);
  const DeviceBuffer q(gpu, std::vector<std::uint8_t>(problem.x.size(), kPoisonByte));
  const DeviceBuffer scales(gpu, std::vector<float>(scale_count, std::bit_cast<float>(kPoisonFloatBits)));
  const ops::Fp8QuantArgs args{x.ptr(),   q.ptr(),        scales.ptr(),      problem.m,         problem.k,
                               problem.k, problem.layout, problem.m_aligned, problem.scale_kind};
  // Forcing keeps the op's validation and grid: the pick, given only one kernel, takes it.
  ops::Fp8QuantKernels kernels = runtime.fp8_quant_kernels();
  ops::Fp8QuantPick pick;
  switch (choice) {
    case KernelChoice::kGuard:
      pick = runtime.fp8_act_quant(args);
      break;
    case KernelChoice::kTwin:
      require_shipped(runtime, kernels.twin, ops::kFp8QuantTwinKernel);
      kernels.shared = KernelHandle{};
      pick = ops::fp8_act_quant(gpu, kernels, true, args);
      break;
    case KernelChoice::kParent:
      require_shipped(runtime, kernels.shared, ops::kFp8QuantSharedKernel);
      kernels.twin = KernelHandle{};
      pick = ops::fp8_act_quant(gpu, kernels, false, args);
      pick.reject = kForced;
      break;
    case KernelChoice::kMma:
      throw UsageError("--kernel mma: only the BA-gates op has a tensor-core kernel");
  }
  gpu.synchronize(0);
  Fp8Result result;
  result.ran = {std::string(pick.twin ? ops::kFp8QuantTwinKernel : ops::kFp8QuantSharedKernel), pick.twin,
                pick.reject ? std::optional<std::string>(*pick.reject) : std::nullopt};
  result.q = q.download<std::uint8_t>();
  result.scales = scales.download<float>();
  return result;
}

float fp8_scale_at(const Fp8Problem& problem, const Fp8Result& result, std::uint32_t token, std::uint32_t group) {
  const std::size_t index = problem.layout == ops::Fp8ScaleLayout::kColumnMajor
                                ? static_cast<std::size_t>(group) * problem.m_aligned + token
                                : static_cast<std::size_t>(token) * (problem.k / ops::kFp8QuantGroupSize) + group;
  return result.scales.at(index);
}

}  // namespace metrale::cli
