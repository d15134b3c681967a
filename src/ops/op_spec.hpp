// ops/op_spec.hpp: an op declared as data (ARCHITECTURE.md, "Engine ops as data"): its
// arguments, its kernels by role (source, name expression, parameters, the kernel's argument order,
// grid and block as expressions) and its guards as ordered {reason, condition} rules. build_op()
// turns one OpSpec into a complete OpDeclaration (run, explain, check) and the kernel declarations
// and sources a runtime needs, so an engine adds an op without writing C++ (a TOML file or Python
// dict reaches the same struct).
// Invariants:
// - every expression is parsed once, in build_op(); a syntax error names the expression and the
//   column, an unknown name names the name and the expression, and the op is refused;
// - run and explain evaluate the same compiled rules over the same slots, so they cannot disagree;
//   the built run allocates nothing per call (the log line of a new outcome aside).
//
// Expressions (src/ops/op_expression.hpp): 64-bit integers; + - * / % (C's truncation), < <= > >=
// == !=, && || ! (0 or 1), c ? a : b, min(a, b), max(a, b), ceil_div(a, b), parentheses. Names:
// each argument by name (a scalar's value with its zero_means applied; a tensor's address), each
// role's `<role>.block`, `<role>.lanes`, `<role>.groups` (the target's entry; 0 when not shipped)
// and `<role>.present` (1 when its kernel can run), `sm_count`, `cc_major`, `cc_minor`, and each
// lever by its [defaults] key (0 or 1). Division by zero and overflow are refused by name.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "metrale/error.hpp"
#include "metrale/ops/op_declaration.hpp"
#include "metrale/target/hardware_target.hpp"

namespace metrale::ops {

// One rule: the condition that must hold (non-zero), and the reason given when it does not.
struct SpecRule {
  std::string reason;  // "fewer than 2 CTAs per SM"
  std::string holds;   // "m >= 2 * sm_count"
};

// A role's kernel as the catalog declares it (KernelDeclaration), with its template's text when
// the op brings its own (empty: `source` names a library template or one the runtime knows).
struct SpecKernel {
  std::string kernel;               // the [kernels] key a target ships it under
  std::string source;               // the template's file name
  std::string source_text;          // its text; empty: an existing template
  std::string expression;           // "ns::kernel<{lanes}, {groups}>"
  std::vector<std::string> params;  // which of "block", "lanes", "groups" a target's entry sets
  bool background = false;          // may arrive after the runtime opens (a twin)
};

struct SpecRole {
  std::string role;  // "parent" first, then the guarded roles in the order the guards speak
  std::vector<std::string> aliases;
  std::string doc;
  SpecKernel kernel;
  // The kernel's parameters in order: a tensor argument's name (its address, 8 bytes) or an
  // expression (a 32-bit unsigned value; outside [0, 2^32) is refused).
  std::vector<std::string> kernel_args;
  std::array<std::string, 3> grid{"1", "1", "1"};
  std::array<std::string, 3> block{"1", "1", "1"};
  // A non-parent role's lever ([defaults] key; env var: METRALE_ + the key in capitals unless
  // given); it is readable by name in the guard, which decides what it means.
  std::string lever;
  std::string lever_env;
  std::string lever_doc;
  // The guard, in order: the first rule that does not hold is the verdict's reason. A role whose
  // rules all hold runs when its kernel is present (else "kernel absent ..." is the reason).
  std::vector<SpecRule> guard;
  // The check: nullopt compares every output's bytes with the parent's; a value compares fp32
  // outputs within that relative tolerance and bf16 outputs within that many ulps (others: bytes).
  std::optional<double> tolerance;
};

// One shape the check runs each role at: scalar arguments by name (the others take their fallback).
using SpecShape = std::vector<std::pair<std::string, std::uint64_t>>;

struct OpSpec {
  std::string name;
  std::vector<std::string> aliases;
  std::string summary;
  std::vector<ArgDecl> args;
  // Run's own validation (explain applies it too): every rule must hold, else an ArgumentError
  // "<op>: <reason> (<holds>; m=.. k=..)". Tensors are checked non-null (unless optional) and
  // aligned (ArgDecl::alignment, else the element size) before them.
  std::vector<SpecRule> shape_rules;
  std::vector<SpecRole> roles;
  std::vector<SpecShape> check_shapes;  // empty: the check has nothing to run
};

// What a runtime needs for an op declared as data (RuntimeOptions::ops, ::kernels, ::sources).
struct BuiltOp {
  OpDeclaration op;
  std::vector<KernelDeclaration> kernels;
  std::map<std::string, std::string> sources;  // file name -> text, for the kernels that bring theirs
};

// What build_op refuses a spec with: the message, and the spec's key it is about, as a TOML op file
// spells it ("roles[1].guard[2].holds", "args[2].dims[1]", "shape_rules[0].reason"), so a reader
// of a file can name the file and line.
class SpecError : public ArgumentError {
 public:
  SpecError(const std::string& message, std::string key) : ArgumentError(message), key_(std::move(key)) {}
  [[nodiscard]] const std::string& key() const { return key_; }

 private:
  std::string key_;
};

// The declaration of `spec`. ArgumentError naming the op, the role and the rule for a spec that
// cannot be served: an expression that does not parse or names an unknown name, a kernel argument
// naming nothing, a parent with a guard or a lever, a guarded role without a parent, and what
// check_declaration refuses.
BuiltOp build_op(const OpSpec& spec);

}  // namespace metrale::ops
