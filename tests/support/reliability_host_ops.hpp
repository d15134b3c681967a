// tests/support/reliability_host_ops.hpp: what the reliability tests share to drive the public op entries
// (ops::ssm_ba_gates, ops::fp8_act_quant) on a HostBackend: the backend with the shipped
// kernels loaded, small valid argument sets over real allocations, and a virtual-memory region
// for shapes whose offsets pass 2^32 elements without committing gigabytes.
// Invariants: every buffer starts poisoned (never zero), so an op that must not launch can be
// checked by the poison still being there; the huge region is MAP_NORESERVE and only the pages
// a test writes or a kernel touches are ever backed.
#pragma once

#include <sys/mman.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "host/host_backend.hpp"
#include "metrale/ops/fp8_act_quant.hpp"
#include "metrale/ops/ssm_ba_gates.hpp"
#include "ops/fp8_act_quant/fp8_act_quant.hpp"
#include "ops/op_kernels.hpp"
#include "ops/ssm_ba_gates/ssm_ba_gates.hpp"
#include "support/isolated_runtime.hpp"

namespace metrale::reliability_test {

// sm_count 1: the twins' floors are tiny (BA twin at M >= 2, FP8 twin at 2 CTAs), so small
// shapes reach both kernels of each op. One worker keeps the launches cheap under sanitizers.
inline HostBackendOptions small_host() {
  HostBackendOptions options;
  options.sm_count = 1;
  options.worker_threads = 1;
  return options;
}

inline ops::BaGatesKernels load_ba_kernels(GpuBackend& gpu) {
  ops::BaGatesKernels kernels;
  kernels.parent = gpu.load(LoadRequest{ops::kBaGatesParentKernel, kernels.parent_params, {}, {}, {}, {}});
  kernels.twin = gpu.load(LoadRequest{ops::kBaGatesTwinKernel, kernels.twin_params, {}, {}, {}, {}});
  return kernels;
}

inline ops::Fp8QuantKernels load_fp8_kernels(GpuBackend& gpu) {
  ops::Fp8QuantKernels kernels;
  kernels.shared = gpu.load(LoadRequest{ops::kFp8QuantSharedKernel, kernels.shared_params, {}, {}, {}, {}});
  kernels.twin = gpu.load(LoadRequest{ops::kFp8QuantTwinKernel, kernels.twin_params, {}, {}, {}, {}});
  return kernels;
}

using metrale::test::upload;

template <typename T>
std::vector<T> download(GpuBackend& gpu, DevicePtr ptr, std::size_t count) {
  std::vector<T> values(count);
  gpu.copy_to_host(values.data(), ptr, count * sizeof(T));
  return values;
}

// An anonymous mapping of `bytes` (tens of GiB are fine): reserved, not committed. The host
// backend's "device" addresses are host addresses, so a DevicePtr into it is what a kernel sees.
class VirtualRegion {
 public:
  explicit VirtualRegion(std::size_t bytes) : bytes_(bytes) {
    void* base = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    base_ = base == MAP_FAILED ? nullptr : static_cast<unsigned char*>(base);
  }
  ~VirtualRegion() {
    if (base_ != nullptr) {
      ::munmap(base_, bytes_);
    }
  }
  VirtualRegion(const VirtualRegion&) = delete;
  VirtualRegion& operator=(const VirtualRegion&) = delete;

  [[nodiscard]] bool ok() const { return base_ != nullptr; }
  [[nodiscard]] DevicePtr at(std::uint64_t byte_offset) const {
    return DevicePtr{reinterpret_cast<std::uint64_t>(base_) + byte_offset};
  }
  void write(std::uint64_t byte_offset, const void* data, std::size_t bytes) {
    std::memcpy(base_ + byte_offset, data, bytes);
  }
  void read(std::uint64_t byte_offset, void* data, std::size_t bytes) const {
    std::memcpy(data, base_ + byte_offset, bytes);
  }

 private:
  std::size_t bytes_;
  unsigned char* base_ = nullptr;
};

}  // namespace metrale::reliability_test
