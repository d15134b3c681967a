// op_aliasing.cpp: an op call's outputs may not overlap its inputs or each other (byte ranges
// from each tensor's declared dims and dtype, a strided tensor's last row its dense length, a column-major one in
// columns of its column stride), unless the output is
// declared in place of that input (ArgDecl::in_place_of) and starts where it starts. Checked by run_op, so every call
// by name, by value list, through the C ABI, Python, prepare and the checks meets the same rule. Invariants: no
// allocation and no name lookup per call for a declaration an OpSet holds (its ExtentPlan resolves every dim to an
// argument index once); a tensor left out (address 0), of no declared dims, or whose extent overflows 64 bits (the
// op's own shape rules refuse that shape by name) is not compared.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <limits>
#include <optional>
#include <string_view>
#include <vector>

#include "metrale/error.hpp"
#include "metrale/ops/op_declaration.hpp"

namespace metrale::ops {

// One dim resolved: a number, or an argument's value (its zero_means when 0) divided by `divisor`.
struct DimRef {
  static constexpr std::uint32_t kLiteral = std::numeric_limits<std::uint32_t>::max();
  std::uint32_t arg = kLiteral;
  std::uint64_t value = 0;  // the literal, when arg == kLiteral
  std::uint64_t divisor = 1;
  bool valid = true;  // false: a dim the declaration checks refuse (never compared)
};

struct TensorExtent {
  std::vector<DimRef> dims;
  std::optional<DimRef> last_row;  // the innermost dim is a row stride whose 0 means this dense length
  // A tensor that may be column-major (ArgDecl::layout_by): the selector and the column stride.
  std::optional<DimRef> column_major_by;
  std::optional<DimRef> column_stride;
  std::uint64_t element_bytes = 1;  // the dtype's size, looked up once
};

// One pair the call compares: output `out` against tensor `other` (an input, or a later output).
struct OverlapPair {
  std::uint32_t out;
  std::uint32_t other;
  bool in_place;  // `out` is declared in place of input `other`: the same start is allowed
};

struct ExtentPlan {
  std::vector<TensorExtent> tensors;              // one per argument (empty dims for a scalar)
  std::vector<std::optional<DimRef>> zero_means;  // per scalar: what its 0 stands for
  std::vector<std::uint32_t> tensor_args;         // the indices of the tensors with declared dims
  std::vector<OverlapPair> pairs;                 // every pair a call compares, outputs first
};

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

// A dim's text ("m", "128", "k/128") resolved against the declaration.
DimRef resolve_dim(const OpDeclaration& op, std::string_view dim) {
  DimRef ref;
  if (const auto literal = number(dim)) {
    ref.value = *literal;
    return ref;
  }
  if (const auto slash = dim.find('/'); slash != std::string_view::npos) {
    const auto parsed = number(dim.substr(slash + 1));
    if (!parsed || *parsed == 0) {
      ref.valid = false;
      return ref;
    }
    ref.divisor = *parsed;
    dim = dim.substr(0, slash);
  }
  const auto index = op.arg_index(dim);
  if (!index) {
    ref.valid = false;
    return ref;
  }
  ref.arg = static_cast<std::uint32_t>(*index);
  return ref;
}

std::optional<std::uint64_t> dim_value(const ExtentPlan& plan, OpArgValues values, const DimRef& dim, int depth = 0) {
  if (!dim.valid) {
    return std::nullopt;
  }
  if (dim.arg == DimRef::kLiteral) {
    return dim.value;
  }
  if (dim.arg >= values.size()) {
    return std::nullopt;
  }
  std::uint64_t value = values[dim.arg];
  if (value == 0 && plan.zero_means[dim.arg] && depth < 4) {
    const auto meant = dim_value(plan, values, *plan.zero_means[dim.arg], depth + 1);
    if (!meant) {
      return std::nullopt;
    }
    value = *meant;
  }
  return value / dim.divisor;
}

// The elements of a tensor that may be column-major ([r, c] as c columns of column_stride, the
// last one holding r), when its selector says it is at this call; nullopt when it is row-major;
// 0 when its extent is one the op's rules refuse (a stride short of r, an overflow): not compared.
// Apart from range_of, so the path every other tensor takes stays as short as it was.
[[gnu::noinline]] std::optional<std::uint64_t> column_major_elements(const ExtentPlan& plan, OpArgValues values,
                                                                     const TensorExtent& extent, std::uint64_t rows,
                                                                     std::uint64_t columns) {
  if (dim_value(plan, values, *extent.column_major_by) != 1) {
    return std::nullopt;
  }
  if (rows == 0 || columns == 0) {
    return 0;
  }
  const auto stride = dim_value(plan, values, *extent.column_stride);
  if (!stride || *stride < rows || *stride > (UINT64_MAX - rows) / columns) {
    return 0;
  }
  return (columns - 1) * *stride + rows;
}

// [start, end) of tensor `i`; nullopt when it is not compared (see the header).
struct Range {
  std::uint64_t start;
  std::uint64_t end;
};
std::optional<Range> range_of(const ExtentPlan& plan, OpArgValues values, std::size_t i) {
  const TensorExtent& extent = plan.tensors[i];
  if (values[i] == 0 || extent.dims.empty()) {
    return std::nullopt;
  }
  // Elements: the outer dims' product times the innermost; when the innermost is a row stride (a
  // scalar whose 0 means a dense row length: x_row_stride's "k"), the last row holds only that
  // length, so a tensor read as halves of wider rows ends where its last row does.
  std::uint64_t outer = 1;
  for (std::size_t d = 0; d + 1 < extent.dims.size(); ++d) {
    const auto size = dim_value(plan, values, extent.dims[d]);
    if (!size || (*size != 0 && outer > UINT64_MAX / *size)) {
      return std::nullopt;
    }
    outer *= *size;
  }
  const auto inner = dim_value(plan, values, extent.dims.back());
  if (!inner || (*inner != 0 && outer > UINT64_MAX / *inner)) {
    return std::nullopt;
  }
  std::uint64_t elements = outer * *inner;
  if (extent.column_major_by) [[unlikely]] {
    if (const auto column_major = column_major_elements(plan, values, extent, outer, *inner)) {
      if (*column_major == 0) {
        return std::nullopt;
      }
      elements = *column_major;
    }
  } else if (extent.last_row && outer != 0) {
    const auto row = dim_value(plan, values, *extent.last_row);
    if (!row || *row > UINT64_MAX - (outer - 1) * *inner) {
      return std::nullopt;
    }
    elements = (outer - 1) * *inner + *row;
  }
  const std::uint64_t size = extent.element_bytes;
  if (elements > UINT64_MAX / size || elements * size > UINT64_MAX - values[i]) {
    return std::nullopt;
  }
  return Range{values[i], values[i] + elements * size};
}

}  // namespace

std::shared_ptr<const ExtentPlan> make_extent_plan(const OpDeclaration& op) {
  auto plan = std::make_shared<ExtentPlan>();
  plan->tensors.resize(op.args.size());
  plan->zero_means.resize(op.args.size());
  for (std::size_t i = 0; i < op.args.size(); ++i) {
    const ArgDecl& arg = op.args[i];
    if (!arg.tensor() && !arg.zero_means.empty()) {
      plan->zero_means[i] = resolve_dim(op, arg.zero_means);
    }
  }
  for (std::size_t i = 0; i < op.args.size(); ++i) {
    const ArgDecl& arg = op.args[i];
    if (!arg.tensor()) {
      continue;
    }
    TensorExtent& extent = plan->tensors[i];
    extent.element_bytes = std::max<std::uint64_t>(dtype_bytes(arg.dtype), 1);
    for (const std::string& dim : arg.dims) {
      extent.dims.push_back(resolve_dim(op, dim));
    }
    if (arg.dims.size() > 1) {
      if (const auto stride = op.arg_index(arg.dims.back()); stride && plan->zero_means[*stride]) {
        extent.last_row = plan->zero_means[*stride];
      }
    }
    if (!arg.layout_by.empty()) {
      extent.column_major_by = resolve_dim(op, arg.layout_by);
      extent.column_stride = resolve_dim(op, arg.column_stride);
    }
    if (!extent.dims.empty()) {
      plan->tensor_args.push_back(static_cast<std::uint32_t>(i));
    }
  }
  // Each pair of outputs once; every input against every output.
  for (std::size_t out = 0; out < op.args.size(); ++out) {
    if (op.args[out].kind != ArgKind::kOutput || plan->tensors[out].dims.empty()) {
      continue;
    }
    for (std::size_t other = 0; other < op.args.size(); ++other) {
      const ArgDecl& read = op.args[other];
      if (other == out || read.kind == ArgKind::kScalar || plan->tensors[other].dims.empty() ||
          (read.kind == ArgKind::kOutput && other < out)) {
        continue;
      }
      const bool in_place = read.kind == ArgKind::kInput && op.args[out].in_place_of == read.name;
      plan->pairs.push_back(OverlapPair{static_cast<std::uint32_t>(out), static_cast<std::uint32_t>(other), in_place});
    }
  }
  return plan;
}

void check_no_aliasing(const OpDeclaration& op, OpArgValues values) {
  if (values.size() != op.args.size() || values.size() > kMaxArgs) {
    return;  // the callers refuse a wrong count by name first
  }
  // A declaration no OpSet holds (a test's, built by hand) resolves its plan here; one an OpSet
  // holds is read through a plain pointer (no reference count touched per call).
  const ExtentPlan* plan = op.extent_plan.get();
  std::shared_ptr<const ExtentPlan> resolved;
  if (plan == nullptr || plan->tensors.size() != op.args.size()) {
    resolved = make_extent_plan(op);
    plan = resolved.get();
  }
  // Each tensor's range once (the pairs below only compare them): this runs on every op call.
  // Bit i of `compared`: ranges[i] holds tensor i's range (left uninitialised otherwise).
  std::array<Range, kMaxArgs> ranges;  // NOLINT(cppcoreguidelines-pro-type-member-init): read only where set
  std::uint64_t compared = 0;
  for (const std::uint32_t i : plan->tensor_args) {
    if (const std::optional<Range> range = range_of(*plan, values, i); range && range->start != range->end) {
      ranges[i] = *range;
      compared |= std::uint64_t{1} << i;
    }
  }
  for (const OverlapPair& pair : plan->pairs) {
    if ((compared >> pair.out & 1U) == 0 || (compared >> pair.other & 1U) == 0) {
      continue;
    }
    const Range& written = ranges[pair.out];
    const Range& seen = ranges[pair.other];
    if (seen.end <= written.start || written.end <= seen.start) {
      continue;
    }
    if (pair.in_place && seen.start == written.start) {
      continue;  // declared in place: the output is the input, from its first byte
    }
    // A shape run refuses is named by its own rule first (its extents may be what overlaps);
    // only the path that refuses pays for this.
    if (op.shape_rules) {
      op.shape_rules(values);
    }
    const ArgDecl& output = op.args[pair.out];
    const ArgDecl& read = op.args[pair.other];
    throw ArgumentError(fmt::format(
        "{}: output '{}' [{:#x}, {:#x}) overlaps {} '{}' [{:#x}, {:#x}): an output may not share bytes with {} "
        "(only an output declared in place of an input, at the same address, may)",
        op.name, output.name, written.start, written.end, to_string(read.kind), read.name, seen.start, seen.end,
        read.kind == ArgKind::kInput ? "an input it reads" : "another output"));
  }
}

}  // namespace metrale::ops
