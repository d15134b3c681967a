// capi_op_run.cpp: metrale_op_run / metrale_op_run_role: one op call by name with a named
// argument array, over Runtime::run, and the one translation of its Pick into metrale_op_pick.
// Invariants: knows no op; nothing launches before the op, the device, the pick struct and
// every argument name are checked; the pick is written only after the launch returned, its
// verdicts in the order the guards gave them and its strings interned (static, as metrale.h
// promises, even for an engine's op whose declaration dies with the runtime). The call
// allocates nothing for the arguments (a fixed array of views).
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstring>
#include <vector>

#include "capi_call.hpp"
#include "capi_runtime.hpp"

namespace metrale::capi {
namespace {

static_assert(METRALE_MAX_VERDICTS == ops::kMaxVerdicts, "metrale_op_pick holds every verdict a Pick holds");

// A version-5 pick struct ends before `shape`: it is accepted and filled up to its size.
constexpr std::size_t kFirstPickSize = offsetof(metrale_op_pick, shape);

// Writes `pick` into the caller's struct, up to its struct_size (an older, smaller struct).
void fill_pick(const ops::Pick& pick, metrale_op_pick* into) {
  metrale_op_pick out;
  metrale_op_pick_init(&out);
  out.struct_size = into->struct_size;
  out.shape = pick.shape;
  out.op = intern(pick.op);
  out.role = intern(pick.role);
  out.kernel = intern(pick.kernel);
  out.forced = pick.forced ? 1 : 0;
  for (const ops::Verdict& verdict : pick.ordered_verdicts()) {
    out.verdicts[out.verdict_count++] =
        metrale_verdict{intern(verdict.role), verdict.reason ? intern(*verdict.reason) : nullptr};
  }
  std::memcpy(into, &out, std::min(into->struct_size, sizeof(out)));
}

metrale_status run(const char* function, metrale_runtime* handle, const char* op, const char* role,
                   const metrale_op_arg* args, std::size_t arg_count, std::uint64_t stream, metrale_op_pick* pick) {
  return capi_call(function, [&] {
    const HeldRuntime held(handle);
    Runtime& runtime = runtime_of(handle);
    const FoundOp found = find_op(handle, op);
    device_of(handle);  // no device: METRALE_ERROR_NO_DEVICE, before the arguments are read
    if (pick != nullptr) {
      require_struct_since(pick, "pick", kFirstPickSize);
    }
    if (arg_count > 0 && args == nullptr) {
      throw CapiError(METRALE_ERROR_ARGUMENT, fmt::format("args is NULL but arg_count is {}", arg_count));
    }
    std::array<ops::NamedArg, ops::kMaxArgs> named{};
    if (arg_count > named.size()) {
      throw CapiError(METRALE_ERROR_ARGUMENT, fmt::format("arg_count {} is more than op {}'s {} arguments", arg_count,
                                                          found.op->name, found.op->args.size()));
    }
    for (std::size_t i = 0; i < arg_count; ++i) {
      if (args[i].name == nullptr) {
        throw CapiError(METRALE_ERROR_ARGUMENT, fmt::format("args[{}].name is NULL", i));
      }
      named[i] = ops::NamedArg{args[i].name, args[i].value};
    }
    const std::string_view forced = role != nullptr ? std::string_view(role) : std::string_view();
    const ops::Pick ran = runtime.run(found.op->name, std::span(named.data(), arg_count), stream, forced);
    if (pick != nullptr) {
      fill_pick(ran, pick);
    }
  });
}

metrale_status prepare(const char* function, metrale_runtime* handle, const char* op, const char* role,
                       const metrale_op_arg* shape, std::size_t arg_count, std::size_t* prepared) {
  return capi_call(function, [&] {
    const HeldRuntime held(handle);
    Runtime& runtime = runtime_of(handle);
    const FoundOp found = find_op(handle, op);
    device_of(handle);
    if (arg_count > 0 && shape == nullptr) {
      throw CapiError(METRALE_ERROR_ARGUMENT, fmt::format("shape is NULL but arg_count is {}", arg_count));
    }
    std::vector<ops::NamedArg> named;
    named.reserve(arg_count);
    for (std::size_t i = 0; i < arg_count; ++i) {
      if (shape[i].name == nullptr) {
        throw CapiError(METRALE_ERROR_ARGUMENT, fmt::format("shape[{}].name is NULL", i));
      }
      named.push_back(ops::NamedArg{shape[i].name, shape[i].value});
    }
    const std::string_view forced = role != nullptr ? std::string_view(role) : std::string_view();
    const std::size_t count = runtime.prepare(found.op->name, named, forced).size();
    if (prepared != nullptr) {
      *prepared = count;
    }
  });
}

}  // namespace
}  // namespace metrale::capi

extern "C" {

void metrale_op_pick_init(metrale_op_pick* pick) { metrale::capi::init_struct(pick); }

metrale_status metrale_op_run(metrale_runtime* runtime, const char* op, const metrale_op_arg* args, size_t arg_count,
                              uint64_t stream, metrale_op_pick* pick) {
  return metrale::capi::run("metrale_op_run", runtime, op, nullptr, args, arg_count, stream, pick);
}

metrale_status metrale_op_prepare(metrale_runtime* runtime, const char* op, const char* role,
                                  const metrale_op_arg* shape, size_t arg_count, size_t* prepared) {
  return metrale::capi::prepare("metrale_op_prepare", runtime, op, role, shape, arg_count, prepared);
}

metrale_status metrale_op_run_role(metrale_runtime* runtime, const char* op, const char* role,
                                   const metrale_op_arg* args, size_t arg_count, uint64_t stream,
                                   metrale_op_pick* pick) {
  return metrale::capi::run("metrale_op_run_role", runtime, op, role, args, arg_count, stream, pick);
}

}  // extern "C"
