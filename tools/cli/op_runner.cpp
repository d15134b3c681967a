// op_runner.cpp: device buffers, poison, launch (guarded or forced) and download for both ops.
// Forcing is the runtime's (Runtime::ssm_ba_gates / fp8_act_quant with a KernelChoice); this
// file only words its refusals and reasons for the command line.
#include "op_runner.hpp"

#include <fmt/format.h>

#include <bit>
#include <cstring>

#include "cli_support.hpp"
#include "gpu/cuda_backend.hpp"
#include "metrale/error.hpp"
#include "ops/op_kernels.hpp"
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

constexpr std::string_view kForced = "forced by --kernel";

// Runs the op through the runtime's forced dispatch; a kernel the target lacks (or the op does
// not have) is the caller's mistake here: a UsageError (exit 2; selftest's SKIP).
template <typename Op>
auto forced_or_usage(Op&& op) {
  try {
    return op();
  } catch (const KernelChoiceError& error) {
    throw UsageError(fmt::format("--kernel: {}", error.what()));
  }
}

// The runtime's forced reason, worded for the command line.
std::optional<std::string> reject_text(std::optional<std::string_view> reject) {
  if (!reject) {
    return std::nullopt;
  }
  return std::string(*reject == kForcedKernelReason ? kForced : *reject);
}

}  // namespace

std::unique_ptr<Runtime> open_device_or_host(const std::string& target) {
  RuntimeOptions options;
  if (!target.empty()) {
    const HardwareTarget& named = require_target(load_targets(metrale::ops::library_catalog()), target);
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
  const ops::BaGatesPick pick = forced_or_usage([&] { return runtime.ssm_ba_gates(args, 0, choice); });
  BaGatesResult result;
  if (pick.mma) {
    result.ran = {std::string(ops::kBaGatesMmaKernel), false,
                  std::string(choice == KernelChoice::kGuard ? "none: the tensor-core kernel runs" : kForced)};
  } else {
    result.ran = {std::string(pick.twin ? ops::kBaGatesTwinKernel : ops::kBaGatesParentKernel), pick.twin,
                  reject_text(pick.reject)};
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
  const ops::Fp8QuantPick pick = forced_or_usage([&] { return runtime.fp8_act_quant(args, 0, choice); });
  gpu.synchronize(0);
  Fp8Result result;
  result.ran = {std::string(pick.twin ? ops::kFp8QuantTwinKernel : ops::kFp8QuantSharedKernel), pick.twin,
                reject_text(pick.reject)};
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
