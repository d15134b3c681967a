// A minimal host engine built against the installed package with the umbrella header alone:
// opens a runtime on the host backend, quantises one random bf16 row to FP8 through the op, and
// checks the group's scale against amax / 448 computed here, so a broken install, a missing
// public header or a wrong op all fail. first_group_scale() is README's C++ example, verbatim
// (tests/scripts/check_readme_examples.py).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <metrale/metrale.hpp>
#include <vector>

namespace {

float bf16_to_float(std::uint16_t bits) {
  const std::uint32_t word = std::uint32_t{bits} << 16;
  float value = 0.0F;
  std::memcpy(&value, &word, sizeof value);
  return value;
}

}  // namespace

// README: C++ example
// Quantises one bf16 row of `x.size()` elements (a multiple of 128) to FP8 e4m3 and returns the
// first group's scale. The host backend runs the same kernels on the CPU; BackendChoice::kAuto
// takes the GPU when there is one (device pointers then, and a stream).
float first_group_scale(const std::vector<std::uint16_t>& x) {
  metrale::RuntimeOptions options;
  options.backend = metrale::BackendChoice::kHost;
  options.target = "hopper";
  auto runtime = metrale::Runtime::open(options);  // selects the target, resolves levers, builds

  metrale::GpuBackend& gpu = *runtime->backend();
  const std::uint64_t k = x.size();
  const metrale::DevicePtr dx = gpu.alloc(x.size() * 2);
  const metrale::DevicePtr dq = gpu.alloc(x.size());
  const metrale::DevicePtr ds = gpu.alloc(k / 128 * sizeof(float));
  gpu.copy_to_device(dx, x.data(), x.size() * 2);
  // Any op by name, its arguments by the names it declares (runtime->ops()); validates, runs
  // the guard, picks the kernel, logs the verdict once, launches.
  const metrale::ops::NamedArg args[] = {
      {"x", dx.address}, {"q", dq.address}, {"scales", ds.address}, {"m", 1}, {"k", k}};
  const metrale::ops::Pick pick = runtime->run("fp8_act_quant", args);
  std::printf("target %s ran %.*s (role %.*s)\n", runtime->target().name.c_str(), static_cast<int>(pick.kernel.size()),
              pick.kernel.data(), static_cast<int>(pick.role.size()), pick.role.data());
  float scale = 0.0F;
  gpu.copy_to_host(&scale, ds, sizeof scale);
  gpu.free(dx);
  gpu.free(dq);
  gpu.free(ds);
  return scale;
}
// README: end

int main() {
  try {
    constexpr std::uint32_t kK = 128;
    std::vector<std::uint16_t> x(kK);
    std::uint32_t state = 12345;
    float amax = 0.0F;
    for (auto& value : x) {
      state = state * 1664525U + 1013904223U;
      value = static_cast<std::uint16_t>(0x3C00U + (state >> 24)) | ((state & 1U) << 15U);  // +-[0.0078, 0.06)
      amax = std::max(amax, std::fabs(bf16_to_float(value)));
    }
    const float scale = first_group_scale(x);
    const float expected = amax / 448.0F;
    std::printf("scale %g expected %g\n", static_cast<double>(scale), static_cast<double>(expected));
    if (std::fabs(scale - expected) > 1e-6F * expected) {
      std::fprintf(stderr, "consumer: the FP8 scale is %g, not amax / 448 = %g\n", static_cast<double>(scale),
                   static_cast<double>(expected));
      return 1;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "consumer: %s\n", e.what());
    return 1;
  }
  return 0;
}
