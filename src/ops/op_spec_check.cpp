// op_spec_check.cpp: the check of an op declared as data (OpDeclaration::check of build_op): at
// each of the spec's check shapes, each non-parent role forced on random inputs against the
// parent forced on the same inputs, outputs poisoned before each run; bytes equal, or within the
// role's stated tolerance (fp32: relative, bf16: ulps).
// Invariants: the inputs are random (seeded by CheckOptions::seed and the shape), never all zeros;
// each run gets fresh output buffers poisoned with kPoisonFloatBits (fp32) or kPoisonByte, so an
// element one kernel leaves unwritten differs from the other's; a role or parent that cannot run
// here is a skipped row naming why; one that throws (a launch its shape cannot make) a failed row
// naming the error. The parent is the reference: it has no row of its own.
#include <fmt/format.h>

#include <cstring>
#include <memory>
#include <random>

#include "metrale/error.hpp"
#include "ops/op_check_support.hpp"
#include "ops/op_spec_program.hpp"

namespace metrale::ops {
namespace {

using check::Buffer;

// Random bytes for an input of `dtype`: finite bf16 and fp32 in [-4, 4), any byte otherwise.
std::vector<std::uint8_t> random_input(DType dtype, std::size_t elements, std::mt19937_64& rng) {
  std::vector<std::uint8_t> bytes(elements * dtype_bytes(dtype));
  std::uniform_real_distribution<float> real(-4.0F, 4.0F);
  for (std::size_t i = 0; i < elements; ++i) {
    if (dtype == DType::kBf16 || dtype == DType::kFp32) {
      const float value = real(rng);
      std::uint32_t bits = 0;
      std::memcpy(&bits, &value, sizeof bits);
      if (dtype == DType::kFp32) {
        std::memcpy(&bytes[i * 4], &bits, 4);
      } else {
        const auto high = static_cast<std::uint16_t>(bits >> 16U);
        std::memcpy(&bytes[i * 2], &high, 2);
      }
    } else {
      for (std::uint32_t b = 0; b < dtype_bytes(dtype); ++b) {
        bytes[i * dtype_bytes(dtype) + b] = static_cast<std::uint8_t>(rng());
      }
    }
  }
  return bytes;
}

std::vector<std::uint8_t> poisoned(DType dtype, std::size_t elements) {
  std::vector<std::uint8_t> bytes(elements * dtype_bytes(dtype), check::kPoisonByte);
  if (dtype == DType::kFp32) {
    const std::vector<float> floats = check::poisoned_floats(elements);
    std::memcpy(bytes.data(), floats.data(), bytes.size());
  }
  return bytes;
}

// One check shape resolved: the scalars' values (declaration order) and each tensor's extent.
struct Problem {
  std::vector<std::uint64_t> values;
  std::vector<std::size_t> elements;  // per argument (0 for scalars)
  std::vector<std::size_t> cols;      // a tensor's last extent (element names)
};

Problem resolve(const SpecProgram& program, const SpecShape& shape) {
  Problem problem;
  problem.values.assign(program.args.size(), 0);
  for (std::size_t i = 0; i < program.args.size(); ++i) {
    problem.values[i] = program.args[i].fallback.value_or(0);
  }
  for (const auto& [name, value] : shape) {
    const auto index = program.names.find(name);
    if (!index || *index >= program.args.size() || program.args[*index].tensor()) {
      throw ArgumentError(fmt::format("{}: check shape names '{}', which is no scalar argument", program.op, name));
    }
    problem.values[*index] = value;
  }
  SpecSlots slots{};
  fill_arg_slots(program, problem.values, slots);
  problem.elements.assign(program.args.size(), 0);
  problem.cols.assign(program.args.size(), 0);
  for (std::size_t i = 0; i < program.args.size(); ++i) {
    if (!program.args[i].tensor()) {
      continue;
    }
    std::size_t count = 1;
    for (const Expr& dim : program.dims[i]) {
      const ExprResult extent = dim.evaluate(slots);
      if (!extent.ok() || extent.value < 0) {
        throw ArgumentError(fmt::format("{}: check shape: {}'s dim '{}' is {}", program.op, program.args[i].name,
                                        dim.text(), extent.ok() ? "negative" : to_string(extent.fault)));
      }
      count *= static_cast<std::size_t>(extent.value);
      problem.cols[i] = static_cast<std::size_t>(extent.value);
    }
    problem.elements[i] = program.dims[i].empty() ? 1 : count;
  }
  return problem;
}

using Outputs = std::vector<std::vector<std::uint8_t>>;  // per argument (empty for non-outputs)

// Runs `role` forced over the uploaded inputs with fresh poisoned outputs; the outputs' bytes.
Outputs run_role(const SpecProgram& program, const OpContext& context, std::string_view role, const Problem& problem,
                 const std::vector<std::unique_ptr<Buffer>>& inputs, std::uint64_t stream, double& ms) {
  std::vector<std::unique_ptr<Buffer>> outputs(program.args.size());
  std::vector<NamedArg> named;
  for (std::size_t i = 0; i < program.args.size(); ++i) {
    const ArgDecl& arg = program.args[i];
    if (arg.kind == ArgKind::kOutput) {
      outputs[i] = std::make_unique<Buffer>(*context.gpu, stream, poisoned(arg.dtype, problem.elements[i]));
      named.push_back({arg.name, outputs[i]->address()});
    } else if (arg.kind == ArgKind::kInput) {
      named.push_back({arg.name, inputs[i]->address()});
    } else {
      named.push_back({arg.name, problem.values[i]});
    }
  }
  ms += check::run_forced(context, role, named, stream);
  Outputs out(program.args.size());
  for (std::size_t i = 0; i < program.args.size(); ++i) {
    if (outputs[i]) {
      out[i] = outputs[i]->download<std::uint8_t>();
    }
  }
  return out;
}

template <typename T>
std::span<const T> as(const std::vector<std::uint8_t>& bytes) {
  return {reinterpret_cast<const T*>(bytes.data()), bytes.size() / sizeof(T)};  // NOLINT: the buffer's own type
}

// One output of `role` against the parent's: bytes, or the role's tolerance for fp32 / bf16.
void compare_output(CheckResult& result, const CompiledRole& role, const ArgDecl& arg,
                    const std::vector<std::uint8_t>& got, const std::vector<std::uint8_t>& want, std::size_t cols) {
  if (role.tolerance && arg.dtype == DType::kFp32) {
    check::compare_relative(result, arg.name, as<float>(got), as<float>(want), cols, *role.tolerance);
  } else if (role.tolerance && arg.dtype == DType::kBf16) {
    check::compare_bf16_ulps(result, arg.name, as<std::uint16_t>(got), as<std::uint16_t>(want), cols,
                             static_cast<std::uint32_t>(*role.tolerance), "the parent");
  } else if (arg.dtype == DType::kFp32) {
    check::compare_bytes<float>(result, arg.name, as<float>(got), as<float>(want), cols, "the parent");
  } else {
    check::compare_bytes<std::uint8_t>(result, arg.name, got, want, cols * dtype_bytes(arg.dtype), "the parent");
  }
}

std::string check_text(const CompiledRole& role) {
  return role.tolerance
             ? fmt::format("within {} of the parent (fp32 relative, bf16 ulps; others bytes)", *role.tolerance)
             : "bytes == parent";
}

}  // namespace

std::vector<CheckResult> spec_check(const std::shared_ptr<const SpecProgram>& program, const OpContext& context,
                                    const CheckOptions& options) {
  std::vector<CheckResult> rows;
  const std::string_view parent = context.kernels[0].role;
  for (std::size_t s = 0; s < program->check_shapes.size(); ++s) {
    const Problem problem = resolve(*program, program->check_shapes[s]);
    const std::string shape = describe_scalars(*program, problem.values);
    std::mt19937_64 rng(options.seed + s);
    std::vector<std::unique_ptr<Buffer>> inputs(program->args.size());
    for (std::size_t r = 1; r < program->roles.size(); ++r) {
      const CompiledRole& role = *program->roles[r];
      if (!options.role.empty() && options.role != role.role) {
        continue;
      }
      CheckResult row = check::result_for(context, role.role, shape, check_text(role));
      auto skipped = check::why_skipped(context, role.role);
      if (!skipped) {
        skipped = check::why_skipped(context, parent);
      }
      if (skipped) {
        row.worst = *skipped;
        rows.push_back(std::move(row));
        continue;
      }
      for (std::size_t i = 0; i < program->args.size(); ++i) {
        if (program->args[i].kind == ArgKind::kInput && !inputs[i]) {
          inputs[i] = std::make_unique<Buffer>(*context.gpu, options.stream,
                                               random_input(program->args[i].dtype, problem.elements[i], rng));
        }
      }
      double parent_ms = 0;
      Outputs want;
      Outputs got;
      try {
        want = run_role(*program, context, parent, problem, inputs, options.stream, parent_ms);
        got = run_role(*program, context, role.role, problem, inputs, options.stream, row.ms);
      } catch (const Error& error) {  // a declaration its shapes cannot launch fails, naming why
        row.verdict = CheckVerdict::kFailed;
        row.worst = error.what();
        rows.push_back(std::move(row));
        continue;
      }
      std::string passed;
      row.verdict = CheckVerdict::kPassed;
      for (std::size_t i = 0; i < program->args.size() && row.verdict == CheckVerdict::kPassed; ++i) {
        if (program->args[i].kind != ArgKind::kOutput) {
          continue;
        }
        compare_output(row, role, program->args[i], got[i], want[i], problem.cols[i]);
        passed += (passed.empty() ? "" : "; ") + row.worst;
      }
      if (row.verdict == CheckVerdict::kPassed) {
        row.worst = passed;
      }
      rows.push_back(std::move(row));
    }
  }
  return rows;
}

}  // namespace metrale::ops
