// ops_bench_roles.hpp: the kernels the bench runs, by role, as the runtime holds them, with why
// verification refused any of them (this runtime's refusal, or the child process's of --verify
// isolated: BenchSettings::refused), and the row a refused kernel gets instead of a time.
// Invariants: a refused role's handle is 0, so it is never launched and the op's own pick passes
// over it as the library's does; its reason is kept for the row, never dropped.
#pragma once

#include <array>
#include <string>

#include "metrale/gpu/gpu_backend.hpp"
#include "metrale/gpu/kernel_params.hpp"
#include "ops/fp8_act_quant/fp8_act_quant.hpp"
#include "ops/ssm_ba_gates/ssm_ba_gates.hpp"
#include "ops_bench.hpp"

namespace metrale {
class Runtime;
}

namespace metrale::bench {

// Each BA role's refusal (empty: not refused).
struct BaRefusals {
  std::string parent, twin, mma, shaped, decode;
};

// The tensor-core kernel's shape-specialised variant (absent handle: none published, or refused).
struct ShapedMma {
  KernelHandle handle;
  KernelParams params;
};

ops::BaGatesKernels ba_gates_kernels(const Runtime& runtime, const BenchSettings& settings, BaRefusals& refusals);
ShapedMma shaped_mma(Runtime& runtime, const BenchSettings& settings, std::uint32_t n, std::uint32_t k,
                     std::uint32_t vpg, std::string& refusal);
// refusals: shared, twin.
ops::Fp8QuantKernels fp8_quant_kernels(const Runtime& runtime, const BenchSettings& settings,
                                       std::array<std::string, 2>& refusals);
// A row for one kernel at one shape, before it runs.
KernelResult new_result(std::string op, std::string kernel, std::uint32_t m, std::uint32_t k, std::uint32_t n);
// A row for a kernel verification refused: not launched, not timed; the reason in its check column.
KernelResult refused_result(std::string op, std::string kernel, std::uint32_t m, std::uint32_t k, std::uint32_t n,
                            std::uint64_t bytes, const std::string& refusal);

}  // namespace metrale::bench
