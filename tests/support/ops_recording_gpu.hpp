// tests/support/ops_recording_gpu.hpp: a GpuBackend for op tests that records launches instead of running
// them, with configurable SM-count and shared-memory-limit answers. Memory calls are refused: op tests need none.
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "metrale/error.hpp"
#include "metrale/gpu/gpu_backend.hpp"

namespace metrale::test {

struct RecordedLaunch {
  KernelHandle kernel;
  LaunchConfig config;
  std::vector<std::vector<unsigned char>> args;

  template <typename T>
  [[nodiscard]] T arg(std::size_t index) const {
    T value{};
    if (index < args.size() && args[index].size() == sizeof(T)) {
      std::memcpy(&value, args[index].data(), sizeof(T));
    }
    return value;
  }
};

class RecordingGpu final : public GpuBackend {
 public:
  explicit RecordingGpu(std::optional<std::uint32_t> sms = 132) : sms_(sms) {}

  std::vector<RecordedLaunch> launches;
  std::optional<std::uint32_t> max_shared = 227U * 1024U;  // what max_dynamic_shared_bytes() answers

  [[nodiscard]] std::string describe() const override { return "recording test backend"; }
  [[nodiscard]] std::string device_key() const override { return "recording"; }
  [[nodiscard]] bool needs_compiled_image() const override { return false; }
  [[nodiscard]] std::optional<std::uint32_t> sm_count() const override { return sms_; }
  [[nodiscard]] std::optional<ComputeCapability> compute_capability() const override { return ComputeCapability{9, 0}; }
  [[nodiscard]] std::optional<std::uint32_t> max_dynamic_shared_bytes() const override { return max_shared; }
  // The largest cluster the device "schedules" (larger ones: 0 active clusters); nullopt: unknown.
  std::optional<std::uint32_t> largest_cluster;
  std::vector<std::uint32_t> cluster_queries;  // cluster_blocks of each max_active_clusters call
  [[nodiscard]] std::optional<std::uint32_t> max_active_clusters(KernelHandle /*kernel*/,
                                                                 const LaunchConfig& config) override {
    cluster_queries.push_back(config.cluster_blocks);
    if (!largest_cluster) {
      return std::nullopt;
    }
    return config.cluster_blocks <= *largest_cluster ? 16U : 0U;
  }
  KernelHandle load(const LoadRequest&) override { return KernelHandle{1}; }
  void launch(KernelHandle kernel, const LaunchConfig& config, std::span<const KernelArg> args) override {
    RecordedLaunch record{kernel, config, {}};
    for (const KernelArg& a : args) {
      const auto* bytes = static_cast<const unsigned char*>(a.value);
      record.args.emplace_back(bytes, bytes + a.size);
    }
    launches.push_back(std::move(record));
  }
  DevicePtr alloc(std::size_t) override { throw BackendError("recording backend has no memory"); }
  void free(DevicePtr) override {}
  void copy_to_device(DevicePtr, const void*, std::size_t) override {
    throw BackendError("recording backend has no memory");
  }
  void copy_to_host(void*, DevicePtr, std::size_t) override { throw BackendError("recording backend has no memory"); }
  void synchronize(std::uint64_t) override {}

 private:
  std::optional<std::uint32_t> sms_;
};

}  // namespace metrale::test
