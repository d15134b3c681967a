// library_ops.cpp: the list of the library's ops. The one file a new library op touches
// outside its own folder (src/ops/<op>/) and the target files: one line in kLibraryOps, and the
// two functions that line names, each defined in the op's folder.
#include "ops/core/library_ops.hpp"

namespace metrale::ops {

OpDeclaration ssm_ba_gates_declaration();
void add_ssm_ba_gates_kernels(KernelCatalog& catalog);
OpDeclaration fp8_act_quant_declaration();
void add_fp8_act_quant_kernels(KernelCatalog& catalog);
OpDeclaration silu_mul_fp8_quant_declaration();
void add_silu_mul_fp8_quant_kernels(KernelCatalog& catalog);
OpDeclaration fused_add_rmsnorm_declaration();
void add_fused_add_rmsnorm_kernels(KernelCatalog& catalog);

namespace {

constexpr LibraryOp kLibraryOps[] = {
    {ssm_ba_gates_declaration, add_ssm_ba_gates_kernels},
    {fp8_act_quant_declaration, add_fp8_act_quant_kernels},
    {silu_mul_fp8_quant_declaration, add_silu_mul_fp8_quant_kernels},
    {fused_add_rmsnorm_declaration, add_fused_add_rmsnorm_kernels},
};

}  // namespace

std::span<const LibraryOp> library_op_list() { return kLibraryOps; }

std::vector<OpDeclaration> library_op_declarations() {
  std::vector<OpDeclaration> ops;
  for (const LibraryOp& op : kLibraryOps) {
    ops.push_back(op.declaration());
  }
  return ops;
}

}  // namespace metrale::ops
