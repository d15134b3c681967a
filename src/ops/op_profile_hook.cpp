// ops/op_profile_hook.cpp: the profile's buffers (ProfileBuffers): a seeded pattern of 2^16
// elements copied over each buffer until it is full, freed with the object.
#include "ops/op_profile_hook.hpp"

#include <algorithm>

#include "ref/bf16.hpp"

namespace metrale::ops {
namespace {

constexpr std::size_t kPatternElements = std::size_t{1} << 16;
constexpr std::uint64_t kSeed = 0x9e3779b9;

}  // namespace

ProfileBuffers::~ProfileBuffers() {
  for (const DevicePtr ptr : owned_) {
    gpu_.free(ptr);
  }
}

DevicePtr ProfileBuffers::filled(std::size_t count, const void* pattern, std::size_t pattern_count,
                                 std::size_t element_bytes) {
  // One element at least: a buffer of a size-0 dim still has an address the op's checks accept.
  const DevicePtr ptr = gpu_.alloc(std::max<std::size_t>(count, 1) * element_bytes);
  owned_.push_back(ptr);
  for (std::size_t at = 0; at < count; at += pattern_count) {
    const std::size_t n = std::min(pattern_count, count - at);
    gpu_.copy_to_device(DevicePtr{ptr.address + at * element_bytes}, pattern, n * element_bytes);
  }
  return ptr;
}

DevicePtr ProfileBuffers::bf16(std::size_t count) {
  static const std::vector<std::uint16_t> pattern = ref::random_bf16(kPatternElements, kSeed);
  return filled(count, pattern.data(), pattern.size(), sizeof(std::uint16_t));
}

DevicePtr ProfileBuffers::floats(std::size_t count) {
  static const std::vector<float> pattern = ref::random_floats(kPatternElements, kSeed + 1, -1.0F, 1.0F);
  return filled(count, pattern.data(), pattern.size(), sizeof(float));
}

DevicePtr ProfileBuffers::bytes(std::size_t count) {
  static const std::vector<std::uint8_t> pattern(kPatternElements, 0xA5);
  return filled(count, pattern.data(), pattern.size(), 1);
}

}  // namespace metrale::ops
