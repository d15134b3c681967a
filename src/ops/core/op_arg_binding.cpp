// op_arg_binding.cpp: a call's arguments made into one value per declared argument (by name for
// the C ABI, the bindings and the CLI; already in order for typed calls), every scalar inside its
// declared range, and explain's shape (tensors unset, fallbacks filled).
// Invariant: the only place a scalar's declared range (and multiple_of) is checked; allocates nothing.
#include "ops/core/op_arg_binding.hpp"

#include <fmt/format.h>

#include <array>

#include "metrale/error.hpp"

namespace metrale::ops {
namespace {

[[noreturn, gnu::cold, gnu::noinline]] void refuse_scalar(const OpDeclaration& op, const ArgDecl& decl,
                                                          std::uint64_t value) {
  if (value < decl.min || value > decl.max) {
    throw ArgumentError(fmt::format("{}: {}={} is outside [{}, {}]", op.name, decl.name, value, decl.min, decl.max));
  }
  throw ArgumentError(fmt::format("{}: {}={} is not a multiple of {}", op.name, decl.name, value, decl.multiple_of));
}

// On every call: the checks inline, the message out of line.
void check_scalar_range(const OpDeclaration& op, const ArgDecl& decl, std::uint64_t value) {
  if (!decl.tensor() &&
      (value < decl.min || value > decl.max || (decl.multiple_of > 1 && value % decl.multiple_of != 0))) [[unlikely]] {
    refuse_scalar(op, decl, value);
  }
}

// bind_args and bind_shape: `shape_only` lets tensors and required scalars go unset (0).
void bind(const OpDeclaration& op, std::span<const NamedArg> named, std::span<std::uint64_t> out, bool shape_only) {
  if (out.size() != op.args.size()) {
    throw ArgumentError(
        fmt::format("{}: {} argument slots for {} declared arguments", op.name, out.size(), op.args.size()));
  }
  std::array<bool, kMaxArgs> given{};
  if (op.args.size() > given.size()) {
    throw ArgumentError(fmt::format("{}: more than {} arguments", op.name, given.size()));
  }
  // Callers mostly name the arguments in declaration order: the slot after the last one bound is
  // tried first, so an in-order call compares one name per argument instead of searching.
  std::size_t next = 0;
  for (const NamedArg& arg : named) {
    const std::optional<std::size_t> index = next < op.args.size() && op.args[next].name == arg.name
                                                 ? std::optional<std::size_t>(next)
                                                 : op.arg_index(arg.name);
    next = index ? *index + 1 : next;
    if (!index) {
      std::string known;
      for (const ArgDecl& decl : op.args) {
        known += (known.empty() ? "" : ", ") + decl.name;
      }
      throw ArgumentError(fmt::format("{}: no argument named '{}' (arguments: {})", op.name, arg.name, known));
    }
    if (given[*index]) {
      throw ArgumentError(fmt::format("{}: argument '{}' is given twice", op.name, arg.name));
    }
    given[*index] = true;
    out[*index] = arg.value;
  }
  for (std::size_t i = 0; i < op.args.size(); ++i) {
    const ArgDecl& decl = op.args[i];
    if (!given[i]) {
      if (shape_only || (!decl.tensor() && decl.fallback) || (decl.tensor() && decl.optional)) {
        out[i] = decl.tensor() ? 0 : decl.fallback.value_or(0);
        continue;
      }
      throw ArgumentError(fmt::format("{}: argument '{}' ({} {}) is missing", op.name, decl.name, to_string(decl.kind),
                                      decl.tensor() ? to_string(decl.dtype) : "integer"));
    }
    check_scalar_range(op, decl, out[i]);
  }
}

}  // namespace

void bind_args(const OpDeclaration& op, std::span<const NamedArg> named, std::span<std::uint64_t> out) {
  bind(op, named, out, false);
}

void check_values(const OpDeclaration& op, OpArgValues values) {
  check_value_count(op, values.size());
  for (std::size_t i = 0; i < op.args.size(); ++i) {
    check_scalar_range(op, op.args[i], values[i]);
  }
}

void bind_shape(const OpDeclaration& op, std::span<const NamedArg> named, std::span<std::uint64_t> out) {
  bind(op, named, out, true);
}

std::uint64_t given_mask(const OpDeclaration& op, std::span<const NamedArg> named) {
  std::uint64_t mask = 0;
  for (const NamedArg& arg : named) {
    if (const auto index = op.arg_index(arg.name); index && *index < kMaxArgs) {
      mask |= std::uint64_t{1} << *index;
    }
  }
  return mask;
}

void check_value_count(const OpDeclaration& op, std::size_t count) {
  if (count != op.args.size()) {
    throw ArgumentError(
        fmt::format("{}: {} argument values for {} declared arguments", op.name, count, op.args.size()));
  }
}

}  // namespace metrale::ops
