// capi_ops.cpp: the ops a runtime serves, as the C caller lists them: metrale_op_get / find (an
// op's name, aliases, summary and counts), metrale_op_role (its kernels by role) and
// metrale_op_arg_get (its arguments and their rules), all read from the op declarations.
// Invariants: knows no op; every string handed out is the declaration's or the handle's (both
// live until close); a role's presence is read from the runtime now (a twin built in the
// background turns present without a new open).
#include <fmt/format.h>

#include <algorithm>
#include <cstddef>
#include <cstring>

#include "capi_call.hpp"
#include "capi_runtime.hpp"

namespace metrale::capi {
namespace {

// metrale_arg_info up to ABI 6 (before zero_means): a caller's struct of that size is still filled.
constexpr std::size_t kFirstArgInfoSize = offsetof(metrale_arg_info, zero_means);

void write_op(const metrale_runtime* handle, const FoundOp& found, metrale_op_info& info) {
  const ops::OpDeclaration& op = *found.op;
  metrale_op_info out;
  metrale_op_info_init(&out);
  out.struct_size = info.struct_size;
  out.name = op.name.c_str();
  out.aliases = handle->ops[found.index].aliases.c_str();
  out.summary = op.summary.c_str();
  out.role_count = op.roles.size();
  out.arg_count = op.args.size();
  info = out;
}

metrale_arg_kind arg_kind(ops::ArgKind kind) {
  switch (kind) {
    case ops::ArgKind::kInput:
      return METRALE_ARG_INPUT;
    case ops::ArgKind::kOutput:
      return METRALE_ARG_OUTPUT;
    case ops::ArgKind::kScalar:
      return METRALE_ARG_SCALAR;
  }
  throw CapiError(METRALE_ERROR_INTERNAL, fmt::format("argument kind {} has no C value", static_cast<int>(kind)));
}

}  // namespace
}  // namespace metrale::capi

extern "C" {

void metrale_op_info_init(metrale_op_info* info) { metrale::capi::init_struct(info); }

metrale_status metrale_op_get(const metrale_runtime* runtime, size_t index, metrale_op_info* info) {
  using namespace metrale::capi;
  return capi_call("metrale_op_get", [&] {
    const HeldRuntime held(runtime);
    const auto& ops = runtime_of(runtime).ops().ops();
    require_struct(info, "info");
    require_index(index, ops.size(), "the runtime", "ops");
    write_op(runtime, FoundOp{&ops[index], index}, *info);
  });
}

metrale_status metrale_op_find(const metrale_runtime* runtime, const char* op, metrale_op_info* info) {
  using namespace metrale::capi;
  return capi_call("metrale_op_find", [&] {
    const HeldRuntime held(runtime);
    const FoundOp found = find_op(runtime, op);
    require_struct(info, "info");
    write_op(runtime, found, *info);
  });
}

void metrale_role_info_init(metrale_role_info* info) { metrale::capi::init_struct(info); }

metrale_status metrale_op_role(const metrale_runtime* runtime, const char* op, size_t index, metrale_role_info* info) {
  using namespace metrale::capi;
  return capi_call("metrale_op_role", [&] {
    const HeldRuntime held(runtime);
    const FoundOp found = find_op(runtime, op);
    require_struct(info, "info");
    require_index(index, found.op->roles.size(), "op " + found.op->name, "roles");
    const metrale::ops::RoleDecl& role = found.op->roles[index];
    const metrale::ops::OpContext context = runtime_of(runtime).op_context(found.op->name);
    metrale_role_info out;
    metrale_role_info_init(&out);
    out.struct_size = info->struct_size;
    out.role = role.role.c_str();
    out.kernel = role.kernel.c_str();
    out.aliases = runtime->ops[found.index].role_aliases[index].c_str();
    out.lever = role.lever.c_str();
    out.shipped = context.kernels[index].shipped ? 1 : 0;
    out.present = context.kernels[index].handle.present() ? 1 : 0;
    *info = out;
  });
}

void metrale_arg_info_init(metrale_arg_info* info) { metrale::capi::init_struct(info); }

metrale_status metrale_op_arg_get(const metrale_runtime* runtime, const char* op, size_t index,
                                  metrale_arg_info* info) {
  using namespace metrale::capi;
  return capi_call("metrale_op_arg_get", [&] {
    const HeldRuntime held(runtime);
    const FoundOp found = find_op(runtime, op);
    require_struct_since(info, "info", kFirstArgInfoSize);
    require_index(index, found.op->args.size(), "op " + found.op->name, "arguments");
    const metrale::ops::ArgDecl& arg = found.op->args[index];
    const metrale_runtime::OpText& text = runtime->ops[found.index];
    metrale_arg_info out;
    metrale_arg_info_init(&out);
    out.struct_size = info->struct_size;
    out.name = arg.name.c_str();
    out.kind = arg_kind(arg.kind);
    out.dtype = text.arg_dtypes[index].c_str();
    out.alignment = arg.tensor() && arg.alignment == 0 ? metrale::ops::dtype_bytes(arg.dtype) : arg.alignment;
    out.dims = text.arg_dims[index].c_str();
    out.min = arg.tensor() ? 0 : arg.min;
    out.max = arg.tensor() ? 0 : arg.max;
    out.required = arg.tensor() || !arg.fallback ? 1 : 0;
    out.fallback = arg.fallback.value_or(0);
    out.doc = arg.doc.c_str();
    out.zero_means = arg.zero_means.c_str();
    out.in_place_of = arg.in_place_of.c_str();
    out.multiple_of = arg.multiple_of;
    out.layout_by = arg.layout_by.c_str();
    out.column_stride = arg.column_stride.c_str();
    std::memcpy(info, &out, std::min(info->struct_size, sizeof(out)));
  });
}

}  // extern "C"
