// A minimal host engine built against the installed package with the umbrella header alone:
// opens a runtime on the host backend, quantises one random bf16 row to FP8 through the op, and
// checks the group's scale against amax / 448 computed here, so a broken install, a missing
// public header or a wrong op all fail.
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

int main() {
  try {
    metrale::RuntimeOptions options;
    options.backend = metrale::BackendChoice::kHost;
    options.target = "hopper";
    options.host_worker_threads = 1;
    auto runtime = metrale::Runtime::open(options);
    std::printf("target %s\n", runtime->target().name.c_str());

    constexpr std::uint32_t kK = 128;
    std::vector<std::uint16_t> x(kK);
    std::uint32_t state = 12345;
    float amax = 0.0F;
    for (auto& value : x) {
      state = state * 1664525U + 1013904223U;
      value = static_cast<std::uint16_t>(0x3C00U + (state >> 24)) | ((state & 1U) << 15U);  // +-[0.0078, 0.06)
      amax = std::max(amax, std::fabs(bf16_to_float(value)));
    }
    metrale::GpuBackend& gpu = *runtime->backend();
    const metrale::DevicePtr dx = gpu.alloc(kK * 2);
    const metrale::DevicePtr dq = gpu.alloc(kK);
    const metrale::DevicePtr ds = gpu.alloc(sizeof(float));
    gpu.copy_to_device(dx, x.data(), kK * 2);
    const float poison = -1.0F;
    gpu.copy_to_device(ds, &poison, sizeof poison);
    runtime->fp8_act_quant(
        metrale::ops::Fp8QuantArgs{.x = dx, .q = dq, .scales = ds, .m = 1, .k = kK, .x_row_stride = kK});
    float scale = 0.0F;
    gpu.copy_to_host(&scale, ds, sizeof scale);
    const float expected = amax / 448.0F;
    std::printf("scale %g expected %g\n", static_cast<double>(scale), static_cast<double>(expected));
    if (std::fabs(scale - expected) > 1e-6F * expected) {
      std::fprintf(stderr, "consumer: the FP8 scale is %g, not amax / 448 = %g\n", static_cast<double>(scale),
                   static_cast<double>(expected));
      return 1;
    }
    gpu.free(dx);
    gpu.free(dq);
    gpu.free(ds);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "consumer: %s\n", e.what());
    return 1;
  }
  return 0;
}
