/* metrale/metrale.h: the C ABI of metrale-jit (C99), for engines written in any language.
 *
 * Conventions (the invariants every function keeps):
 * - Every function that can fail returns a metrale_status; METRALE_OK is 0. On failure the
 *   calling thread's metrale_last_error() names what is wrong (argument, shape, constraint) and
 *   every out-parameter is left as it was. No C++ exception ever crosses this boundary.
 * - Handles are opaque (metrale_runtime); close what you open.
 * - Structs passed in carry a struct_size field: set it with the matching *_init function (or
 *   to sizeof the struct). A caller built against an older, smaller struct keeps working; a
 *   size smaller than the first version's is refused (METRALE_ERROR_VERSION).
 * - Strings handed out are owned by the library: those of the runtime, its levers and its ops
 *   (metrale_runtime_info, metrale_lever_info, metrale_op_info, metrale_role_info,
 *   metrale_arg_info) live until the runtime is closed; those in picks are static (they outlive
 *   the runtime); the others (explanations, reasons of registry calls) live until the next call
 *   of the same function on the same thread.
 * - A handle that is NULL is refused (METRALE_ERROR_ARGUMENT "runtime is NULL"), never a crash.
 * - Pointers to tensors are device addresses (CUdeviceptr) on the CUDA backend and plain host
 *   addresses on the host backend. A stream is a CUstream cast to uint64_t (0: the default).
 */
#ifndef METRALE_METRALE_H
#define METRALE_METRALE_H

#include <stddef.h>
#include <stdint.h>

#if defined(_WIN32)
#define METRALE_API
#else
#define METRALE_API __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---- versions, statuses, errors ---------------------------------------------------- */

/* Bumped when a struct grows or a function changes meaning. 2: ops by name (metrale_op_run,
 * metrale_op_explain), levers by name (metrale_lever_*), no per-op functions or lever fields.
 * 3: graph capture (metrale_op_prepare, METRALE_ERROR_CAPTURE) and the CUDA error of a failure
 * (metrale_last_error_info); verification (options.verify, verify_time_limit_ms, info.verify);
 * options.shapes. A version-2 options struct (without the new fields) is still accepted.
 * 4: metrale_runtime_shutdown and METRALE_ERROR_CLOSED (closing while other threads call).
 * 5: options.remote_cache (the Redis remote cache tier) and options.compile_timeout_s (compile
 *    deadlines), appended; a smaller struct still opens.
 * 6: options.op_specs (engine ops declared as data, TOML or JSON texts) and metrale_op_pick.shape
 *    (the shape-specialised variant that ran), appended; a version-5 options or pick struct is
 *    still accepted (without them).
 * 7: metrale_arg_info.zero_means, in_place_of, multiple_of, layout_by and column_stride (what a
 *    caller holding arrays needs to size and check them), appended; a version-6 info struct is
 *    still filled (without them).
 * 8: options.tuning_table, metrale_runtime_tune, metrale_runtime_tuning_status,
 *    metrale_op_explanation.threshold_origins, appended; a version-7 options or explanation struct
 *    is still accepted. */
#define METRALE_ABI_VERSION 8

typedef enum metrale_status {
  METRALE_OK = 0,
  METRALE_ERROR_ARGUMENT = 1,  /* a shape, stride, pointer or name no kernel can take */
  METRALE_ERROR_CONFIG = 2,    /* a HARDWARE.toml, target name or environment value is malformed */
  METRALE_ERROR_BACKEND = 3,   /* the driver or the host backend refused an operation */
  METRALE_ERROR_NO_DEVICE = 4, /* the runtime has no device (the reason says why) */
  METRALE_ERROR_VERSION = 5,   /* a struct_size this library does not understand */
  METRALE_ERROR_INTERNAL = 6,  /* anything else (out of memory, a bug): the message says what */
  METRALE_ERROR_CAPTURE = 7,   /* an op call on a stream capturing into a CUDA graph found nothing
                                  prepared for it (metrale_op_prepare); nothing launched */
  METRALE_ERROR_CLOSED = 8     /* the runtime was shut down (metrale_runtime_shutdown): nothing ran */
} metrale_status;

/* "0.1.0": the library's version. */
METRALE_API const char* metrale_version(void);
/* METRALE_ABI_VERSION of the library actually loaded. */
METRALE_API uint32_t metrale_abi_version(void);
/* "ok", "argument", "config", "backend", "no device", "version", "internal", "capture", "closed". */
METRALE_API const char* metrale_status_name(metrale_status status);
/* The message of the calling thread's last failure ("" when the last call succeeded). */
METRALE_API const char* metrale_last_error(void);

/* The calling thread's last failure as data. When the CUDA driver failed, its CUresult and name,
 * and whether the error is sticky (an illegal address, a failed launch, a trap: the CUDA context
 * is unusable and every later call fails; close the runtime and restart the process) or a
 * refusal (an invalid value, too many resources: the call did not happen, the runtime is fine). */
typedef struct metrale_error_info {
  size_t struct_size;
  metrale_status status; /* METRALE_OK when the last call succeeded */
  int32_t cuda_code;     /* the CUresult, or 0 when the driver did not fail */
  const char* cuda_name; /* "CUDA_ERROR_ILLEGAL_ADDRESS"; "" when cuda_code is 0 */
  int32_t sticky;        /* 1: the CUDA context is unusable */
  int32_t refusal;       /* 1: the driver refused the call; the runtime stays usable */
  const char* message;   /* metrale_last_error() */
} metrale_error_info;

METRALE_API void metrale_error_info_init(metrale_error_info* info);
/* Fills `info` (its strings live until the thread's next call); does not change the last error. */
METRALE_API metrale_status metrale_last_error_info(metrale_error_info* info);

/* ---- opening a runtime --------------------------------------------------------------- */

typedef struct metrale_runtime metrale_runtime;

typedef enum metrale_backend {
  METRALE_BACKEND_AUTO = 0, /* the CUDA device when there is one, else a runtime with no device */
  METRALE_BACKEND_HOST = 1, /* the host backend: the same kernel templates, run on the CPU */
  METRALE_BACKEND_CUDA = 2  /* the CUDA device; a runtime with no device when there is none */
} metrale_backend;

typedef struct metrale_runtime_options {
  size_t struct_size;
  metrale_backend backend;
  int32_t device_ordinal;
  const char* target;    /* NULL: the device's target (hopper without a device) */
  const char* cache_dir; /* NULL: METRALE_CACHE_DIR, XDG_CACHE_HOME, ~/.cache/metrale */
  /* Levers set by [defaults] key, over the target file and the environment (provenance
   * "options"); a key no op declares fails the open with METRALE_ERROR_CONFIG. */
  const struct metrale_lever_override* levers; /* NULL when lever_count is 0 */
  size_t lever_count;
  uint32_t host_sm_count;       /* the SM count the guards see on the host backend; 0: 132 */
  uint32_t host_worker_threads; /* 0: the hardware threads */
  /* Ahead-of-time bundles (`metrale-jit build --bundle DIR`), ':'-separated, looked in before
   * those of METRALE_BUNDLE_DIR, the disk cache and NVRTC. NULL or "": none but the variable's. */
  const char* bundle_dirs;
  /* ABI 3: verification, every kernel checked on the device before an op uses it (a kernel that
   * fails is refused: the op runs the next one). -1: METRALE_VERIFY decides (on unless "off");
   * 0 off; 1 on. A struct of ABI 2 (without these fields) means -1 and the default limit. */
  int32_t verify;
  uint32_t verify_time_limit_ms; /* the most one kernel's checks may take; 0: 30000 */
  /* Since ABI 3. Shape constants to build specialised kernel variants for at open, beside the
   * target's [shapes]: "<op>.<argument>=<value>,<value>;..." ("ssm_ba_gates.n=96"). NULL or "":
   * none. A malformed entry fails with METRALE_ERROR_ARGUMENT, an op or argument that declares no
   * shape constant with METRALE_ERROR_CONFIG. */
  const char* shapes;
  /* Since ABI 3 (appended; read only from a struct that holds it). A bundle signer's public key
   * file (`metrale-jit keygen`), over METRALE_BUNDLE_PUBKEY: then an unsigned or wrongly signed
   * bundle is refused (a warning naming it and the rule). A file that is no public key fails the
   * open with METRALE_ERROR_CONFIG. NULL or "": the variable's, else bundles trusted by content. */
  const char* bundle_pubkey;
  /* Since ABI 5 (appended; read only from a struct that holds it). The remote cache tier,
   * "redis://HOST:PORT[/DB]", over METRALE_REMOTE_CACHE: asked after the disk cache and before
   * NVRTC, and every compile published there; Redis down, slow or full never fails a call. NULL:
   * the variable's; "": none, even when the variable names one. A malformed URL fails the open
   * with METRALE_ERROR_CONFIG. */
  const char* remote_cache;
  /* Since ABI 5 (appended; read only from a struct that holds it). The most seconds one compile
   * (NVRTC or the host JIT) may take, over METRALE_COMPILE_TIMEOUT_S (default 300): an NVRTC
   * compile past it is abandoned and its kernel absent ("compile exceeded N s"), a host compiler
   * killed. 0: the variable's; negative, NaN or infinite: METRALE_ERROR_ARGUMENT. */
  double compile_timeout_s;
  /* Since ABI 6 (appended; read only from a struct that holds it). An engine's ops declared as
   * data (ARCHITECTURE.md, "Engine ops as data"): op_spec_count texts, each a TOML op file's text or
   * the same keys as JSON (a text whose first character is '{'), with their kernels and template
   * sources, served beside the library's ops by every call. A malformed one fails the open with
   * METRALE_ERROR_CONFIG naming "options.op_specs[i]", its line and its key. NULL when 0. */
  const char* const* op_specs;
  size_t op_spec_count;
  /* Since ABI 8 (appended; read only from a struct that holds it). A tuning table
   * (metrale_runtime_tune, `metrale-jit tune`; README "Tuning tables"), over METRALE_TUNING_TABLE:
   * the guards hold M to its measured thresholds at the shapes it measured, the prediction
   * elsewhere. A table measured on another device, SM count, driver, NVRTC or with other kernels
   * is refused by name (metrale_runtime_tuning_status says why) and the predictions stay. A file
   * that cannot be read or parsed, or was edited, fails the open with METRALE_ERROR_CONFIG. NULL:
   * the variable's; "": none, even when the variable names one. */
  const char* tuning_table;
} metrale_runtime_options;

/* One lever set by the caller: its [defaults] key ("ssm_ba_gates_hopper") and 1 on / 0 off. */
typedef struct metrale_lever_override {
  const char* name;
  int32_t value;
} metrale_lever_override;

/* Defaults: backend auto, device 0, everything else from the target and the environment. */
METRALE_API void metrale_runtime_options_init(metrale_runtime_options* options);

/* Opens a runtime (options may be NULL for the defaults). A machine without a GPU is not a
 * failure: the runtime opens with has_device = 0 and the ops fail with METRALE_ERROR_NO_DEVICE. */
METRALE_API metrale_status metrale_runtime_open(const metrale_runtime_options* options, metrale_runtime** out);
/* Closes the runtime and keeps the handle, from any thread while others call it: a call that
 * starts later returns METRALE_ERROR_CLOSED ("this Runtime is closed"), the calls in flight and
 * the background kernel builds finish (a build's failure is the returned error), then its kernels
 * and device are freed. Every later call on the handle but metrale_runtime_close returns
 * METRALE_ERROR_CLOSED; a second shutdown waits for the first and returns METRALE_OK. From inside a
 * call on the handle (its log callback) it returns at once, and the freeing follows that call. */
METRALE_API metrale_status metrale_runtime_shutdown(metrale_runtime* runtime);
/* metrale_runtime_shutdown, then frees the handle; NULL is ignored. No other thread may use the
 * handle once this returns: shut down first where others may still call. From inside a call on
 * the handle (its log callback) it only shuts down: close it again outside that call. */
METRALE_API void metrale_runtime_close(metrale_runtime* runtime);

/* ---- describing it ------------------------------------------------------------------- */

typedef struct metrale_runtime_info {
  size_t struct_size;
  int32_t has_device;
  const char* device;           /* "host (2 worker threads)", "NVIDIA H200 (...)" or "no device" */
  const char* no_device_reason; /* "" when there is a device */
  const char* target;           /* "hopper" */
  const char* target_source;    /* the HARDWARE.toml it came from */
  const char* arch;             /* "sm_90" ("" for generic without a device) */
  uint32_t sm_count;            /* what the guards use */
  size_t lever_count;           /* metrale_lever_get's indices: [0, lever_count) */
  size_t op_count;              /* metrale_op_get's indices: [0, op_count) */
  /* ABI 3: 1 when kernels are verified on the device before an op uses them (options.verify,
   * METRALE_VERIFY); a struct of ABI 2 ends before this field and is filled up to its size. */
  int32_t verify;
} metrale_runtime_info;

METRALE_API void metrale_runtime_info_init(metrale_runtime_info* info);
METRALE_API metrale_status metrale_runtime_describe(const metrale_runtime* runtime, metrale_runtime_info* info);

/* ABI 8. The runtime's tuning table in one line: "tuning table F: 1 row in use (measured on ...)",
 * "tuning table F refused: <why> (the guards keep their predictions)", or "" when none was given.
 * Lives until the runtime is closed (metrale_runtime_close); NULL for a NULL runtime. */
METRALE_API const char* metrale_runtime_tuning_status(const metrale_runtime* runtime);

/* ABI 8. Times each guarded role of each op (those whose guard has a tunable threshold) against
 * its op's parent over a ladder of M on the runtime's device (the host backend's numbers are for
 * tests, not for a GPU) and writes the tuning table (README "Tuning tables") to `out_path`, whole
 * or not at all (a temporary file beside it, renamed over it). `ops`: comma-separated names or
 * aliases ("fp8-quant,ba-gates"); NULL or "": every op with a tunable guard. `m`: the ladder
 * (m_count 0: 1 to 4096); `n` (n_count 0: {96}); `k` (k_count 0: {5120}); `repeats`: timed calls
 * per point, the median kept (0: 5). An unknown op or a zero size is METRALE_ERROR_ARGUMENT, a
 * runtime without a device METRALE_ERROR_BACKEND, a file that cannot be written
 * METRALE_ERROR_CONFIG (nothing is written then). A role whose kernel is not loaded is left out;
 * the table may have no row. Open a runtime with options.tuning_table = out_path to use it. */
METRALE_API metrale_status metrale_runtime_tune(metrale_runtime* runtime, const char* ops, const uint32_t* m,
                                                size_t m_count, const uint32_t* n, size_t n_count, const uint32_t* k,
                                                size_t k_count, uint32_t repeats, const char* out_path);

/* One lever of the runtime, in the order the ops declare them. Strings live until close. */
typedef struct metrale_lever_info {
  size_t struct_size;
  const char* name;       /* its [defaults] key: "ssm_ba_gates_hopper" */
  int32_t value;          /* 1 on, 0 off */
  const char* provenance; /* "built-in", "file", "environment", "options" */
  const char* origin;     /* the file, "METRALE_SSM_BA_GATES_HOPPER=off", or the option */
  const char* env_var;    /* "METRALE_SSM_BA_GATES_HOPPER" */
} metrale_lever_info;

METRALE_API void metrale_lever_info_init(metrale_lever_info* info);
METRALE_API metrale_status metrale_lever_get(const metrale_runtime* runtime, size_t index, metrale_lever_info* info);
/* The same by [defaults] key; METRALE_ERROR_ARGUMENT naming the known keys for another. */
METRALE_API metrale_status metrale_lever_find(const metrale_runtime* runtime, const char* name,
                                              metrale_lever_info* info);

/* ---- the ops, by name -------------------------------------------------------------------- */
/* Every op (the library's: "ssm_ba_gates" alias "ba-gates", "fp8_act_quant" alias "fp8-quant", ...;
 * an engine's) is a declaration: kernels by role, levers, arguments. Strings handed out by the
 * functions below live until the runtime is closed unless said otherwise. */

typedef struct metrale_op_info {
  size_t struct_size;
  const char* name;    /* "ssm_ba_gates" */
  const char* aliases; /* comma-separated: "ba-gates" ("" when none) */
  const char* summary;
  size_t role_count; /* metrale_op_role's indices */
  size_t arg_count;  /* metrale_op_arg_get's indices, in the order the op takes them */
} metrale_op_info;

METRALE_API void metrale_op_info_init(metrale_op_info* info);
/* The op at `index` in [0, op_count). */
METRALE_API metrale_status metrale_op_get(const metrale_runtime* runtime, size_t index, metrale_op_info* info);
/* The op of that name or alias; METRALE_ERROR_ARGUMENT naming the known ops for another. */
METRALE_API metrale_status metrale_op_find(const metrale_runtime* runtime, const char* op, metrale_op_info* info);

typedef struct metrale_role_info {
  size_t struct_size;
  const char* role;    /* "parent", "twin", "tensor_core", ... */
  const char* kernel;  /* the [kernels] key: "ssm_ba_gates_hopper" */
  const char* aliases; /* comma-separated other spellings a caller may force it by ("mma") */
  const char* lever;   /* the [defaults] key that asks for it; "" for none */
  int32_t shipped;     /* the target ships it */
  int32_t present;     /* its handle is present now (built and loaded on the device) */
} metrale_role_info;

METRALE_API void metrale_role_info_init(metrale_role_info* info);
/* The op's role at `index` in [0, role_count), the parent first. */
METRALE_API metrale_status metrale_op_role(const metrale_runtime* runtime, const char* op, size_t index,
                                           metrale_role_info* info);

typedef enum metrale_arg_kind {
  METRALE_ARG_INPUT = 0,  /* a tensor the op reads (its address) */
  METRALE_ARG_OUTPUT = 1, /* a tensor the op writes (its address) */
  METRALE_ARG_SCALAR = 2  /* an unsigned integer */
} metrale_arg_kind;

typedef struct metrale_arg_info {
  size_t struct_size;
  const char* name; /* "x", "m" */
  metrale_arg_kind kind;
  const char* dtype;  /* tensors: "bf16", "fp32", "e4m3", "u8", "u16", "i32", "u32"; scalars: "u32" */
  uint32_t alignment; /* tensors: the address's alignment in bytes */
  const char* dims;   /* tensors: comma-separated extents, outermost first: "m,k_stride" ("" any) */
  uint64_t min, max;  /* scalars: the closed range */
  int32_t required;   /* 1: must be given; 0: `fallback` when not given */
  uint64_t fallback;
  const char* doc;
  /* Since ABI 7 (appended; filled only in a struct that holds them). */
  const char* zero_means;    /* scalars: the dim a value of 0 stands for ("k", "n/2"); "" none */
  const char* in_place_of;   /* outputs: the input it may overwrite in place; "" none */
  uint64_t multiple_of;      /* scalars: a value must be a multiple of it; 0 any */
  const char* layout_by;     /* 2-D tensors: the scalar in [0, 1] whose 1 means column-major; "" */
  const char* column_stride; /* ...and the scalar giving the column stride in elements; "" */
} metrale_arg_info;

METRALE_API void metrale_arg_info_init(metrale_arg_info* info);
/* The op's argument at `index` in [0, arg_count), in the order the op takes them. */
METRALE_API metrale_status metrale_op_arg_get(const metrale_runtime* runtime, const char* op, size_t index,
                                              metrale_arg_info* info);

/* One argument of an op call by name: a tensor's address or a scalar's value. */
typedef struct metrale_op_arg {
  const char* name;
  uint64_t value;
} metrale_op_arg;

/* One guard's word on a role: reason NULL when the role was taken. */
typedef struct metrale_verdict {
  const char* role;
  const char* reason;
} metrale_verdict;

#define METRALE_MAX_VERDICTS 4

/* Which kernel ran and the ordered verdicts that led there (strings static). */
typedef struct metrale_op_pick {
  size_t struct_size;
  const char* op;     /* the op's name (not the alias called) */
  const char* role;   /* the role that ran: "twin" */
  const char* kernel; /* its kernel: "ssm_ba_gates_hopper" */
  int32_t forced;     /* 1 when the caller named the role */
  uint32_t verdict_count;
  metrale_verdict verdicts[METRALE_MAX_VERDICTS];
  uint32_t shape; /* ABI 6: the shape constant of the specialised variant that ran ("s6": 6); 0: the
                     kernel's generic form */
} metrale_op_pick;

METRALE_API void metrale_op_pick_init(metrale_op_pick* pick);
/* Binds the named arguments (every required one once, scalars inside their ranges), validates
 * (nothing launches on a refusal), guards, picks, logs once per slot and launches on `stream`.
 * The launch is asynchronous on CUDA and finished on return on the host backend. `pick` may be
 * NULL. */
METRALE_API metrale_status metrale_op_run(metrale_runtime* runtime, const char* op, const metrale_op_arg* args,
                                          size_t arg_count, uint64_t stream, metrale_op_pick* pick);
/* The same with a kernel forced by role name or alias ("parent", "shared", "twin", "mma", ...;
 * NULL or "" lets the guards pick): METRALE_ERROR_ARGUMENT, before anything launches, for a role
 * the op lacks or the target did not build. */
METRALE_API metrale_status metrale_op_run_role(metrale_runtime* runtime, const char* op, const char* role,
                                               const metrale_op_arg* args, size_t arg_count, uint64_t stream,
                                               metrale_op_pick* pick);

/* Does every first-call thing of `op` at the shape `shape` names (scalars, as metrale_op_explain
 * takes them; tensors may be left out) ahead, so that a call on a stream capturing into a CUDA
 * graph can run it: function attributes, occupancy answers, log slots, for the guards' pick and,
 * with `role` NULL or "", every role built (one role when named). Launches nothing. `prepared`
 * (may be NULL) receives how many kernel choices were made ready. A call on a capturing stream
 * runs only what this prepared and fails with METRALE_ERROR_CAPTURE otherwise. */
METRALE_API metrale_status metrale_op_prepare(metrale_runtime* runtime, const char* op, const char* role,
                                              const metrale_op_arg* shape, size_t arg_count, size_t* prepared);

/* ---- explain: the pick for a shape, as data -------------------------------------------- */

typedef struct metrale_explain_detail {
  const char* name; /* "tokens_per_tile", "cluster_blocks" */
  int64_t value;
} metrale_explain_detail;

#define METRALE_MAX_EXPLAIN_ROLES 8
#define METRALE_MAX_EXPLAIN_DETAILS 4

/* One guarded role at the shape. */
typedef struct metrale_role_explanation {
  const char* role;
  const char* kernel;
  int32_t present; /* built (no device: shipped) */
  int32_t runs;    /* it would run at this M */
  const char* reject;
  const char* lever; /* its [defaults] key; "" when none */
  int32_t requested;
  const char* lever_origin;
  int32_t has_min_m; /* 1: min_m is the smallest M it takes at this shape; 0: min_reason says why never */
  uint32_t min_m;
  const char* min_reason;
  uint32_t detail_count;
  metrale_explain_detail details[METRALE_MAX_EXPLAIN_DETAILS];
} metrale_role_explanation;

typedef struct metrale_op_explanation {
  size_t struct_size;
  const char* op;
  const char* kernel; /* what a call with this shape runs now ("" without m) */
  const char* role;
  uint32_t sm_count; /* the SM count the guards used */
  uint32_t role_count;
  metrale_role_explanation roles[METRALE_MAX_EXPLAIN_ROLES]; /* the first guard first */
  /* Since ABI 8 (appended; filled only in a struct that holds it). Where each role's (roles[i])
   * threshold came from: "tuning table F, row 1 (<device>, <date>; predicted M >= 264)",
   * "prediction", "prediction; tuning table F refused: <why>", or "" for a role whose guard has
   * no tunable threshold. */
  const char* threshold_origins[METRALE_MAX_EXPLAIN_ROLES];
} metrale_op_explanation;

METRALE_API void metrale_op_explanation_init(metrale_op_explanation* explanation);
/* The pick for a shape: `shape` names the op's scalars (tensors are not needed); m_given 0 asks
 * for each role's smallest M instead. No kernel launches. Strings live until the next call of
 * this function on the same thread. */
METRALE_API metrale_status metrale_op_explain(const metrale_runtime* runtime, const char* op,
                                              const metrale_op_arg* shape, size_t arg_count, int32_t m_given,
                                              metrale_op_explanation* explanation);

/* ---- the generic registry: an engine's own kernels ------------------------------------- */

/* Adds (or replaces) a named CUDA C++ source the runtime's registry compiles from. */
METRALE_API metrale_status metrale_registry_add_source(metrale_runtime* runtime, const char* name, const char* text);

typedef struct metrale_variant {
  size_t struct_size;
  const char* kernel;            /* a unique name with the params, e.g. "my_scale" */
  const char* source;            /* a source added before */
  const char* name_expression;   /* "my_kernels::scale<128>" */
  uint32_t block, lanes, groups; /* the template parameters (0: not taken), part of the key */
} metrale_variant;

METRALE_API void metrale_variant_init(metrale_variant* variant);
/* The same kernel and params again gives the same id. The name expression's placeholders
 * {block}, {lanes} and {groups} are replaced by the variant's values, as for the library's own
 * kernels ("scale<{block}>" with block 128: "scale<128>"); METRALE_ERROR_ARGUMENT for another
 * placeholder or one whose value is 0 (not taken). */
METRALE_API metrale_status metrale_registry_declare(metrale_runtime* runtime, const metrale_variant* variant,
                                                    uint32_t* id);
/* Builds every declared variant for the runtime's device and loads it, and returns when all
 * are loaded. A variant that fails to compile or load is not a failure of this call: its
 * handle stays 0 with a reason. On the host backend a kernel without a built-in host
 * instantiation (an engine's) is compiled by the system C++ compiler (CXX, else c++ on PATH)
 * and kept under cache_dir/host; without a compiler it stays absent with that reason. */
METRALE_API metrale_status metrale_registry_build(metrale_runtime* runtime);

typedef struct metrale_build_result {
  size_t struct_size;
  int32_t ok;
  const char* reason; /* NULL when ok; "compile failed: <first error>" otherwise */
  const char* log;    /* the compiler's log ("" when none) */
} metrale_build_result;

METRALE_API void metrale_build_result_init(metrale_build_result* result);
/* Compiles one variant with NVRTC for `arch` ("sm_90"; NULL: the runtime's target arch), no
 * device needed (ahead-of-time checks, the CLI's build). */
METRALE_API metrale_status metrale_registry_compile(metrale_runtime* runtime, uint32_t id, const char* arch,
                                                    metrale_build_result* result);
/* The variant's handle on the runtime's device; 0 when absent, and then *reason (if not
 * NULL) says why: no device, compile failed, load failed, not built, still building. A failed
 * compile's reason is "compile failed: <first error>" and then the compiler's whole log. */
METRALE_API metrale_status metrale_registry_handle(const metrale_runtime* runtime, uint32_t id, uint64_t* handle,
                                                   const char** reason);

/* One kernel argument: the address of the value and its size in bytes (1 to 16). */
typedef struct metrale_kernel_arg {
  const void* value;
  size_t size;
} metrale_kernel_arg;

typedef struct metrale_launch_config {
  size_t struct_size;
  uint32_t grid[3];
  uint32_t block[3];
  uint32_t dynamic_shared_bytes;
} metrale_launch_config;

METRALE_API void metrale_launch_config_init(metrale_launch_config* config);
/* Launches a handle from metrale_registry_handle with the arguments in the kernel's order. */
METRALE_API metrale_status metrale_launch(metrale_runtime* runtime, uint64_t handle,
                                          const metrale_launch_config* config, const metrale_kernel_arg* args,
                                          size_t arg_count, uint64_t stream);
/* Waits for `stream` on the runtime's device. */
METRALE_API metrale_status metrale_synchronize(metrale_runtime* runtime, uint64_t stream);

/* ---- log lines ------------------------------------------------------------------------- */

/* The library's log levels (METRALE_LOG_LEVEL filters them before any callback sees a line). */
typedef enum metrale_log_level {
  METRALE_LOG_TRACE = 0,
  METRALE_LOG_DEBUG = 1,
  METRALE_LOG_INFO = 2,
  METRALE_LOG_WARN = 3,
  METRALE_LOG_ERROR = 4,
  METRALE_LOG_CRITICAL = 5
} metrale_log_level;

/* One log line (no "[metrale level]" prefix, no newline), valid during the call. */
typedef void (*metrale_log_fn)(void* user, int32_t level, const char* line);

/* Sends every log line of the library (process-wide, every runtime) to `fn` instead of stderr;
 * NULL gives them back to stderr. `fn` is called on the thread that logs (a background build's
 * too), one line at a time, never concurrently. Set it before opening runtimes: a line logged
 * while the callback is being replaced goes to the old or the new one. */
METRALE_API void metrale_set_log_callback(metrale_log_fn fn, void* user);

#ifdef __cplusplus
}
#endif

#endif /* METRALE_METRALE_H */
