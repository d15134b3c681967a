// op_runner.hpp: runs the library's two ops on a runtime's backend from host vectors, with
// the guard's pick or one kernel forced, for `run` and `selftest`.
// Invariants: outputs are poisoned on the device before the launch, so an element a kernel
// never writes shows as the poison; a forced kernel the target does not ship is a
// UsageError, never a silent fallback; device buffers are freed on every path.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "metrale/ops/fp8_act_quant.hpp"
#include "metrale/ops/ssm_ba_gates.hpp"
#include "metrale/runtime.hpp"
#include "ref/ssm_ba_gates_ref.hpp"

namespace metrale::cli {

// The CUDA device when there is one, else the host backend (with the target's SM count, so
// the guards decide as on that target). `target` empty: the device's target, else hopper.
std::unique_ptr<Runtime> open_device_or_host(const std::string& target);

// The runtime's choice (metrale/runtime.hpp): kGuard is the op's own pick; kTwin / kParent /
// kMma force one (kParent is the FP8 shared kernel; kMma the BA tensor-core kernel).
using metrale::KernelChoice;

// "twin", "parent", "shared" or "mma" -> the choice; "" -> kGuard.
KernelChoice parse_kernel_choice(std::string_view text);

// Which kernel ran, and why the twin did not when it did not.
struct RanKernel {
  std::string kernel;
  bool twin = false;
  std::optional<std::string> reject;  // the guard's reason, or "forced by --kernel"
};

// Values that no kernel writes: a NaN with a recognisable payload, and 0xAB for the codes.
inline constexpr std::uint32_t kPoisonFloatBits = 0x7fc0dead;
inline constexpr std::uint8_t kPoisonByte = 0xAB;

struct BaGatesProblem {
  ref::BaGatesRefShape shape;    // gate_stride is 2 nv: outputs are dense
  std::vector<std::uint16_t> x;  // [m][k_stride]
  std::vector<std::uint16_t> weight;
  std::vector<float> a_log, dt_bias;
};

struct BaGatesResult {
  RanKernel ran;
  std::vector<float> gate_out;  // [m][2 nv]
};

BaGatesResult run_ba_gates(Runtime& runtime, const BaGatesProblem& problem, KernelChoice choice);

struct Fp8Problem {
  std::uint32_t m = 0, k = 0;
  std::vector<std::uint16_t> x;  // [m][k]
  ops::Fp8ScaleLayout layout = ops::Fp8ScaleLayout::kRowMajor;
  std::uint32_t m_aligned = 0;  // column-major only
  ops::Fp8ScaleKind scale_kind = ops::Fp8ScaleKind::kFp32;
};

struct Fp8Result {
  RanKernel ran;
  std::vector<std::uint8_t> q;  // [m][k]
  std::vector<float> scales;    // as laid out: [m][k/128], or [k/128][m_aligned] column-major
};

Fp8Result run_fp8_quant(Runtime& runtime, const Fp8Problem& problem, KernelChoice choice);

// Scale (token, group) of a result, whatever its layout.
float fp8_scale_at(const Fp8Problem& problem, const Fp8Result& result, std::uint32_t token, std::uint32_t group);

}  // namespace metrale::cli
