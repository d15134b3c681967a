// metrale/ops/op_declaration.hpp: an op as data. One OpDeclaration says everything the layers
// above the JIT need to know about an op: its kernels by role, its levers, its arguments and
// their rules, how it runs (validate, guard, pick, log once, launch) and how it explains a
// shape. The runtime, the C ABI, the bindings and the CLI are written against this type alone,
// so the library's ops and an engine's ops reach every surface the same way (ARCHITECTURE.md).
// Invariants:
// - names (the op's, its aliases, its roles', its arguments') are unique within their scope and
//   non-empty (check_declaration);
// - an op call's arguments arrive as one value per declared argument, in declaration order
//   (OpArgValues): pointers as addresses, scalars as unsigned integers already range-checked
//   against the declaration, so an op's own `run` only checks the rules between arguments;
// - a Pick's strings view the declaration or static text, so it lives as long as the op set.
// Past ~400 lines: the one type an engine declares an op with and the types its parts are made
// of (arguments, roles, guards, shape constants, the call, its pick, explain and check results,
// the op set), each documented where it is declared: one contract, read together.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "metrale/gpu/device_handles.hpp"
#include "metrale/gpu/gpu_backend.hpp"
#include "metrale/gpu/kernel_params.hpp"
#include "metrale/target/hardware_target.hpp"
#include "metrale/target/levers.hpp"

namespace metrale::ops {

// Element types of an op's tensors.
enum class DType : std::uint8_t { kBf16, kFp32, kE4m3, kU8, kU16, kI32, kU32 };
// "bf16", "fp32", "e4m3", "u8", "u16", "i32", "u32".
std::string_view to_string(DType dtype);
std::uint32_t dtype_bytes(DType dtype);

enum class ArgKind : std::uint8_t {
  kInput,   // a device tensor the op reads
  kOutput,  // a device tensor the op writes
  kScalar,  // an unsigned integer (a size, a stride, an enum's value)
};
std::string_view to_string(ArgKind kind);

// One argument. A tensor's `dims` name the scalar arguments (or numbers, or "name/N") its
// extents are, outermost first, so a caller holding arrays (the CLI's .npy files, Python) can
// fill the sizes from the shapes and check them; the op's own checks stay the authority.
struct ArgDecl {
  std::string name;
  ArgKind kind = ArgKind::kScalar;
  DType dtype = DType::kU32;
  std::uint32_t alignment = 0;    // tensors: the address's alignment in bytes (0: the element size)
  std::vector<std::string> dims;  // tensors: {"m", "k_stride"}; empty: any
  std::uint64_t min = 0;          // scalars: the closed range a value must lie in
  std::uint64_t max = UINT32_MAX;
  std::optional<std::uint64_t> fallback;  // scalars: the value when not given; nullopt: required
  bool optional = false;                  // tensors: may be left out (0), the op then does without
  // Scalars: the dim a value of 0 stands for ("k" for a row stride, "n/2"); empty: 0 is 0. Lets a
  // caller holding arrays size an output whose dims name a defaulted stride, and take a dense
  // size from a stride it filled from a shape.
  std::string zero_means;
  // Outputs: the input (by name) this output overwrites in place; it may then start at that
  // input's address. Empty: the output may share no byte with any input or other output.
  std::string in_place_of;
  // Scalars: a value must be a multiple of this (0: any). A caller allocating for a defaulted
  // value rounds up to it (m_aligned: a multiple of 4).
  std::uint64_t multiple_of = 0;
  // 2-D tensors [r, c] that may be stored column-major: `layout_by` names a scalar in [0, 1]
  // (1: column-major, element [i][j] at j * column_stride + i) and `column_stride` the scalar
  // giving that stride in elements (>= r). Both empty: row-major only.
  std::string layout_by;
  std::string column_stride;
  std::string doc;  // one line

  [[nodiscard]] bool tensor() const { return kind != ArgKind::kScalar; }
  // The declaration with zero_means set (scalar_arg(...).with_zero_means("k")).
  [[nodiscard]] ArgDecl with_zero_means(std::string dim) && {
    zero_means = std::move(dim);
    return std::move(*this);
  }
  // The declaration with a multiple_of rule (scalar_arg(...).with_multiple_of(4)).
  [[nodiscard]] ArgDecl with_multiple_of(std::uint64_t factor) && {
    multiple_of = factor;
    return std::move(*this);
  }
  // The declaration of a tensor that may be column-major (tensor_arg(...).with_column_major(
  // "scale_layout", "m_aligned")).
  [[nodiscard]] ArgDecl with_column_major(std::string selector, std::string stride) && {
    layout_by = std::move(selector);
    column_stride = std::move(stride);
    return std::move(*this);
  }
  // The declaration of a tensor a call may leave out (tensor_arg(...).as_optional()).
  [[nodiscard]] ArgDecl as_optional() && {
    optional = true;
    return std::move(*this);
  }
  // The declaration of an output that overwrites `input` in place (tensor_arg(...).with_in_place_of(
  // "residual")).
  [[nodiscard]] ArgDecl with_in_place_of(std::string input) && {
    in_place_of = std::move(input);
    return std::move(*this);
  }
};

// One kernel an op may run, by role: "parent", "twin", "tensor_core", ... Roles are names the
// op chooses; `aliases` are other spellings a caller may force it by ("shared", "mma").
struct RoleDecl {
  std::string role;
  std::string kernel;  // the [kernels] key a target ships it under
  std::vector<std::string> aliases;
  std::string doc;
  std::string lever;  // the [defaults] key of the lever that asks for it; empty: none (a parent)
};

// One role's guard as a table: every reason the guard can refuse the role with, in the guard's
// table order (which is also each reason's log slot: one per reason, then the role's own).
// Explain's and a pick's reasons for the role are drawn from it.
struct GuardDecl {
  std::string role;
  std::vector<std::string> reasons;
  // The reason the guard refuses the role with below its M threshold, the one threshold a tuning
  // table may set (README "Tuning tables"); empty: the guard has no M threshold to tune. It must be
  // one of `reasons`.
  std::string tuned_reason{};
};

// What a shape constant's rule makes of one value: the template argument of the role's
// specialised variant (KernelParams::shape), or 0 and why the value stays on the generic form.
struct ShapeChoice {
  std::uint32_t shape = 0;
  std::string_view refusal;  // static text; empty when shape != 0
};

// An argument a role's kernel can take as a compile-time constant. The first call that meets a
// new value asks the registry for the specialised variant in the background and runs the generic
// kernel meanwhile; later calls take the specialised one once it is published. Never during a
// CUDA graph capture (GpuBackend::is_capturing). A target's [shapes] and RuntimeOptions::shapes
// pin values built at open.
struct ShapeConstantDecl {
  std::string role;  // the role whose kernel specialises ("tensor_core")
  std::string arg;   // the scalar argument ("n")
  // Pure: the value's template argument, or 0 with a named reason.
  std::function<ShapeChoice(std::uint64_t)> rule;
};

// The values of one call, one per declared argument in declaration order.
using OpArgValues = std::span<const std::uint64_t>;

// One guard's word on one role: nullopt when that role was taken, else its reason.
struct Verdict {
  std::string_view role;
  std::optional<std::string_view> reason;
};

inline constexpr std::size_t kMaxVerdicts = 4;

// What an op call ran and the ordered verdicts that led there (the first guard first). Holds no
// heap memory: an op call allocates nothing for it.
struct Pick {
  std::string_view op;
  std::string_view role;    // the role that ran
  std::string_view kernel;  // its kernel
  KernelHandle handle;
  bool forced = false;  // the caller named the role
  // The shape constant of the specialised variant that ran (KernelParams::shape, "s6"); 0: the
  // kernel's generic form. Filled by run_op from the context's kernel of that role and handle.
  std::uint32_t shape = 0;
  std::array<Verdict, kMaxVerdicts> verdicts{};
  std::size_t verdict_count = 0;

  void add_verdict(std::string_view verdict_role, std::optional<std::string_view> reason);
  [[nodiscard]] std::span<const Verdict> ordered_verdicts() const { return {verdicts.data(), verdict_count}; }
  // The verdict on `verdict_role`, or nullptr when no guard spoke of it.
  [[nodiscard]] const Verdict* verdict(std::string_view verdict_role) const;
};

// The pick's reason when a forced parent (or another forced kernel a guard would refuse) ran.
inline constexpr std::string_view kForcedKernelReason = "forced by the caller's kernel choice";

// One role's kernel as the runtime holds it at this moment: shipped by the target (params
// from its entry), and its handle (0: absent, still building, failed, or no device).
struct OpKernel {
  std::string_view role;
  std::string_view kernel;
  bool shipped = false;
  KernelParams params;
  KernelHandle handle;
  // Why verification refused this kernel on this device ("failed its check on ..."); empty when it
  // was not refused. A refused kernel's handle is 0, so the guards pass over it as over any absent
  // one; run_op then names this as their reason. Views text the runtime keeps for its lifetime.
  std::string_view refusal;
};

inline constexpr std::size_t kMaxRoles = 8;
inline constexpr std::size_t kMaxLevers = 8;
inline constexpr std::size_t kMaxArgs = 64;

struct OpDeclaration;
struct TuningTable;
// The resolved extents of an op's tensors (op_aliasing.cpp); opaque here.
struct ExtentPlan;
// How `metrale-jit profile` runs the op's kernels (src/ops/op_profile_hook.hpp); opaque here.
struct OpProfile;

// What an op call sees of the runtime: the backend, its kernels by role (in the declaration's
// order, handles read lock-free when the context was made), its levers and the target. Made per
// call by the runtime (OpHost::op_context); copies nothing but a few words.
struct OpContext {
  const OpDeclaration* op = nullptr;
  GpuBackend* gpu = nullptr;  // nullptr: no device
  std::string_view no_device_reason;
  std::string_view target;
  std::uint32_t fallback_sm_count = kFallbackSmCount;   // the target's sm_count, for a device that cannot say
  std::optional<ComputeCapability> compute_capability;  // the target's (what explain uses with no device)
  std::array<OpKernel, kMaxRoles> kernels{};
  std::array<const LeverValue*, kMaxLevers> levers{};  // by the declaration's lever order; nullptr: off
  // The tuning table the runtime accepted for this device (metrale/ops/tuning_table.hpp); nullptr:
  // every guard keeps its prediction.
  const TuningTable* tuning = nullptr;

  // The kernel of `role`; ArgumentError naming the op and its roles when it has none.
  [[nodiscard]] const OpKernel& kernel(std::string_view role) const;
  // The lever's value; false when the runtime does not know it.
  [[nodiscard]] bool lever(std::string_view toml_key) const;
  [[nodiscard]] const LeverValue* lever_value(std::string_view toml_key) const;
  // The device, or BackendError "no device: <reason>".
  [[nodiscard]] GpuBackend& device() const;
  // The role's handle; with no device, a stand-in present when the target ships the kernel
  // (explain then answers for the target, as the CLI does).
  [[nodiscard]] KernelHandle handle_or_shipped(const OpKernel& kernel) const;
  // The SM count a guard sees: the device's, else the target's (at least 1).
  [[nodiscard]] std::uint32_t sm_count() const;
  // The smallest M the tuning table measured `role` beating its parent at (n, k) (n = 0 for an op
  // without one): UINT32_MAX when it won at no M of the ladder; nullopt when there is no table or
  // it has no such row (the guard's prediction stands).
  [[nodiscard]] std::optional<std::uint32_t> tuned_min_m(std::string_view role, std::uint32_t n, std::uint32_t k) const;
};

// How one call is asked for: the values, the stream, and the role the caller forces ("" lets
// the guards pick; a role name or alias already resolved to the role's own name).
struct OpCall {
  OpArgValues args;
  std::uint64_t stream = 0;
  std::string_view forced_role;
};

// explain's answer, per role that has a guard: whether it runs at this shape, why not, the
// lever it answers to, and the smallest M it takes at this shape's other sizes.
inline constexpr std::string_view kMaxMDetail = "max_m";

struct RoleExplanation {
  std::string role;
  std::string kernel;
  bool present = false;  // built (with no device: shipped)
  bool runs = false;
  std::optional<std::string> reject;
  std::string lever;  // its [defaults] key; empty when the role has none
  bool requested = false;
  std::string lever_origin;  // "file: hardware/hopper/HARDWARE.toml"
  // Where min_m's threshold comes from: "tuning table t.toml, row 2 (NVIDIA H200, 2026-12-06; predicted 264)"
  // or "prediction"; empty for a role whose guard has no M threshold.
  std::string threshold_origin;
  std::optional<std::uint32_t> min_m;     // nullopt with min_reason: never at this shape
  std::optional<std::string> min_reason;  // why it never runs at this shape
  // {"tokens_per_tile", 128}, ...; kMaxMDetail: the largest M the role takes (a guard with a
  // ceiling, as the BA decode kernel's), which explain's text shows beside min_m.
  std::vector<std::pair<std::string, std::int64_t>> details;
  std::string note;  // one line for people when it runs ("tiles of 128 tokens, ..."); empty: none
  // Verification's word on the kernel on this device ("passed (cached)", "refused: failed its
  // check on ..."); empty when verification did not run (off, no device). Filled by the runtime.
  std::string verification;
};

struct Explanation {
  std::string op;
  std::string target;
  std::string kernel;  // what a call with this shape runs now
  std::string role;
  std::uint32_t sm_count = 0;  // the SM count the guards used
  std::optional<std::uint32_t> m;
  std::vector<RoleExplanation> roles;  // in guard order: the first guard first
};

// What explain is asked: the shape's values (pointers unset), and whether M was given (without
// it, explain answers the smallest M each guarded role takes).
struct ExplainQuery {
  OpArgValues args;
  bool m_given = false;
  // Bit i: argument i was given (given_mask). A shape that leaves out a required scalar other than
  // M is incomplete: explain answers what it can from it and does not apply run's shape rules; a
  // complete shape is refused exactly as run refuses it.
  std::uint64_t given = ~std::uint64_t{0};
};

// One check of one role at one shape: its output against its parent's bytes (a twin) or a
// reference within a stated bound (a tensor-core kernel), on random inputs, outputs poisoned.
enum class CheckVerdict : std::uint8_t { kPassed, kFailed, kSkipped };
std::string_view to_string(CheckVerdict verdict);  // "passed", "failed", "skipped"

struct CheckResult {
  std::string role;
  std::string kernel;
  std::string shape;  // "M=264 N=96 K=5120"
  std::string check;  // "bytes == parent", "rel Frobenius < 1e-5 vs float64 reference"
  CheckVerdict verdict = CheckVerdict::kSkipped;
  std::string worst;  // the worst element ("gate[3][17] = 0.412, reference 0.388"), or why skipped
  double ms = 0;
};

struct CheckOptions {
  bool full_shapes = false;  // the production shapes (selftest) instead of small ones
  std::uint64_t seed = 0x5eed;
  std::string_view role;  // "" every role
  // The stream every copy and launch of the check is ordered on (verification: its own isolated
  // stream, GpuBackend::isolate); 0 the default stream.
  std::uint64_t stream = 0;
};

struct OpDeclaration {
  std::string name;                  // "ssm_ba_gates"
  std::vector<std::string> aliases;  // "ba-gates"
  std::string summary;               // one line
  std::vector<RoleDecl> roles;       // the parent (the kernel that always can run) first
  // The guards' tables, one per guarded role (a role without one: a parent, or an engine's role
  // guarded by a KernelGuard of its own).
  std::vector<GuardDecl> guards;
  std::vector<LeverSpec> levers;
  std::vector<ArgDecl> args;
  std::vector<ShapeConstantDecl> shape_constants;  // empty: every kernel is compiled for any shape
  // Validate, guard, pick, log once per slot, launch. Throws ArgumentError (bad arguments),
  // KernelChoiceError (a forced role the target did not build) and BackendError (no device, or
  // no kernel can run).
  std::function<Pick(const OpContext&, const OpCall&)> run;
  // The pick for a shape without launching; empty when the op has nothing to explain.
  std::function<Explanation(const OpContext&, const ExplainQuery&)> explain;
  // The argument rules run applies (its own validation, called with stand-in tensor addresses:
  // aligned, distinct, never read), so explain_op refuses exactly the shapes run refuses, with
  // run's message. Empty: explain checks only the declared ranges.
  std::function<void(OpArgValues)> shape_rules;
  // Derived, not declared: each tensor's extent with its dims resolved to argument indices, so the
  // aliasing check on every call looks no name up (make_extent_plan; OpSet::add fills it). Empty:
  // resolved per call. Reset it when `args` change.
  std::shared_ptr<const ExtentPlan> extent_plan;
  // Runs each role (forced) on the context's device at random problems that cover its paths and
  // checks it against the parent or a CPU reference; empty when the op has no check. Verification
  // on the host backend calls it in a child process (runtime/check_in_child.hpp): it must not wait
  // for the caller's other threads, and what it changes outside its rows stays in that process.
  std::function<std::vector<CheckResult>(const OpContext&, const CheckOptions&)> check;
  // The profile's hook: the op's kernels in row order, its compulsory bytes, its buffers and
  // launches at a shape (src/ops/op_profile_hook.hpp). Null: the profile cannot price the op.
  std::shared_ptr<const OpProfile> profile;

  // The index of the argument, role or lever of that name; nullopt when there is none.
  [[nodiscard]] std::optional<std::size_t> arg_index(std::string_view arg) const;
  [[nodiscard]] std::optional<std::size_t> role_index(std::string_view role_or_alias) const;
  [[nodiscard]] std::optional<std::size_t> lever_index(std::string_view toml_key) const;
  // The guard table of `role` (its own name), or nullptr when it has none.
  [[nodiscard]] const GuardDecl* guard(std::string_view role) const;
  // Whether `name` is this op's name or one of its aliases.
  [[nodiscard]] bool answers_to(std::string_view name) const;
};

// Declaration helpers: a tensor argument, and a scalar (nullopt fallback: required).
ArgDecl tensor_arg(std::string name, ArgKind kind, DType dtype, std::uint32_t alignment, std::vector<std::string> dims,
                   std::string doc);
ArgDecl scalar_arg(std::string name, std::optional<std::uint64_t> fallback, std::uint64_t max, std::string doc);

// A role's row of an explanation before its guard speaks: kernel, presence, its lever's value and
// where that came from.
RoleExplanation explain_role(const OpContext& context, std::string_view role, std::string_view lever);

// ArgumentError naming the op and the rule for a declaration the surfaces cannot serve: empty
// or repeated names, no roles, more roles, levers or arguments than an OpContext holds, no run, a tensor
// dim or a scalar's zero_means naming no scalar, a scalar whose fallback lies outside its range.
void check_declaration(const OpDeclaration& op);

// The ops a runtime serves, found by name or alias: the library's (library_ops()) and an
// engine's, equal in every surface. add() checks the declaration and refuses a name or alias
// another op already answers to (ArgumentError naming both).
class OpSet {
 public:
  void add(OpDeclaration op);
  [[nodiscard]] const OpDeclaration* find(std::string_view name_or_alias) const;
  // find(), or KernelChoiceError "no op named X (known: a, b, ...)".
  [[nodiscard]] const OpDeclaration& get(std::string_view name_or_alias) const;
  [[nodiscard]] const std::vector<OpDeclaration>& ops() const { return ops_; }
  [[nodiscard]] std::vector<std::string> names() const;  // declaration order
  // Every lever of every op, each key once, in declaration order.
  [[nodiscard]] std::vector<LeverSpec> levers() const;

 private:
  std::vector<OpDeclaration> ops_;
};

// The library's own ops (ssm_ba_gates, fp8_act_quant, ...), declared once per process.
const OpSet& library_ops();

// One argument of a call by name, as the C ABI, the bindings and the CLI pass it.
struct NamedArg {
  std::string_view name;
  std::uint64_t value = 0;
};

// The values in declaration order: every name known and given once, every required argument
// given, every scalar inside its range (fallbacks filled in). ArgumentError naming the op, the
// argument and the rule otherwise. `out` must hold op.args.size() values.
void bind_args(const OpDeclaration& op, std::span<const NamedArg> named, std::span<std::uint64_t> out);

// The values of a call already in declaration order (OpRef::run_values): one per declared
// argument, every scalar inside its range; ArgumentError naming the op, the argument and the rule.
void check_values(const OpDeclaration& op, OpArgValues values);

// ArgumentError naming both arguments and the rule when an output's bytes (its declared dims times
// its dtype's size) overlap an input's or another output's, except an output declared in place of
// that input (ArgDecl::in_place_of) at the input's own address; a shape the op's shape_rules
// refuse is refused by them instead. run_op applies it to every call; allocates nothing.
void check_no_aliasing(const OpDeclaration& op, OpArgValues values);
// The tensors' extents of `op` resolved once (OpDeclaration::extent_plan).
std::shared_ptr<const ExtentPlan> make_extent_plan(const OpDeclaration& op);

// The same for explain's shape: tensors are not needed (0), a scalar not given takes its fallback
// or 0; names and ranges are checked as bind_args does.
void bind_shape(const OpDeclaration& op, std::span<const NamedArg> named, std::span<std::uint64_t> out);

// ExplainQuery::given for the named arguments of a shape (names that are no argument set no bit;
// bind_shape refuses them).
std::uint64_t given_mask(const OpDeclaration& op, std::span<const NamedArg> named);

// A borrowed callable for OpHost::while_held: the caller's lambda and how to call it, with no
// allocation (std::function may allocate on every op call); the lambda outlives the call.
class HeldCall {
 public:
  template <class Body>
  explicit HeldCall(Body& body) noexcept : body_(&body), call_([](void* erased) { (*static_cast<Body*>(erased))(); }) {}
  void operator()() const { call_(body_); }

 private:
  void* body_;
  void (*call_)(void*);
};

// Where the runtime meets an op's typed entry point (ops::ssm_ba_gates(host, ...)): the context
// of a declared op by name. The runtime implements it; tests may too.
class OpHost {
 public:
  virtual ~OpHost() = default;
  // Runs `body` with the host held open on this thread: the runtime's close() waits for it to
  // return and frees nothing under it; a closed runtime throws ClosedError instead of running it.
  // A typed entry point runs its whole call in one (context, aliasing check, launch), as a call by
  // name does inside Runtime::run.
  virtual void while_held(HeldCall body) const { body(); }
  // KernelChoiceError ("no op named X (known: ...)") for an op the host does not hold.
  [[nodiscard]] virtual OpContext op_context(std::string_view op) const = 0;
  // The context one call on `stream` runs with (`forced_role`: its role's own name, "" for the
  // guards' pick). The runtime's differs from op_context on a stream capturing into a CUDA graph:
  // only prepared kernels, on a backend that refuses anything but their launches, or a
  // CaptureError naming prepare (src/ops/op_capture.hpp).
  [[nodiscard]] virtual OpContext call_context(std::string_view op, std::uint64_t /*stream*/,
                                               std::string_view /*forced_role*/) const {
    return op_context(op);
  }
  // The same for a call whose argument values (declaration order) are known: the runtime's also
  // takes the shape-specialised variants they ask for (OpDeclaration::shape_constants), as a call
  // by name does; a typed entry point (ops::ssm_ba_gates(host, args)) calls this one.
  [[nodiscard]] virtual OpContext call_context_for(std::string_view op, OpArgValues /*values*/, std::uint64_t stream,
                                                   std::string_view forced_role) const {
    return call_context(op, stream, forced_role);
  }
};

// The role's own name for a role name or alias ("" stays ""); KernelChoiceError "<op>: no kernel
// role 'r' (roles: ...)<hint>" for another.
std::string_view resolve_role(const OpDeclaration& op, std::string_view role_or_alias, std::string_view hint = {});

// Runs `op` on the host's context: the forced role resolved by name or alias (KernelChoiceError
// naming the op's roles for an unknown one, or naming the refusal of a forced kernel verification
// refused), then the declaration's run; a verdict on a refused role names its refusal.
Pick run_op(const OpContext& context, const OpCall& call);

// Explains a shape on the context: the op's shape_rules first (M taken as 1 when the query gives
// none: explain then answers for every M), so a shape run refuses is refused here with run's
// ArgumentError, then the declaration's explain. ArgumentError for an op with nothing to explain.
// Runtime::explain and the CLI both call it.
Explanation explain_op(const OpContext& context, const ExplainQuery& query);

}  // namespace metrale::ops
