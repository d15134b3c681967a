// ops/core/library_ops.hpp (private): the library's own ops, as the one list in library_ops.cpp
// holds them: each op's declaration and its kernels' catalog declarations, both defined in the
// op's folder (src/ops/<op>/). op_set.cpp's library_ops() holds the declarations once per process;
// op_kernels.cpp's library_catalog() the kernels.
#pragma once

#include <span>
#include <vector>

#include "hardware/kernel_catalog.hpp"
#include "metrale/ops/op_declaration.hpp"

namespace metrale::ops {

// One library op: its declaration (<op>_op.cpp) and the function that adds its kernels to a
// catalog (<op>.cpp).
struct LibraryOp {
  OpDeclaration (*declaration)();
  void (*add_kernels)(KernelCatalog& catalog);
};

// Every library op, in the order the surfaces list them.
std::span<const LibraryOp> library_op_list();
std::vector<OpDeclaration> library_op_declarations();

}  // namespace metrale::ops
