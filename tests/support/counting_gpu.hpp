// tests/support/counting_gpu.hpp: a GpuBackend for capture and allocation tests: it counts what
// an op call asks of a device (loads, launches, prepared launches, occupancy questions, memory)
// without allocating, hands out one distinct handle per load, says which stream is "capturing",
// and answers cluster occupancy (clusters up to `largest_cluster` fit). Launches run nothing.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>

#include "metrale/error.hpp"
#include "metrale/gpu/gpu_backend.hpp"

namespace metrale::test {

class CountingGpu final : public GpuBackend {
 public:
  explicit CountingGpu(std::uint32_t sms = 132) : sms_(sms) {}

  std::atomic<std::uint64_t> capturing_stream{0};  // 0: none
  std::uint32_t largest_cluster = 8;
  std::atomic<int> loads{0}, launches{0}, prepared{0}, occupancy{0}, allocs{0}, copies{0};
  KernelHandle last_launch;
  LaunchConfig last_config;

  [[nodiscard]] std::string describe() const override { return "counting test backend"; }
  [[nodiscard]] std::string device_key() const override { return "counting"; }
  [[nodiscard]] bool needs_compiled_image() const override { return false; }
  [[nodiscard]] std::optional<std::uint32_t> sm_count() const override { return sms_; }
  [[nodiscard]] std::optional<ComputeCapability> compute_capability() const override { return ComputeCapability{9, 0}; }
  [[nodiscard]] std::optional<std::uint32_t> max_dynamic_shared_bytes() const override { return 227U * 1024U; }
  [[nodiscard]] std::optional<std::uint32_t> max_active_clusters(KernelHandle /*kernel*/,
                                                                 const LaunchConfig& config) override {
    ++occupancy;
    return config.cluster_blocks <= largest_cluster ? 4U : 0U;
  }
  void prepare_launch(KernelHandle /*kernel*/, const LaunchConfig& /*config*/) override { ++prepared; }
  KernelHandle load(const LoadRequest& /*request*/) override {
    return KernelHandle{static_cast<std::uint64_t>(++loads)};
  }
  void launch(KernelHandle kernel, const LaunchConfig& config, std::span<const KernelArg> /*args*/) override {
    ++launches;
    last_launch = kernel;
    last_config = config;
  }
  DevicePtr alloc(std::size_t /*bytes*/) override {
    ++allocs;
    return DevicePtr{std::uint64_t{1} << 40};
  }
  void free(DevicePtr /*ptr*/) override {}
  void copy_to_device(DevicePtr, const void*, std::size_t) override { ++copies; }
  void copy_to_host(void*, DevicePtr, std::size_t) override { ++copies; }
  void synchronize(std::uint64_t) override {}
  [[nodiscard]] bool is_capturing(std::uint64_t stream) const override {
    return stream != 0 && capturing_stream.load() == stream;
  }

 private:
  std::uint32_t sms_;
};

}  // namespace metrale::test
