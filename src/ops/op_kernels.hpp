// ops/op_kernels.hpp: the library's own kernels as catalog declarations (template file, name
// expression pattern, parameters, rules), made through the KernelCatalog an engine uses.
// Invariants: this is the one place that spells a library name expression; a twin is declared
// as a background variant (it may arrive after the runtime opens, and the guards then pick the
// parent, which computes the same bytes).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "metrale/jit/kernel_registry.hpp"
#include "metrale/target/hardware_target.hpp"
#include "target/kernel_catalog.hpp"

namespace metrale::ops {

// The kernel names and the template name expressions the registry builds: BA gates
// ({BLOCK, LANES} and {BLOCK, LANES, GROUPS}) and FP8 quantisation ({LANES, GROUPS}).
inline constexpr std::string_view kBaGatesParentKernel = kSsmBaGates;
inline constexpr std::string_view kBaGatesTwinKernel = kSsmBaGatesHopper;
inline constexpr std::string_view kBaGatesParentTemplate = "metrale::kernels::dense_gemm_ba_gates_prefill";
inline constexpr std::string_view kBaGatesTwinTemplate = "metrale::kernels::dense_gemm_ba_gates_prefill_hopper";
inline constexpr std::string_view kBaGatesTemplateFile = "ssm_ba_gates.cuh";
// The tensor-core kernel: {BLOCK, TOKENS} (TOKENS is KernelParams::lanes).
inline constexpr std::string_view kBaGatesMmaKernel = kSsmBaGatesMma;
inline constexpr std::string_view kBaGatesMmaTemplate = "metrale::kernels::ssm_ba_gates_mma";
inline constexpr std::string_view kBaGatesMmaTemplateFile = "ssm_ba_gates_mma.cuh";
inline constexpr std::string_view kFp8QuantSharedKernel = kFp8ActQuant;
inline constexpr std::string_view kFp8QuantTwinKernel = kFp8ActQuantHopper;
inline constexpr std::string_view kFp8QuantSharedTemplate = "metrale::kernels::per_token_group_quant_fp8";
inline constexpr std::string_view kFp8QuantTwinTemplate = "metrale::kernels::per_token_group_quant_fp8_hopper";
inline constexpr std::string_view kFp8QuantTemplateFile = "fp8_act_quant.cuh";

// The library's five kernels, declared once per process.
const KernelCatalog& library_catalog();

// The first rule `params` breaks for one of the library's kernels, or nullopt. Pure.
std::optional<KernelParamsProblem> check_kernel_params(std::string_view kernel, const KernelParams& params);
// The same, as one sentence ("groups = 20: must be in [1, 16] ..."). Pure.
std::optional<std::string> kernel_params_violation(std::string_view kernel, const KernelParams& params);

// The registry variant of one of the library's kernels; nullopt for a name it does not know.
std::optional<KernelVariant> op_kernel_variant(std::string_view kernel, const KernelParams& params);

// The registry variant of one shipped entry: from the entry itself when the target file declares
// it in full, else from `catalog`. ConfigError naming the file when the catalog lacks it.
KernelVariant target_kernel_variant(const HardwareTarget& target, const KernelEntry& entry,
                                    const KernelCatalog& catalog);

// Declares every kernel the target ships; returns kernel name -> variant id.
std::map<std::string, VariantId, std::less<>> declare_target_kernels(KernelRegistry& registry,
                                                                     const HardwareTarget& target,
                                                                     const KernelCatalog& catalog = library_catalog());

}  // namespace metrale::ops
