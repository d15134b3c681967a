// library_ops.cpp: the list of the library's ops. The one file a new library op touches
// outside its own folder.
#include "ops/core/library_ops.hpp"

namespace metrale::ops {

std::vector<OpDeclaration> library_op_declarations() {
  std::vector<OpDeclaration> ops;
  ops.push_back(ssm_ba_gates_declaration());
  ops.push_back(fp8_act_quant_declaration());
  ops.push_back(silu_mul_fp8_quant_declaration());
  return ops;
}

}  // namespace metrale::ops
