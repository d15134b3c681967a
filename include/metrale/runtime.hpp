// metrale/runtime.hpp: what an engine opens once per device: the backend, the selected
// target, the resolved levers, the registry with every kernel the target ships, and the ops it
// serves by name (metrale/ops/op_declaration.hpp; ARCHITECTURE.md). It knows no op by name:
// the typed calls (ops::ssm_ba_gates(*runtime, args), ...) live in each op's own header.
// Invariants: "no device" is a state, not an error (has_device() is false and the reason is
// kept; ops then throw BackendError naming it); the ops read their handles lock-free on every
// call, so a twin arriving in the background is picked up by the next call; an op call on a
// stream capturing into a CUDA graph runs only what prepare() made ready (src/ops/op_capture.hpp);
// close() never frees under a call: it refuses new calls (ClosedError), waits for those in flight
// and the background builds, then frees the kernels and the device (ARCHITECTURE.md, "Closing").
// Past ~400 lines: most of it is RuntimeOptions, each field a setting an engine chooses, with
// its default, its variable and its error stated beside it.
#pragma once

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "metrale/environment.hpp"
#include "metrale/gpu/gpu_backend.hpp"
#include "metrale/host/host_kernel.hpp"
#include "metrale/jit/kernel_registry.hpp"
#include "metrale/ops/op_declaration.hpp"
#include "metrale/ops/tuning_table.hpp"
#include "metrale/target/hardware_target.hpp"
#include "metrale/target/levers.hpp"

namespace metrale {

struct RuntimeCaptureState;
namespace ops {
struct CaptureMask;
}

enum class BackendChoice {
  kAuto,  // the CUDA device when there is one, else "no device"
  kCuda,  // the CUDA device; "no device" when there is none
  kHost,  // the host backend: the same templates, run on the CPU
  kNone,  // no device even when there is one: explain and compile for a target (the CLI's explain)
};

using ops::kForcedKernelReason;

// One kernel's verification verdict on this runtime's device (Runtime::verdicts, explain, `metrale-jit
// verify`; ARCHITECTURE.md, glossary: verdict). A failed one's refusal is the reason the guards report.
struct KernelVerdict {
  std::string kernel;
  std::string params;  // KernelParams::tag()
  ops::CheckVerdict verdict = ops::CheckVerdict::kSkipped;
  std::string check;       // the checks run with their shapes, "; "-joined
  std::string worst;       // the worst element of the failing (else the last) row, or why skipped
  double ms = 0;           // the checks' wall time (inputs, references, copies, launches); a cached
                           // verdict keeps the time of the run that made it
  bool cached = false;     // read from the verdict cache: no check ran
  bool cacheable = false;  // a result of the kernel's code (not a time limit, a fault, a skip)
  std::string refusal;     // failed: "failed its check on NVIDIA H200, driver ...: ..."; else empty
};

struct RuntimeOptions {
  BackendChoice backend = BackendChoice::kAuto;
  int device_ordinal = 0;
  // The target to use instead of the one the device selects; also the target of a runtime
  // with no device or on the host backend (default "hopper").
  std::optional<std::string> target;
  LoadMode load_mode = LoadMode::kWaitForAll;
  std::uint32_t host_sm_count = 132;
  std::uint32_t host_worker_threads = 0;  // 0: the hardware threads
  // An engine's own kernels for the host backend (make_host_kernel over a template compiled with
  // metrale/host/cuda_host_prelude.hpp), loadable beside the library's; ignored on a device.
  std::vector<HostKernelInfo> host_kernels;
  // An engine's own template sources (file name -> text), beside the library's templates; a
  // declaration's `source` names one of them (or a library template).
  std::map<std::string, std::string> sources;
  // An engine's kernels: a target's HARDWARE.toml ships them by these names, and open() builds
  // them with the library's own in one batch (parents first, background variants after).
  std::vector<KernelDeclaration> kernels;
  // An engine's ops, served beside the library's by every surface (op calls by name, explain,
  // levers); their roles name kernels of `kernels` or the library's.
  std::vector<ops::OpDeclaration> ops;
  // Lever values that override the target file and the environment, by [defaults] key
  // (provenance "options"); a key no op declares is a ConfigError.
  std::map<std::string, bool> levers;
  EnvLookup env = process_environment();
  std::optional<KernelRegistry::Options> registry;  // default: the process memory cache + disk cache
  // The disk cache's directory instead of METRALE_CACHE_DIR / XDG_CACHE_HOME / ~/.cache/metrale
  // (an unusable one means memory only, with one warning); ignored when `registry` is given.
  std::optional<std::string> cache_dir;
  // The remote cache tier, "redis://HOST:PORT[/DB]", over METRALE_REMOTE_CACHE: asked after the
  // disk cache and before NVRTC under the same key, and every compile published there (README
  // "Remote cache"). Redis down, slow or full never fails a call (one warning per runtime). An
  // empty string: none, even when the variable names one. A malformed URL is a ConfigError.
  // Ignored when `registry` is given (its Options::remote is used).
  std::optional<std::string> remote_cache;
  // Ahead-of-time bundles (directories written by `metrale-jit build --bundle`), looked in
  // before the disk cache and NVRTC, followed by those of METRALE_BUNDLE_DIR (':'-separated).
  std::vector<std::string> bundle_dirs;
  // A bundle signer's public key file (`metrale-jit keygen`, README "Bundles"), over
  // METRALE_BUNDLE_PUBKEY: then only bundles it signed are used, an unsigned or wrongly signed
  // one is refused with a warning naming it (the kernels are built as without it). A file that is
  // no public key is a ConfigError. nullopt and no variable: bundles are trusted by content.
  std::optional<std::string> bundle_public_key;
  // Verification (ARCHITECTURE.md, glossary: verdict): every kernel an op can run is checked on
  // this device against its parent or reference before an op may use it, and refused (absent,
  // with its reason) when it fails. nullopt: METRALE_VERIFY (on unless "off"); true/false here
  // override it. Verdicts are kept on disk beside the disk cache's entries (verdicts/), so a warm
  // open runs no check; with `registry` given and no cache_dir they are kept in memory only.
  std::optional<bool> verify;
  // The most one kernel's checks may take before the kernel is refused (a hang is cut off).
  std::uint32_t verify_time_limit_ms = 30000;
  // Shape constants to build specialised variants for at open, in its one batch, beside the
  // target's [shapes]: "<op>.<argument>" (an op's name or alias) -> values ({"ssm_ba_gates.n",
  // {96}}). ConfigError for an op or argument that declares no shape constant.
  std::map<std::string, std::vector<std::uint64_t>> shapes;
  // With LoadMode::kBackgroundTwins (the fast start: open() returns once the parents are loaded),
  // a kernel with pinned shapes (above, or the target's [shapes]) leaves its generic form to the
  // first sight of a value no pinned or specialisable variant covers, the guards' next kernel
  // running meanwhile: it compiles slowest (every shape's code in one image), and an engine that
  // pinned its shapes rarely meets it. true: built in the background batch too. kWaitForAll
  // always builds it (load() returns once every variant is built).
  bool generic_at_open = false;
  // The most one compile may take (an NVRTC program is abandoned, a host-JIT compiler killed; the
  // kernel is then absent with the reason "compile exceeded N s"), and the longest wait for another
  // process compiling the same kernel. nullopt: METRALE_COMPILE_TIMEOUT_S (default 300 s). A value
  // that is not a positive number of seconds is a ConfigError. Given with `registry`, the
  // registry's own compile_timeout_s wins when set.
  std::optional<double> compile_timeout_s;
  // A tuning table (`metrale-jit tune`, README "Tuning tables") over METRALE_TUNING_TABLE: the
  // guards hold M to its measured thresholds, at the shapes it measured, instead of the
  // predicted ones. A table measured on another kind of device, SM count, driver, NVRTC or with
  // other kernels (their keys) is refused by name, with one warning, and the predictions stay.
  // A file that cannot be read or parsed, or was edited, is a ConfigError. An empty string: none.
  std::optional<std::string> tuning_table;
};

// What Runtime::tune measures (README "Tuning tables").
struct TuneRequest {
  std::vector<std::string> ops;                    // names or aliases; empty: every op with a tunable guard
  std::vector<std::uint32_t> m;                    // the ladder; empty: kDefaultTuneLadder
  std::vector<std::uint32_t> n{96};                // the N values (ops without an N ignore them)
  std::vector<std::uint32_t> k{5120};              // the K values
  std::uint32_t repeats = 5;                       // timed calls per point and kernel set; the median is kept
  std::function<void(std::string_view)> progress;  // one line per row, when set
};
// Writes `table` (ops::write_tuning_table) to `path` whole or not at all: a temporary file beside
// it, fsync'ed and renamed over it (the disk cache's write), so a rank opening a runtime while a
// tune runs reads the old table or the new one. ConfigError "<path>: cannot replace it: <why>".
void save_tuning_table(const ops::TuningTable& table, const std::string& path);
// The ladder of M tune times by default: decode sizes to a few waves of prefill.
inline constexpr std::array<std::uint32_t, 16> kDefaultTuneLadder = {1,   2,   4,   8,   16,  32,   64,   128,
                                                                     192, 256, 384, 512, 768, 1024, 2048, 4096};

// One shape constant of an op at one call's value: the template argument the rule chose (0:
// generic, with its reason) and whether that variant is published now (the call takes it).
struct ShapeVariantState {
  std::string_view role;
  std::string_view kernel;  // the role's
  std::string_view arg;
  std::uint64_t value = 0;
  std::uint32_t shape = 0;
  std::string_view refusal;
  KernelParams params;     // the specialised variant's (shape set); the generic's when shape == 0
  bool declared = false;   // pinned at open, or asked for by an earlier call
  bool published = false;  // its handle is present: the call runs it
};

class Runtime;

// One op of a runtime, found once (Runtime::op): its calls skip the lookup by name, and with the
// values already in declaration order, the matching of named arguments too. The launch path an
// engine calls per decode step; as cheap as the library gets (BENCHMARKS.md, "Per-call library
// time"). Valid while its runtime lives.
class OpRef {
 public:
  [[nodiscard]] const ops::OpDeclaration& declaration() const;
  // One call by named arguments (as Runtime::run).
  ops::Pick run(std::span<const ops::NamedArg> args, std::uint64_t stream = 0, std::string_view role = {}) const;
  // One call with one value per declared argument in declaration order (what ops::bind_args
  // writes: bind once, then change the pointers and M per call); the scalars' ranges are checked.
  ops::Pick run_values(ops::OpArgValues values, std::uint64_t stream = 0, std::string_view role = {}) const;

 private:
  friend class Runtime;
  OpRef(Runtime& runtime, std::size_t index) : runtime_(&runtime), index_(index) {}
  Runtime* runtime_;
  std::size_t index_;  // into the runtime's resolved ops
};
class VerificationGate;

class Runtime : public ops::OpHost {
  static constexpr std::uint64_t kClosedBit = std::uint64_t{1} << 63U;  // gate_: closed
  static constexpr std::uint64_t kCountMask = kClosedBit - 1;           // gate_: calls in flight

 public:
  static std::unique_ptr<Runtime> open(RuntimeOptions options = {});
  // A runtime over a backend the caller made (tests, an engine with its own backend).
  static std::unique_ptr<Runtime> open_with(std::unique_ptr<GpuBackend> backend, RuntimeOptions options = {});

  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;
  ~Runtime() override;  // closes (a background build's failure is logged) and waits for a closer

  // Closes the runtime, from any thread, while other threads call it: every call that starts
  // later throws ClosedError ("this Runtime is closed"), the calls in flight and the background
  // builds finish, then the kernels, the registry and the device are freed. Rethrows a background
  // build's failure (once everything is freed). A second close waits for the first and returns.
  // Called on a thread inside a call of this runtime (a log callback, a background build), it
  // cannot wait for itself: it refuses new calls and returns, and a closer thread frees once the
  // calls return (the destructor waits for it). Graphs captured from it must not be replayed after.
  void close();
  [[nodiscard]] bool closed() const noexcept { return (gate_.load(std::memory_order_acquire) & kClosedBit) != 0; }

  // Holds the runtime open on this thread while it lives: close() waits for it. Every public call
  // holds one; hold one yourself around what uses registry() or backend() on a thread that may race
  // close() (a typed op call, ops::fp8_act_quant(*runtime, args), holds one itself: while_held). ClosedError when the
  // runtime is closed. The first on a thread costs one uncontended atomic add (and a subtract at the end); one nested
  // in it, none.
  class CallScope {
   public:
    explicit CallScope(const Runtime& runtime);
    ~CallScope();
    CallScope(const CallScope&) = delete;
    CallScope& operator=(const CallScope&) = delete;

   private:
    struct NoThrow {};
    // held_ false (nothing held) on a closed runtime: the background jobs' scope, which skips.
    CallScope(const Runtime& runtime, NoThrow /*tag*/) noexcept;
    friend class Runtime;
    const Runtime* runtime_;
    const CallScope* outer_;  // the scope this thread held before (of any runtime)
    bool counted_ = false;    // this one added to the runtime's in-flight count
    bool held_ = false;
  };
  // Whether this thread is inside a call of this runtime (holds a CallScope of it).
  [[nodiscard]] bool held_by_this_thread() const noexcept;

  // State kept after close: has_device, no_device_reason, target, levers and ops stay readable.
  [[nodiscard]] bool has_device() const { return has_device_; }
  [[nodiscard]] const std::string& no_device_reason() const { return no_device_reason_; }
  // ClosedError once closed (the backend is freed).
  [[nodiscard]] GpuBackend* backend() { return open_or_throw().backend_.get(); }
  [[nodiscard]] const GpuBackend* backend() const { return open_or_throw().backend_.get(); }
  [[nodiscard]] const HardwareTarget& target() const { return target_; }
  [[nodiscard]] const Levers& levers() const { return levers_; }
  // ClosedError once closed (the registry is freed).
  [[nodiscard]] KernelRegistry& registry() { return *open_or_throw().registry_; }
  [[nodiscard]] std::optional<VariantId> variant_id(std::string_view kernel) const;
  // The registry handle of a kernel the target ships (the library's or an engine's), read
  // lock-free; 0 when absent (not shipped, still building, failed, or no device).
  [[nodiscard]] KernelHandle kernel_handle(std::string_view kernel) const;

  // Whether kernels are verified before use (RuntimeOptions::verify, METRALE_VERIFY).
  [[nodiscard]] bool verification_enabled() const;
  // The verdict of every kernel loaded on this device so far, in declaration order (background
  // variants appear once their verification is done; wait with registry().wait_background()).
  [[nodiscard]] std::vector<KernelVerdict> verdicts() const;
  // The verdict of one shipped kernel, nullopt when none was reached (verification off, no device,
  // not loaded yet).
  [[nodiscard]] std::optional<KernelVerdict> verdict(std::string_view kernel) const;
  // How many kernels this runtime checked (verdicts answered from the cache are not counted).
  [[nodiscard]] std::uint64_t verification_checks_run() const;

  // The ops this runtime serves: the library's, then the engine's (RuntimeOptions::ops).
  [[nodiscard]] const ops::OpSet& ops() const { return ops_; }
  // An op's context now: its kernels by role with their handles (read lock-free, so a twin
  // arriving in the background is seen by the next call), its levers, the device. Throws
  // KernelChoiceError naming the known ops for an unknown name.
  [[nodiscard]] ops::OpContext op_context(std::string_view op) const override;
  // Runs `body` inside a CallScope (ClosedError once closed): what a typed op call runs in.
  void while_held(ops::HeldCall body) const override;
  // op_context, or on a stream capturing into a CUDA graph only what prepare() made ready
  // (CaptureError naming prepare when nothing is).
  [[nodiscard]] ops::OpContext call_context(std::string_view op, std::uint64_t stream,
                                            std::string_view forced_role) const override;
  // call_context with the call's values: off a capture the shape-specialised variants they ask
  // for are taken (and a first-met one asked for in the background), as a call by name does.
  [[nodiscard]] ops::OpContext call_context_for(std::string_view op, ops::OpArgValues values, std::uint64_t stream,
                                                std::string_view forced_role) const override;

  // One op call by name (or alias): bind the named arguments (ArgumentError naming the argument
  // and rule), then validate, guard, pick, log once per slot and launch; `role` forces a kernel
  // by role name or alias ("" lets the guards pick). Throws ArgumentError for a shape no kernel
  // can take, KernelChoiceError for a forced role the target did not build, BackendError when
  // there is no device.
  ops::Pick run(std::string_view op, std::span<const ops::NamedArg> args, std::uint64_t stream = 0,
                std::string_view role = {});
  // Does every first-call thing of `op` at this shape ahead, so that a call on a stream capturing
  // into a CUDA graph can run it: a dry run of the op's own pick (and, with `role` "", of every
  // role it has loaded, forced) that launches nothing but sets the function attributes, asks the
  // occupancy questions and claims the log slots a launch would, then records each kernel and
  // launch configuration as prepared. `shape` names the op's scalars as explain's does (tensors
  // may be left out). A kernel arriving in the background later is prepared by a later call.
  // Returns the dry runs' picks. Throws ArgumentError for a shape the op refuses, BackendError
  // with no device.
  std::vector<ops::Pick> prepare(std::string_view op, std::span<const ops::NamedArg> shape, std::string_view role = {});
  // The op of that name or alias, resolved once (KernelChoiceError naming the known ops).
  [[nodiscard]] OpRef op(std::string_view name);
  // The pick for a shape without launching: `shape` names the op's scalars (tensors are not
  // needed); `m_given` false asks for the smallest M each guarded role takes instead.
  [[nodiscard]] ops::Explanation explain(std::string_view op, std::span<const ops::NamedArg> shape,
                                         bool m_given = true) const;
  // Each shape constant of the op at these arguments (named as for explain): which variant a call
  // takes and why. Requests nothing.
  [[nodiscard]] std::vector<ShapeVariantState> shape_variants(std::string_view op,
                                                              std::span<const ops::NamedArg> shape) const;
  // Times each guarded role of each op (those whose guard declares a tuned_reason) against its
  // op's parent over the ladder of M, at each (n, k), on this runtime's device (the host backend
  // for tests), with the kernels this runtime loaded, and returns the table with its provenance
  // (write it with ops::write_tuning_table). A role or parent whose kernel is absent is left out
  // (`progress` says so). BackendError with no device; ArgumentError for an unknown op, an empty
  // ladder value or a shape the op refuses.
  ops::TuningTable tune(const TuneRequest& request);
  // The tuning table the guards read (nullptr: none given, or the one given was refused).
  [[nodiscard]] const ops::TuningTable* tuning_table() const { return tuning_.get(); }
  // One line: "tuning table F: 4 rows in use", "tuning table F refused: <why>", or "" when none given.
  [[nodiscard]] const std::string& tuning_status() const { return tuning_status_; }

 private:
  Runtime() = default;
  void initialise(RuntimeOptions& options);
  // *this, or ClosedError naming the closed runtime.
  [[nodiscard]] const Runtime& open_or_throw() const;
  [[nodiscard]] Runtime& open_or_throw();
  // The in-flight count: enter() false (nothing held) when closed; leave() signals a waiting close.
  [[nodiscard]] bool enter() const noexcept;
  void leave() const noexcept;
  // close()'s work once new calls are refused: waits for the calls in flight (drained_), then the
  // background builds, frees, and sets closed_done_; the background failure, if any.
  std::exception_ptr finish_close() noexcept;
  void wait_closed() const;
  // One op as resolved once at open: its kernels' registry ids and parameters by role, its
  // levers, so an op call only reads handles.
  struct ResolvedOp {
    const ops::OpDeclaration* op = nullptr;
    std::array<std::optional<VariantId>, ops::kMaxRoles> ids{};
    ops::OpContext base;  // everything but the handles and the device
  };
  friend class OpRef;
  void resolve_ops();
  // One bound call of a resolved op: eager, or on a capturing stream only what prepare made ready.
  ops::Pick run_entry(const ResolvedOp& entry, const ops::OpCall& call);
  [[nodiscard]] const ResolvedOp& resolved(std::string_view op) const;
  [[nodiscard]] ops::OpContext context_of(const ResolvedOp& entry) const;
  // The context of a call on a capturing stream (runtime_prepare.cpp): the prepared kernels on
  // the capture backend, what was declined in `mask`; CaptureError when nothing can run.
  [[nodiscard]] ops::OpContext capture_context(const ResolvedOp& entry, std::string_view forced_role,
                                               ops::CaptureMask& mask, ops::OpArgValues values = {}) const;
  // The specialised variant of a shipped role at `shape`: its id when declared (declared now when
  // `declare`), else nullopt. Takes shapes_mutex_.
  std::optional<VariantId> shape_variant_id(const ops::OpKernel& kernel, std::uint32_t shape, bool declare) const;
  // How take_shape_variants gets a variant not published yet.
  enum class ShapeBuild {
    kInBackground,  // an op call: asks for it in the background, runs what is there meanwhile
    kNow,           // prepare: builds it (or waits for its build) on this thread
    kNever,         // a capture: takes only what is published
  };
  // kNow for a call forcing a role that has a shape constant (the caller asked for that kernel:
  // it is built rather than refused as absent), else kInBackground.
  static ShapeBuild shape_build_for(const ops::OpDeclaration& op, std::string_view forced_role);
  // Swaps each shape constant's role to its specialised variant when published; a value first
  // met gets its variant (or, one the rule refuses, the generic form open() left) as `build` says.
  void take_shape_variants(ops::OpContext& context, ops::OpArgValues values, std::uint64_t stream,
                           ShapeBuild build) const;
  // Pinned shapes (the target's [shapes], RuntimeOptions::shapes) declared before load().
  void declare_pinned_shapes(const RuntimeOptions& options);
  // Gets `kernel`'s generic form when open() left it to first sight: asked for once, in the
  // background (kInBackground, never while `stream` captures) or on this thread (kNow: built, or
  // the background build a call started waited for); its handle set when published. Takes
  // shapes_mutex_ to ask.
  void take_generic_form(ops::OpKernel& kernel, std::uint64_t stream, ShapeBuild build) const;
  [[nodiscard]] std::vector<ShapeVariantState> shape_states(const ops::OpContext& context,
                                                            ops::OpArgValues values) const;
  // Reads RuntimeOptions::tuning_table (or METRALE_TUNING_TABLE) and accepts it for this device,
  // or refuses it by name (runtime_tuning.cpp); sets every op's context to it when accepted.
  void accept_tuning_table(const RuntimeOptions& options);
  // Why `table` does not fit this runtime (device, SM count, driver, NVRTC, kernel keys); nullopt: it fits.
  [[nodiscard]] std::optional<std::string> tuning_mismatch(const ops::TuningTable& table) const;
  // The role's kernel key and its parent's, as a table row records them (runtime_tuning.cpp).
  [[nodiscard]] std::string kernel_key(const ResolvedOp& entry, std::size_t role) const;
  [[nodiscard]] std::vector<std::string> parent_kernel_keys(const ResolvedOp& entry) const;
  // The smallest M the role's guard predicts at (n, k), from the op's explain with no table (op_tuner.cpp).
  [[nodiscard]] std::optional<std::uint32_t> predicted_min_m(const ResolvedOp& entry, std::string_view role,
                                                             std::uint32_t n, std::uint32_t k) const;
  // Names the source of each guarded role's threshold in an explanation.
  void explain_thresholds(const ops::OpContext& context, ops::OpArgValues values, ops::Explanation& out) const;

  // Bit 63: closed; the rest: the calls in flight (CallScope) and background jobs. One atomic, so
  // a call pays one uncontended add and one subtract, and no call can slip past a close.
  mutable std::atomic<std::uint64_t> gate_{0};
  // close(): the last call out sets drained_; the closer sets closed_done_ once everything is freed.
  mutable std::mutex close_mutex_;
  mutable std::condition_variable close_cv_;
  mutable bool drained_ = false;
  bool closed_done_ = false;
  bool has_device_ = false;
  std::unique_ptr<GpuBackend> backend_;
  std::string no_device_reason_;
  HardwareTarget target_;
  Levers levers_;
  std::unique_ptr<KernelRegistry> registry_;
  // After the registry: destroyed first, once background builds are done (~Runtime waits them).
  std::unique_ptr<VerificationGate> verification_;
  std::map<std::string, VariantId, std::less<>> variant_ids_;
  ops::OpSet ops_;
  std::vector<ResolvedOp> resolved_;
  DeviceIndex device_ = 0;
  std::unique_ptr<RuntimeCaptureState> capture_;  // runtime/prepared_gpu.hpp
  // Expands a specialised variant's name expression (the catalog of open()).
  std::function<KernelVariant(const KernelEntry&)> variant_of_;
  mutable std::mutex shapes_mutex_;                 // declaring shape variants: one caller declares and requests
  std::vector<VariantId> generic_on_request_;       // generic forms open() left to first sight (set once, in open)
  std::unique_ptr<const ops::TuningTable> tuning_;  // accepted at open (accept_tuning_table); null: none
  std::string tuning_file_;
  std::string tuning_status_;
  mutable std::vector<VariantId> generic_requested_;  // those a call asked for (shapes_mutex_)
};

}  // namespace metrale
