// tools/bench/first_op.cpp: metrale-first-op, what an engine waits for before its first op call.
// Opens a runtime for the hopper target on a stub sm_90 device (it loads images and launches
// nothing; no GPU here) with LoadMode::kBackgroundTwins, so open() returns once the parents are
// loaded while the twins, the tensor-core kernel and its pinned shape variants build in the
// background; then it reads the op kernels' handles as a first call would and exits at once
// (std::_Exit: the background builds are abandoned, as a timing of "start to first call" wants).
// tools/bench/startup_times.sh times the whole process (cold: an empty METRALE_CACHE_DIR; warm:
// a filled one; bundle: METRALE_BUNDLE_DIR). Prints "open_ms <ms in main until open returned>"
// and the parents' handles; exit 1 when a parent is absent.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>

#include "metrale/runtime.hpp"

namespace {

// An sm_90 device that accepts every image and runs nothing.
class StubSm90 final : public metrale::GpuBackend {
 public:
  std::string describe() const override { return "stub sm_90 (first-op bench)"; }
  std::string device_key() const override { return "stub-sm90"; }
  bool needs_compiled_image() const override { return true; }
  std::optional<std::uint32_t> sm_count() const override { return 132; }
  std::optional<metrale::ComputeCapability> compute_capability() const override {
    return metrale::ComputeCapability{9, 0};
  }
  std::optional<std::uint32_t> max_dynamic_shared_bytes() const override { return 227U * 1024U; }
  metrale::KernelHandle load(const metrale::LoadRequest& /*request*/) override {
    return metrale::KernelHandle{++loaded_};
  }
  void launch(metrale::KernelHandle /*kernel*/, const metrale::LaunchConfig& /*config*/,
              std::span<const metrale::KernelArg> /*args*/) override {}
  metrale::DevicePtr alloc(std::size_t /*bytes*/) override { return {}; }
  void free(metrale::DevicePtr /*ptr*/) override {}
  void copy_to_device(metrale::DevicePtr /*dst*/, const void* /*src*/, std::size_t /*bytes*/) override {}
  void copy_to_host(void* /*dst*/, metrale::DevicePtr /*src*/, std::size_t /*bytes*/) override {}
  void synchronize(std::uint64_t /*stream*/) override {}

 private:
  std::uint64_t loaded_ = 0;
};

}  // namespace

int main() {
  const auto start = std::chrono::steady_clock::now();
  metrale::RuntimeOptions options;
  options.target = "hopper";
  options.load_mode = metrale::LoadMode::kBackgroundTwins;
  // The stub runs nothing, so no check can pass on it: verification off (on a device the parents'
  // checks add to open(); BENCHMARKS.md "Verification cost" prices them, ~35 ms predicted on H200).
  options.verify = false;
  const std::unique_ptr<metrale::Runtime> runtime =
      metrale::Runtime::open_with(std::make_unique<StubSm90>(), std::move(options));
  const double open_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  // What a first call reads: each op's kernels by role (the parents must be there).
  int absent = 0;
  for (const metrale::ops::OpDeclaration& op : runtime->ops().ops()) {
    const metrale::ops::OpContext context = runtime->op_context(op.name);
    const metrale::ops::OpKernel& parent = context.kernels[0];
    std::printf("%s: %s %s\n", op.name.c_str(), std::string(parent.kernel).c_str(),
                parent.handle.present() ? "loaded" : "ABSENT");
    absent += parent.shipped && !parent.handle.present() ? 1 : 0;
  }
  std::printf("open_ms %.1f\n", open_ms);
  std::fflush(stdout);
  std::_Exit(absent == 0 ? 0 : 1);
}
