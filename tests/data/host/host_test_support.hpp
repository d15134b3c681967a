// Helpers for the host backend tests: random inputs, buffers moved in and out of a backend.
#pragma once

#include <cstdint>
#include <random>
#include <string_view>
#include <vector>

#include "metrale/gpu/gpu_backend.hpp"
#include "ref/bf16.hpp"
#include "support/isolated_runtime.hpp"

namespace metrale_test {

// Loads a host kernel the way the registry does: by name and params, without an image.
inline metrale::KernelHandle load_kernel(metrale::GpuBackend& gpu, std::string_view kernel,
                                         metrale::KernelParams params = {}) {
  metrale::LoadRequest request;
  request.kernel = kernel;
  request.params = params;
  return gpu.load(request);
}

using metrale::test::upload;

template <typename T>
std::vector<T> download(metrale::GpuBackend& gpu, metrale::DevicePtr ptr, std::size_t count) {
  std::vector<T> values(count);
  gpu.copy_to_host(values.data(), ptr, count * sizeof(T));
  return values;
}

// Uniform in [-1, 1): the library's own seeded generator.
inline std::vector<float> random_floats(std::size_t count, std::uint32_t seed) {
  return metrale::ref::random_floats(count, seed, -1.0F, 1.0F);
}

template <typename T>
std::vector<T> random_ints(std::size_t count, std::uint32_t seed, T low, T high) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<T> dist(low, high);
  std::vector<T> values(count);
  for (T& v : values) {
    v = dist(rng);
  }
  return values;
}

}  // namespace metrale_test
