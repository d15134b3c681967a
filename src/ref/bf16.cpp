// bf16.cpp: bf16 conversions and seeded random inputs for references and tests.
#include "ref/bf16.hpp"

#include <bit>
#include <cmath>
#include <random>

namespace metrale::ref {

std::uint16_t bf16_from_float(float value) {
  const auto bits = std::bit_cast<std::uint32_t>(value);
  if (std::isnan(value)) {
    return static_cast<std::uint16_t>((bits >> 16) | 0x0040u);
  }
  const std::uint32_t rounding = 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<std::uint16_t>((bits + rounding) >> 16);
}

float bf16_to_float(std::uint16_t bits) { return std::bit_cast<float>(static_cast<std::uint32_t>(bits) << 16); }

std::uint32_t bf16_ulp_distance(std::uint16_t a, std::uint16_t b) {
  if (a == b) {
    return 0;
  }
  const auto is_nan = [](std::uint16_t x) { return (x & 0x7f80u) == 0x7f80u && (x & 0x007fu) != 0; };
  if (is_nan(a) || is_nan(b)) {
    return kNotNear;
  }
  // Sign and magnitude onto one line: the bits of a magnitude count its steps from zero.
  const auto on_line = [](std::uint16_t x) {
    const auto magnitude = static_cast<std::int32_t>(x & 0x7fffu);
    return (x & 0x8000u) != 0 ? -magnitude : magnitude;
  };
  const std::int32_t gap = on_line(a) - on_line(b);
  return static_cast<std::uint32_t>(gap < 0 ? -gap : gap);
}

namespace {

// `count` bf16 values drawn from `dist`, redrawn while one rounds to +-0 (never zeros).
template <typename Distribution>
std::vector<std::uint16_t> random_nonzero_bf16(std::size_t count, std::uint64_t seed, Distribution dist) {
  std::mt19937_64 rng(seed);
  std::vector<std::uint16_t> out(count);
  for (auto& v : out) {
    do {
      v = bf16_from_float(dist(rng));
    } while ((v & 0x7fffu) == 0);
  }
  return out;
}

}  // namespace

std::vector<std::uint16_t> random_bf16(std::size_t count, std::uint64_t seed, float magnitude) {
  return random_nonzero_bf16(count, seed, std::uniform_real_distribution<float>(-magnitude, magnitude));
}

std::vector<std::uint16_t> random_normal_bf16(std::size_t count, std::uint64_t seed, float sigma) {
  return random_nonzero_bf16(count, seed, std::normal_distribution<float>(0.0f, sigma));
}

std::vector<float> random_floats(std::size_t count, std::uint64_t seed, float lo, float hi) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> out(count);
  for (auto& v : out) {
    v = dist(rng);
  }
  return out;
}

}  // namespace metrale::ref
