// ref/bf16.hpp: bf16 <-> float for references and tests, and seeded random bf16 inputs.
// Invariants: float -> bf16 rounds to nearest even (NaN stays NaN); bf16 -> float is exact;
// random_bf16 never yields a zero and is a pure function of (count, seed, magnitude).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace metrale::ref {

std::uint16_t bf16_from_float(float value);
float bf16_to_float(std::uint16_t bits);

// `count` bf16 values uniform in [-magnitude, magnitude], none zero, from a seeded generator.
std::vector<std::uint16_t> random_bf16(std::size_t count, std::uint64_t seed, float magnitude = 1.0f);

// `count` bf16 values drawn from N(0, sigma^2), none zero, from a seeded generator (the shape
// of real activations and weights: a few large values among many small ones).
std::vector<std::uint16_t> random_normal_bf16(std::size_t count, std::uint64_t seed, float sigma = 1.0f);

// `count` floats uniform in [lo, hi] from a seeded generator.
std::vector<float> random_floats(std::size_t count, std::uint64_t seed, float lo, float hi);

}  // namespace metrale::ref
