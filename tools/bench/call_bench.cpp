// call_bench.cpp (metrale-call-bench): the library's own time per op call at M = 1, the decode
// step an engine makes per layer: the runtime, the op's checks and guards and the launch path,
// with the device's launch itself left out (a backend that forwards every question to the real
// one, host or CUDA, and counts launches instead of making them). Goal: under 1 us per call.
// Rows: Runtime::run by name, OpRef::run (found once), OpRef::run_values (bound once), and the
// same on a capturing stream after prepare. On the CUDA path without a device it says what it
// skips. A tool, not a test.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "gpu/cuda_backend.hpp"
#include "host/host_backend.hpp"
#include "metrale/runtime.hpp"
#include "support/isolated_runtime.hpp"

namespace {

using namespace metrale;

// The real backend's answers, and launches counted, not made.
class NoLaunchGpu final : public GpuBackend {
 public:
  explicit NoLaunchGpu(std::unique_ptr<GpuBackend> device) : device_(std::move(device)) {}
  std::uint64_t launches = 0;
  bool capturing = false;

  [[nodiscard]] std::string describe() const override { return device_->describe(); }
  [[nodiscard]] std::string device_key() const override { return device_->device_key(); }
  [[nodiscard]] bool needs_compiled_image() const override { return device_->needs_compiled_image(); }
  [[nodiscard]] std::optional<std::uint32_t> sm_count() const override { return device_->sm_count(); }
  [[nodiscard]] std::optional<ComputeCapability> compute_capability() const override {
    return device_->compute_capability();
  }
  [[nodiscard]] std::optional<std::uint32_t> max_dynamic_shared_bytes() const override {
    return device_->max_dynamic_shared_bytes();
  }
  [[nodiscard]] std::optional<std::uint32_t> max_active_clusters(KernelHandle kernel,
                                                                 const LaunchConfig& config) override {
    return device_->max_active_clusters(kernel, config);
  }
  void prepare_launch(KernelHandle kernel, const LaunchConfig& config) override {
    device_->prepare_launch(kernel, config);
  }
  KernelHandle load(const LoadRequest& request) override { return device_->load(request); }
  void launch(KernelHandle /*kernel*/, const LaunchConfig& /*config*/, std::span<const KernelArg> /*args*/) override {
    ++launches;
  }
  DevicePtr alloc(std::size_t bytes) override { return device_->alloc(bytes); }
  void free(DevicePtr ptr) override { device_->free(ptr); }
  void copy_to_device(DevicePtr dst, const void* src, std::size_t bytes) override {
    device_->copy_to_device(dst, src, bytes);
  }
  void copy_to_host(void* dst, DevicePtr src, std::size_t bytes) override { device_->copy_to_host(dst, src, bytes); }
  void synchronize(std::uint64_t stream) override { device_->synchronize(stream); }
  // The real backend's answer (the CUDA path pays for the driver's query), or the bench's own.
  [[nodiscard]] bool is_capturing(std::uint64_t stream) const override {
    return capturing || device_->is_capturing(stream);
  }

 private:
  std::unique_ptr<GpuBackend> device_;
};

// Median nanoseconds per call over `rounds` rounds of `calls` calls.
template <typename Call>
double ns_per_call(Call&& call, int calls = 20000, int rounds = 7) {
  for (int i = 0; i < 1000; ++i) {
    call();
  }
  std::vector<double> samples;
  for (int r = 0; r < rounds; ++r) {
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < calls; ++i) {
      call();
    }
    const std::chrono::duration<double, std::nano> took = std::chrono::steady_clock::now() - start;
    samples.push_back(took.count() / calls);
  }
  std::sort(samples.begin(), samples.end());
  return samples[samples.size() / 2];
}

struct OpCase {
  std::string op;
  std::vector<ops::NamedArg> args;  // tensors first, then the shape
  std::size_t tensors;
};

std::vector<OpCase> cases(GpuBackend& gpu) {
  const auto buffer = [&](std::size_t bytes) { return gpu.alloc(bytes).address; };
  const std::uint64_t x = buffer(5120 * 2), w = buffer(96 * 5120 * 2), a = buffer(48 * 4), d = buffer(48 * 4);
  const std::uint64_t g = buffer(96 * 4), q = buffer(5120), s = buffer(5120 / 128 * 4), h = buffer(5120 * 2);
  const std::uint64_t r = buffer(5120 * 2);
  return {
      {"ssm_ba_gates",
       {{"x", x},
        {"weight", w},
        {"a_log", a},
        {"dt_bias", d},
        {"gate_out", g},
        {"m", 1},
        {"n", 96},
        {"k", 5120},
        {"vheads_per_group", 3}},
       5},
      {"fp8_act_quant", {{"x", x}, {"q", q}, {"scales", s}, {"m", 1}, {"k", 5120}}, 3},
      {"silu_mul_fp8_quant",
       {{"gate", x}, {"up", x}, {"q", q}, {"scales", s}, {"scratch", h}, {"m", 1}, {"k", 5120}},
       5},
      // residual_out in place of residual (r), as vLLM calls it; y into h.
      {"fused_add_rmsnorm",
       {{"x", x}, {"residual", r}, {"weight", x}, {"y", h}, {"residual_out", r}, {"m", 1}, {"hidden", 5120}},
       5},
  };
}

void bench(const std::string& path, std::unique_ptr<GpuBackend> device) {
  auto owned = std::make_unique<NoLaunchGpu>(std::move(device));
  NoLaunchGpu& gpu = *owned;
  auto runtime = Runtime::open_with(std::move(owned), test::isolated_runtime_options(BackendChoice::kHost));
  fmt::print("{}: {} (launches counted, not made)\n", path, gpu.describe());
  fmt::print("  {:<20} {:>14} {:>14} {:>18} {:>16}\n", "op (M = 1)", "run by name", "OpRef::run", "OpRef::run_values",
             "captured (ref)");
  constexpr std::uint64_t kStream = 0x77;
  for (const OpCase& c : cases(gpu)) {
    const OpRef op = runtime->op(c.op);
    std::vector<std::uint64_t> values(op.declaration().args.size());
    ops::bind_args(op.declaration(), c.args, values);
    const double by_name = ns_per_call([&] { static_cast<void>(runtime->run(c.op, c.args)); });
    const double by_ref = ns_per_call([&] { static_cast<void>(op.run(c.args)); });
    const double by_values = ns_per_call([&] { static_cast<void>(op.run_values(values)); });
    runtime->prepare(c.op, std::span(c.args).subspan(c.tensors));
    gpu.capturing = true;
    const double captured = ns_per_call([&] { static_cast<void>(op.run_values(values, kStream)); });
    gpu.capturing = false;
    fmt::print("  {:<20} {:>11.0f} ns {:>11.0f} ns {:>15.0f} ns {:>13.0f} ns\n", c.op, by_name, by_ref, by_values,
               captured);
  }
}

}  // namespace

int main() {
  try {
    bench("host backend", std::make_unique<HostBackend>(HostBackendOptions{}));
    CudaBackendOpen opened = CudaBackend::open(0);
    if (opened.backend == nullptr) {
      fmt::print("CUDA path: skipped (no device: {})\n", opened.reason);
      return 0;
    }
    bench("CUDA path", std::move(opened.backend));
    return 0;
  } catch (const std::exception& error) {
    fmt::print(stderr, "metrale-call-bench: {}\n", error.what());
    return 1;
  }
}
