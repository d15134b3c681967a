// op_aliasing.cpp: an op call's outputs may not overlap its inputs or each other (byte ranges
// from each tensor's declared dims and dtype, a strided tensor's last row its dense length), unless the output is
// declared in place of that input (ArgDecl::in_place_of) and starts where it starts. Checked by run_op, so every call
// by name, by value list, through the C ABI, Python, prepare and the checks meets the same rule. Invariants: no
// allocation; a tensor left out (address 0), of no declared dims, or whose extent overflows 64 bits (the op's own shape
// rules refuse that shape by name) is not compared.
#include <fmt/format.h>

#include <array>
#include <optional>
#include <string_view>

#include "metrale/error.hpp"
#include "metrale/ops/op_declaration.hpp"

namespace metrale::ops {
namespace {

std::optional<std::uint64_t> number(std::string_view text) {
  if (text.empty()) {
    return std::nullopt;
  }
  std::uint64_t value = 0;
  for (const char c : text) {
    if (c < '0' || c > '9' || value > (UINT64_MAX - 9) / 10) {
      return std::nullopt;
    }
    value = value * 10 + static_cast<std::uint64_t>(c - '0');
  }
  return value;
}

// A dim's value: a number, a scalar's value (its zero_means when 0), or "scalar/N".
std::optional<std::uint64_t> dim_value(const OpDeclaration& op, OpArgValues values, std::string_view dim,
                                       int depth = 0) {
  if (const auto literal = number(dim)) {
    return literal;
  }
  std::uint64_t divisor = 1;
  if (const auto slash = dim.find('/'); slash != std::string_view::npos) {
    const auto parsed = number(dim.substr(slash + 1));
    if (!parsed || *parsed == 0) {
      return std::nullopt;
    }
    divisor = *parsed;
    dim = dim.substr(0, slash);
  }
  const auto index = op.arg_index(dim);
  if (!index || *index >= values.size()) {
    return std::nullopt;
  }
  std::uint64_t value = values[*index];
  const std::string& zero_means = op.args[*index].zero_means;
  if (value == 0 && !zero_means.empty() && depth < 4) {
    const auto meant = dim_value(op, values, zero_means, depth + 1);
    if (!meant) {
      return std::nullopt;
    }
    value = *meant;
  }
  return value / divisor;
}

// [start, end) of tensor `i`; nullopt when it is not compared (see the header).
struct Range {
  std::uint64_t start;
  std::uint64_t end;
};
std::optional<Range> range_of(const OpDeclaration& op, OpArgValues values, std::size_t i) {
  const ArgDecl& arg = op.args[i];
  if (values[i] == 0 || arg.dims.empty()) {
    return std::nullopt;
  }
  // Elements: the outer dims' product times the innermost; when the innermost is a row stride (a
  // scalar whose 0 means a dense row length: x_row_stride's "k"), the last row holds only that
  // length, so a tensor read as halves of wider rows ends where its last row does.
  std::uint64_t outer = 1;
  for (std::size_t d = 0; d + 1 < arg.dims.size(); ++d) {
    const auto extent = dim_value(op, values, arg.dims[d]);
    if (!extent || (*extent != 0 && outer > UINT64_MAX / *extent)) {
      return std::nullopt;
    }
    outer *= *extent;
  }
  const std::string& last = arg.dims.back();
  const auto inner = dim_value(op, values, last);
  if (!inner || (*inner != 0 && outer > UINT64_MAX / *inner)) {
    return std::nullopt;
  }
  std::uint64_t elements = outer * *inner;
  const auto stride = arg.dims.size() > 1 ? op.arg_index(last) : std::nullopt;
  if (stride && !op.args[*stride].zero_means.empty() && outer != 0) {
    const auto row = dim_value(op, values, op.args[*stride].zero_means);
    if (!row || *row > UINT64_MAX - (outer - 1) * *inner) {
      return std::nullopt;
    }
    elements = (outer - 1) * *inner + *row;
  }
  const std::uint64_t size = dtype_bytes(arg.dtype);
  if (elements > UINT64_MAX / size || elements * size > UINT64_MAX - values[i]) {
    return std::nullopt;
  }
  return Range{values[i], values[i] + elements * size};
}

}  // namespace

void check_no_aliasing(const OpDeclaration& op, OpArgValues values) {
  if (values.size() != op.args.size() || values.size() > kMaxArgs) {
    return;  // the callers refuse a wrong count by name first
  }
  // Each tensor's range once (the pairs below only compare them): this runs on every op call.
  std::array<std::optional<Range>, kMaxArgs> ranges;
  for (std::size_t i = 0; i < op.args.size(); ++i) {
    if (op.args[i].tensor()) {
      ranges[i] = range_of(op, values, i);
    }
  }
  for (std::size_t out = 0; out < op.args.size(); ++out) {
    const ArgDecl& output = op.args[out];
    const std::optional<Range>& written = ranges[out];
    if (output.kind != ArgKind::kOutput || !written || written->start == written->end) {
      continue;
    }
    for (std::size_t other = 0; other < op.args.size(); ++other) {
      const ArgDecl& read = op.args[other];
      // Each pair of outputs once; every input against every output.
      if (other == out || read.kind == ArgKind::kScalar || (read.kind == ArgKind::kOutput && other < out)) {
        continue;
      }
      const std::optional<Range>& seen = ranges[other];
      if (!seen || seen->start == seen->end || seen->end <= written->start || written->end <= seen->start) {
        continue;
      }
      if (read.kind == ArgKind::kInput && output.in_place_of == read.name && seen->start == written->start) {
        continue;  // declared in place: the output is the input, from its first byte
      }
      // A shape run refuses is named by its own rule first (its extents may be what overlaps);
      // only the path that refuses pays for this.
      if (op.shape_rules) {
        op.shape_rules(values);
      }
      throw ArgumentError(fmt::format(
          "{}: output '{}' [{:#x}, {:#x}) overlaps {} '{}' [{:#x}, {:#x}): an output may not share bytes with {} "
          "(only an output declared in place of an input, at the same address, may)",
          op.name, output.name, written->start, written->end, to_string(read.kind), read.name, seen->start, seen->end,
          read.kind == ArgKind::kInput ? "an input it reads" : "another output"));
    }
  }
}

}  // namespace metrale::ops
