// ops/core/library_ops.hpp (private): the library's own op declarations, one function per op,
// each defined in the op's own file. A new op of the library adds its line here and in
// library_op_declarations() (op_set.cpp's library_ops() holds them once per process).
#pragma once

#include <vector>

#include "metrale/ops/op_declaration.hpp"

namespace metrale::ops {

OpDeclaration ssm_ba_gates_declaration();        // ops/ssm_ba_gates_op.cpp
OpDeclaration fp8_act_quant_declaration();       // ops/fp8_act_quant_op.cpp
OpDeclaration silu_mul_fp8_quant_declaration();  // ops/silu_mul_fp8_quant_op.cpp

// The ops' check hooks (OpDeclaration::check), each in the op's own *_check.cpp.
std::vector<CheckResult> ssm_ba_gates_check(const OpContext& context, const CheckOptions& options);
std::vector<CheckResult> fp8_act_quant_check(const OpContext& context, const CheckOptions& options);
std::vector<CheckResult> silu_mul_fp8_quant_check(const OpContext& context, const CheckOptions& options);

// Every library op, in the order the surfaces list them.
std::vector<OpDeclaration> library_op_declarations();

}  // namespace metrale::ops
