// tests/support/shape_variants_support.hpp: what the runtime's shape-variant tests share (host
// backend, issue 26): a hardware folder with hopper's [shapes] replaced, runtime options on it, a
// host backend whose capture flag the test sets, one BA call by name into a poisoned output and
// its check against the float64 oracle.
#pragma once

#include <catch2/catch.hpp>
#include <fstream>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "hardware/hardware_loader.hpp"
#include "host/host_backend.hpp"
#include "metrale/runtime.hpp"
#include "support/ba_gates_check.hpp"
#include "support/kernels_support.hpp"
#include "support/temp_dir.hpp"

namespace metrale::shape_test {

using kernels_test::BaCase;
using kernels_test::DeviceBuffer;

constexpr const char* kOp = "ssm_ba_gates";
constexpr const char* kMma = "ssm_ba_gates_mma";

inline std::string shipped(const char* target) {
  std::ifstream in(std::string(METRALE_SOURCE_DIR) + "/hardware/" + target + "/HARDWARE.toml");
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// A hardware folder whose hopper has `shapes` as its [shapes] table ("" for none).
struct HardwareDir {
  test::TempDir dir;
  explicit HardwareDir(const std::string& shapes) {
    std::string hopper = shipped("hopper");
    const std::size_t begin = hopper.find("[shapes]\n");
    const std::size_t end = hopper.find("[roofline]\n");
    REQUIRE(begin != std::string::npos);
    hopper.replace(begin, end - begin, shapes.empty() ? "" : "[shapes]\n" + shapes + "\n\n");
    dir.write("hopper/HARDWARE.toml", hopper);
    dir.write("generic/HARDWARE.toml", shipped("generic"));
  }
};

inline RuntimeOptions options_for(const HardwareDir& hardware, std::function<void()> gate = {}) {
  RuntimeOptions options = test::isolated_runtime_options(BackendChoice::kHost, 132, "hopper");
  const std::string dir = hardware.dir.path().string();
  options.env = [dir](const char* name) -> std::optional<std::string> {
    return std::string(name) == kHardwareDirEnv ? std::optional<std::string>(dir) : std::nullopt;
  };
  options.registry->background_gate = std::move(gate);
  return options;
}

// The host backend, answering is_capturing from a flag the test sets.
class CapturingHost final : public GpuBackend {
 public:
  bool capturing = false;
  std::string describe() const override { return "capturing " + host_.describe(); }
  std::string device_key() const override { return host_.device_key(); }
  bool needs_compiled_image() const override { return false; }
  std::optional<std::uint32_t> sm_count() const override { return host_.sm_count(); }
  std::optional<ComputeCapability> compute_capability() const override { return host_.compute_capability(); }
  std::optional<std::uint32_t> max_dynamic_shared_bytes() const override { return host_.max_dynamic_shared_bytes(); }
  std::optional<std::uint32_t> max_active_clusters(KernelHandle kernel, const LaunchConfig& config) override {
    return host_.max_active_clusters(kernel, config);
  }
  KernelHandle load(const LoadRequest& request) override { return host_.load(request); }
  void launch(KernelHandle kernel, const LaunchConfig& config, std::span<const KernelArg> args) override {
    host_.launch(kernel, config, args);
  }
  DevicePtr alloc(std::size_t bytes) override { return host_.alloc(bytes); }
  void free(DevicePtr ptr) override { host_.free(ptr); }
  void copy_to_device(DevicePtr dst, const void* src, std::size_t bytes) override {
    host_.copy_to_device(dst, src, bytes);
  }
  void copy_to_host(void* dst, DevicePtr src, std::size_t bytes) override { host_.copy_to_host(dst, src, bytes); }
  void synchronize(std::uint64_t stream) override { host_.synchronize(stream); }
  bool is_capturing(std::uint64_t /*stream*/) const override { return capturing; }

 private:
  HostBackend host_{};  // 132 SMs by default, as the tensor-core shape below assumes
};

// One BA call by name at a tensor-core shape (M 264 on 132 SMs), its output poisoned first.
struct Call {
  ops::Pick pick;
  std::vector<float> out;
};

// `role`: a forced role ("" lets the guards pick).
inline Call run_ba(Runtime& runtime, const BaCase& c, std::string_view role = {}) {
  GpuBackend& gpu = *runtime.backend();
  const auto& s = c.shape;
  DeviceBuffer x(gpu, c.x), w(gpu, c.w), a_log(gpu, c.a_log), dt_bias(gpu, c.dt_bias);
  DeviceBuffer out(gpu, std::vector<float>(c.out_size(), kernels_test::poison_float()));
  const ops::NamedArg args[] = {{"x", x.ptr().address},
                                {"weight", w.ptr().address},
                                {"a_log", a_log.ptr().address},
                                {"dt_bias", dt_bias.ptr().address},
                                {"gate_out", out.ptr().address},
                                {"m", s.m},
                                {"n", s.n},
                                {"k", s.k},
                                {"k_stride", s.k_stride},
                                {"gate_stride", s.gate_stride},
                                {"nv", s.nv},
                                {"vheads_per_group", s.vheads_per_group}};
  Call call{runtime.run(kOp, args, 0, role), {}};
  call.out = out.read<float>(c.out_size());
  return call;
}

inline std::vector<ops::NamedArg> shape_of(const ref::BaGatesRefShape& s) {
  return {{"m", s.m}, {"n", s.n}, {"k", s.k}, {"vheads_per_group", s.vheads_per_group}};
}

inline KernelHandle variant_handle(Runtime& runtime, const KernelParams& params) {
  const auto id = runtime.registry().find(kMma, params);
  const auto device = runtime.registry().device_index(*runtime.backend());
  return id && device ? runtime.registry().handle(*device, *id) : KernelHandle{};
}

constexpr KernelParams kGeneric{256, 128, 6, 0};
constexpr KernelParams kSix{256, 128, 6, 6};    // N in (80, 96]
constexpr KernelParams kThree{256, 128, 6, 3};  // N in (32, 48]
// M 264 on 132 SMs: the tensor-core guard's shape; N 96 (Qwen3.5-27B's) and 48.
inline const ref::BaGatesRefShape kShape{264, 96, 512, 512, 96, 48, 3};
inline const ref::BaGatesRefShape kN48{264, 48, 512, 512, 48, 24, 3};

inline void check_output(const BaCase& c, const std::vector<float>& out) {
  const kernels_test::BaCoverage coverage = kernels_test::ba_coverage(c.shape, out);
  CHECK(coverage.unwritten == 0);
  const double error = kernels_test::ba_relative_frobenius_error(c.shape, out, c.oracle());
  INFO("relative Frobenius error against the float64 oracle: " << error);
  CHECK(error < metrale::check::kBaGatesMmaMaxRelativeFrobenius);
}

}  // namespace metrale::shape_test
