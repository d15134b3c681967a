// target/kernel_catalog.hpp: the kernels a HARDWARE.toml may ship and the template
// parameters each accepts.
// Invariant: the constraints here are the ones the templates' arithmetic needs (reduction
// shape, one 128-element group per 16 lanes); the loader rejects any entry that breaks them,
// so a kernel is never instantiated with a shape it cannot compute.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>

#include "metrale/gpu/kernel_params.hpp"

namespace metrale {

inline constexpr std::string_view kSsmBaGates = "ssm_ba_gates";
inline constexpr std::string_view kSsmBaGatesHopper = "ssm_ba_gates_hopper";
inline constexpr std::string_view kFp8ActQuant = "fp8_act_quant";
inline constexpr std::string_view kFp8ActQuantHopper = "fp8_act_quant_hopper";
// The tensor-core BA-gates kernel; its `lanes` is the token tile a block owns (TOKENS).
inline constexpr std::string_view kSsmBaGatesMma = "ssm_ba_gates_mma";

// Every kernel name a [kernels] table may use, sorted.
inline constexpr std::array<std::string_view, 5> kKnownKernels{kFp8ActQuant, kFp8ActQuantHopper, kSsmBaGates,
                                                               kSsmBaGatesHopper, kSsmBaGatesMma};

// A twin and the parent whose bytes it must reproduce. `same_shape`: the twin must take the
// parent's block and lanes, because its bytes depend on them (the BA sum's order follows the
// lanes); the FP8 group max is exact in any order, so its twin may split a group differently.
struct TwinOf {
  std::string_view twin;
  std::string_view parent;
  bool same_shape;
};
inline constexpr std::array<TwinOf, 2> kTwins{
    {{kSsmBaGatesHopper, kSsmBaGates, true}, {kFp8ActQuantHopper, kFp8ActQuant, false}}};

[[nodiscard]] bool is_known_kernel(std::string_view kernel);

// Which parameter breaks which rule; param is "block", "lanes", "groups", or "" when the
// kernel name itself is unknown.
struct KernelParamsProblem {
  std::string_view param;
  std::string reason;
};

// The first rule `params` breaks for `kernel`, or nullopt when it is acceptable. Pure.
std::optional<KernelParamsProblem> check_kernel_params(std::string_view kernel, const KernelParams& params);

// The same, as one sentence ("groups = 20: must be in [1, 16] ..."). Pure.
std::optional<std::string> kernel_params_violation(std::string_view kernel, const KernelParams& params);

}  // namespace metrale
