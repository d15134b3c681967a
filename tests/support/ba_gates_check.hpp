// ba_gates_check.hpp: the one definition of how close a device's BA gates must be to the CPU
// reference, shared by tests/gpu and metrale-ops-bench (issue 17), and the bench's check of a
// run: twin bytes equal to the parent's over the whole output, every sampled row within the
// tolerance of the reference.
// Why not bit for bit: the reference is the kernels' own accumulation order, but it calls glibc's
// exp / log1p while the kernels call CUDA's expf / log1pf, documented up to 2 ulp apart; 2e-6
// relative is ~17 float ulp, while a wrong kernel (a lost term, a swapped column) is off by far
// more. Invariants: a NaN, or a value where the reference has none, never passes; twin and parent
// run the same instructions on the same device, so they must agree to the byte.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <span>
#include <string>
#include <vector>

namespace metrale::check {

// Largest |device - reference| / |reference| allowed for a BA gate (beta or gate column).
inline constexpr double kBaGatesMaxRelativeGap = 2e-6;

// |got - want| / |want| (the floor keeps a zero reference finite); NaN on either side is infinite.
inline double ba_relative_gap(double got, double want) {
  if (std::isnan(got) || std::isnan(want)) {
    return std::numeric_limits<double>::infinity();
  }
  return std::fabs(got - want) / std::max(std::fabs(want), 1e-30);
}

// What the bench compares: `got` is the whole output, [m][gate_stride]; `expected` holds the
// reference of `rows` (in that order), [rows.size()][gate_stride]; only the 2 nv written columns
// of each row are compared. `parent` is the parent's whole output, or empty for the parent itself.
struct BaRunCheck {
  std::string failure;     // empty when the run passed; else what failed, first failure only
  double worst_gap = 0.0;  // the largest relative gap seen over the sampled rows
};

inline BaRunCheck check_ba_run(std::span<const float> got, std::span<const std::uint32_t> rows,
                               std::span<const float> expected, std::uint32_t gate_stride, std::uint32_t nv,
                               std::span<const float> parent) {
  BaRunCheck result;
  if (!parent.empty() &&
      (parent.size() != got.size() || std::memcmp(parent.data(), got.data(), got.size() * sizeof(float)) != 0)) {
    result.failure = "twin output differs from the parent's bytes";
    return result;
  }
  for (std::size_t i = 0; i < rows.size(); ++i) {
    double row_worst = 0.0;
    for (std::uint32_t col = 0; col < 2 * nv; ++col) {
      const double gap =
          ba_relative_gap(got[std::size_t(rows[i]) * gate_stride + col], expected[i * gate_stride + col]);
      row_worst = std::max(row_worst, gap);
    }
    result.worst_gap = std::max(result.worst_gap, row_worst);
    if (!(row_worst <= kBaGatesMaxRelativeGap) && result.failure.empty()) {
      result.failure = "row " + std::to_string(rows[i]) + " is " + std::to_string(row_worst) +
                       " relative from the reference (allowed " + std::to_string(kBaGatesMaxRelativeGap) + ")";
    }
  }
  return result;
}

// The tensor-core kernel (ssm_ba_gates_mma) sums in another order, so it is judged against the
// float64 oracle as a whole: ||got - oracle||_F / ||oracle||_F over the compared rows must stay
// below this (DESIGN.md, README). A lost term or a wrong fragment layout is off by far more.
inline constexpr double kBaGatesMmaMaxRelativeFrobenius = 1e-5;

// `oracle` holds the float64 oracle of `rows` (in that order), [rows.size()][2 nv]. The worst
// gap reported is the relative Frobenius error; a NaN anywhere fails.
// ||got - oracle||_F / ||oracle||_F over the 2 nv written columns of `rows` (in that order);
// `oracle` is [rows.size()][2 nv] in float64. A NaN makes the error NaN.
inline double ba_relative_frobenius(std::span<const float> got, std::span<const std::uint32_t> rows,
                                    std::span<const double> oracle, std::uint32_t gate_stride, std::uint32_t nv) {
  double diff = 0.0;
  double norm = 0.0;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    for (std::uint32_t col = 0; col < 2 * nv; ++col) {
      const double want = oracle[i * 2 * nv + col];
      const double value = got[std::size_t(rows[i]) * gate_stride + col];
      diff += (value - want) * (value - want);
      norm += want * want;
    }
  }
  return norm > 0.0 ? std::sqrt(diff / norm) : std::sqrt(diff);
}

// The bench's check of the tensor-core kernel: the relative Frobenius error (reported as the
// worst gap) under the bound; a NaN anywhere fails.
inline BaRunCheck check_ba_mma_run(std::span<const float> got, std::span<const std::uint32_t> rows,
                                   std::span<const double> oracle, std::uint32_t gate_stride, std::uint32_t nv) {
  BaRunCheck result;
  result.worst_gap = ba_relative_frobenius(got, rows, oracle, gate_stride, nv);
  if (!(result.worst_gap < kBaGatesMmaMaxRelativeFrobenius)) {
    result.failure = "relative Frobenius error " + std::to_string(result.worst_gap) +
                     " against the float64 oracle (allowed " + std::to_string(kBaGatesMmaMaxRelativeFrobenius) + ")";
  }
  return result;
}

}  // namespace metrale::check
