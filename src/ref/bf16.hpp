// ref/bf16.hpp: bf16 <-> float for references and tests, and seeded random bf16 inputs.
// Invariants: float -> bf16 rounds to nearest even (NaN stays NaN); bf16 -> float is exact;
// random_bf16 never yields a zero and is a pure function of (count, seed, magnitude); the ulp
// distance counts representable bf16 values between two, so +0 and -0 are 0 apart and a NaN is
// never near anything but its own bits.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace metrale::ref {

std::uint16_t bf16_from_float(float value);
float bf16_to_float(std::uint16_t bits);

// How many bf16 steps lie between `a` and `b` (bits): 0 for equal bits and for +0 / -0, 1 for
// neighbours (the largest finite and the infinity of its sign too), across zero the sum of both
// sides' steps; kNotNear when the bits differ and either is a NaN.
inline constexpr std::uint32_t kNotNear = UINT32_MAX;
std::uint32_t bf16_ulp_distance(std::uint16_t a, std::uint16_t b);

// `count` bf16 values uniform in [-magnitude, magnitude], none zero, from a seeded generator.
std::vector<std::uint16_t> random_bf16(std::size_t count, std::uint64_t seed, float magnitude = 1.0f);

// `count` bf16 values drawn from N(0, sigma^2), none zero, from a seeded generator (the shape
// of real activations and weights: a few large values among many small ones).
std::vector<std::uint16_t> random_normal_bf16(std::size_t count, std::uint64_t seed, float sigma = 1.0f);

// `count` floats uniform in [lo, hi] from a seeded generator.
std::vector<float> random_floats(std::size_t count, std::uint64_t seed, float lo, float hi);

}  // namespace metrale::ref
