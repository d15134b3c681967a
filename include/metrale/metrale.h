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
 * - Strings handed out are owned by the library: those in metrale_runtime_info live until the
 *   runtime is closed; kernel names and reasons in picks and explanations are static; the
 *   others (reasons of registry calls) live until the next call of the same function on the
 *   same thread.
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

/* Bumped when a struct grows or a function changes meaning. */
#define METRALE_ABI_VERSION 1

typedef enum metrale_status {
  METRALE_OK = 0,
  METRALE_ERROR_ARGUMENT = 1,  /* a shape, stride, pointer or name no kernel can take */
  METRALE_ERROR_CONFIG = 2,    /* a HARDWARE.toml, target name or environment value is malformed */
  METRALE_ERROR_BACKEND = 3,   /* the driver or the host backend refused an operation */
  METRALE_ERROR_NO_DEVICE = 4, /* the runtime has no device (the reason says why) */
  METRALE_ERROR_VERSION = 5,   /* a struct_size this library does not understand */
  METRALE_ERROR_INTERNAL = 6   /* anything else (out of memory, a bug): the message says what */
} metrale_status;

/* "0.1.0": the library's version. */
METRALE_API const char* metrale_version(void);
/* METRALE_ABI_VERSION of the library actually loaded. */
METRALE_API uint32_t metrale_abi_version(void);
/* "ok", "argument", "config", "backend", "no device", "version", "internal". */
METRALE_API const char* metrale_status_name(metrale_status status);
/* The message of the calling thread's last failure ("" when the last call succeeded). */
METRALE_API const char* metrale_last_error(void);

/* ---- opening a runtime --------------------------------------------------------------- */

typedef struct metrale_runtime metrale_runtime;

typedef enum metrale_backend {
  METRALE_BACKEND_AUTO = 0, /* the CUDA device when there is one, else a runtime with no device */
  METRALE_BACKEND_HOST = 1, /* the host backend: the same kernel templates, run on the CPU */
  METRALE_BACKEND_CUDA = 2  /* the CUDA device; a runtime with no device when there is none */
} metrale_backend;

typedef enum metrale_lever_setting {
  METRALE_LEVER_DEFAULT = 0, /* the target's HARDWARE.toml, then the environment variable */
  METRALE_LEVER_ON = 1,
  METRALE_LEVER_OFF = 2
} metrale_lever_setting;

typedef struct metrale_runtime_options {
  size_t struct_size;
  metrale_backend backend;
  int32_t device_ordinal;
  const char* target;    /* NULL: the device's target (hopper without a device) */
  const char* cache_dir; /* NULL: METRALE_CACHE_DIR, XDG_CACHE_HOME, ~/.cache/metrale */
  metrale_lever_setting ssm_ba_gates_hopper;
  metrale_lever_setting fp8_act_quant_hopper;
  metrale_lever_setting ssm_ba_gates_tensor_core;
  uint32_t host_sm_count;       /* the SM count the guards see on the host backend; 0: 132 */
  uint32_t host_worker_threads; /* 0: the hardware threads */
  /* Ahead-of-time bundles (`metrale-jit build --bundle DIR`), ':'-separated, looked in before
   * those of METRALE_BUNDLE_DIR, the disk cache and NVRTC. NULL or "": none but the variable's.
   * Added in version 2 of this struct: a caller's struct_size without it reads as NULL. */
  const char* bundle_dirs;
} metrale_runtime_options;

/* Defaults: backend auto, device 0, everything else from the target and the environment. */
METRALE_API void metrale_runtime_options_init(metrale_runtime_options* options);

/* Opens a runtime (options may be NULL for the defaults). A machine without a GPU is not a
 * failure: the runtime opens with has_device = 0 and the ops fail with METRALE_ERROR_NO_DEVICE. */
METRALE_API metrale_status metrale_runtime_open(const metrale_runtime_options* options, metrale_runtime** out);
/* Waits for background kernel builds (a failure there becomes the last error) and frees
 * everything; NULL is ignored. */
METRALE_API void metrale_runtime_close(metrale_runtime* runtime);

/* ---- describing it ------------------------------------------------------------------- */

typedef struct metrale_lever_info {
  const char* name;       /* "ssm_ba_gates_hopper" */
  int32_t value;          /* 1 on, 0 off */
  const char* provenance; /* "built-in", "file", "environment", "options" */
  const char* origin;     /* the file, "METRALE_SSM_BA_GATES_HOPPER=off", or the option */
} metrale_lever_info;

#define METRALE_LEVER_COUNT 3

typedef struct metrale_runtime_info {
  size_t struct_size;
  int32_t has_device;
  const char* device;           /* "host (2 worker threads)", "NVIDIA H200 (...)" or "no device" */
  const char* no_device_reason; /* "" when there is a device */
  const char* target;           /* "hopper" */
  const char* target_source;    /* the HARDWARE.toml it came from */
  const char* arch;             /* "sm_90" ("" for generic without a device) */
  uint32_t sm_count;            /* what the guards use */
  metrale_lever_info levers[METRALE_LEVER_COUNT];
} metrale_runtime_info;

METRALE_API void metrale_runtime_info_init(metrale_runtime_info* info);
METRALE_API metrale_status metrale_runtime_describe(const metrale_runtime* runtime, metrale_runtime_info* info);

/* ---- the ops --------------------------------------------------------------------------- */

typedef enum metrale_kernel_choice {
  METRALE_KERNEL_AUTO = 0,   /* the guards pick */
  METRALE_KERNEL_TWIN = 1,   /* the Hopper twin, whatever the guard says (an error when absent) */
  METRALE_KERNEL_PARENT = 2, /* the parent (BA gates) or shared kernel (FP8) */
  METRALE_KERNEL_MMA = 3     /* the tensor-core kernel (BA gates only; an error when absent) */
} metrale_kernel_choice;

/* Which kernel ran and why. */
typedef struct metrale_pick {
  const char* kernel;             /* "ssm_ba_gates_mma", "ssm_ba_gates_hopper", "fp8_act_quant", ... */
  int32_t twin;                   /* 1 when the twin ran */
  const char* reason;             /* NULL when the twin or the tensor-core kernel ran; the twin
                                     guard's reason (or "forced") otherwise */
  int32_t tensor_core;            /* 1 when the tensor-core kernel (ssm_ba_gates_mma) ran */
  const char* tensor_core_reason; /* BA gates: why the tensor-core kernel did not run (its guard
                                     comes first); NULL when it ran, or for FP8 */
} metrale_pick;

/* x: bf16 [m][k_stride]; weight: bf16 [n][k]; a_log, dt_bias: fp32 [nv];
 * gate_out: fp32 [m][gate_stride], columns [0, nv) gate and [nv, 2 nv) beta. */
typedef struct metrale_ba_gates_args {
  size_t struct_size;
  uint64_t x, weight, a_log, dt_bias, gate_out;
  uint32_t m, n, k, k_stride, gate_stride, nv, vheads_per_group;
  metrale_kernel_choice kernel;
} metrale_ba_gates_args;

METRALE_API void metrale_ba_gates_args_init(metrale_ba_gates_args* args);
/* Validates (nothing launches on a refusal), guards, picks, logs once per slot, launches on
 * `stream`. The launch is asynchronous on CUDA and finished on return on the host backend. */
METRALE_API metrale_status metrale_ssm_ba_gates(metrale_runtime* runtime, const metrale_ba_gates_args* args,
                                                uint64_t stream, metrale_pick* pick);

typedef enum metrale_scale_layout {
  METRALE_SCALES_ROW_MAJOR = 0,   /* scales[m][k / 128] */
  METRALE_SCALES_COLUMN_MAJOR = 1 /* scale (t, g) at g * m_aligned + t (m_aligned % 4 == 0) */
} metrale_scale_layout;

/* x: bf16 rows of x_row_stride elements (the first k used); q: e4m3fn bytes [m][k]. */
typedef struct metrale_fp8_quant_args {
  size_t struct_size;
  uint64_t x, q, scales;
  uint32_t m, k, x_row_stride;
  metrale_scale_layout scale_layout;
  uint32_t m_aligned;  /* column-major only */
  int32_t pow2_scales; /* 1: power-of-two (UE8M0) scales */
  metrale_kernel_choice kernel;
} metrale_fp8_quant_args;

METRALE_API void metrale_fp8_quant_args_init(metrale_fp8_quant_args* args);
METRALE_API metrale_status metrale_fp8_act_quant(metrale_runtime* runtime, const metrale_fp8_quant_args* args,
                                                 uint64_t stream, metrale_pick* pick);

/* ---- explain: the pick for a shape, as data -------------------------------------------- */

typedef struct metrale_explanation {
  size_t struct_size;
  metrale_pick pick;           /* what a call with this shape would run now */
  int32_t requested;           /* the lever */
  const char* lever_origin;    /* where the lever's value came from (static until close) */
  uint32_t sm_count;           /* the SM count the guard used */
  int32_t twin_present;        /* the twin's handle is present (no device: the target ships it) */
  int32_t parent_present;      /* the same for the parent / shared kernel */
  uint32_t twin_min_m;         /* the smallest M the twin takes at this shape; 0 when it never does */
  const char* twin_min_reason; /* NULL, or why the twin never runs at this shape */
  /* BA gates only (zero for FP8): the tensor-core kernel, whose guard comes first. */
  int32_t tensor_core_requested;      /* the ssm_ba_gates_tensor_core lever */
  int32_t tensor_core_present;        /* ssm_ba_gates_mma is built (no device: shipped) */
  uint32_t tensor_core_min_m;         /* the smallest M it takes at this shape; 0 when it never does */
  const char* tensor_core_min_reason; /* NULL, or why it never runs at this shape */
} metrale_explanation;

METRALE_API void metrale_explanation_init(metrale_explanation* explanation);
/* k_stride 0 means k. No kernel launches and no shape checks beyond the guard's. */
METRALE_API metrale_status metrale_explain_ssm_ba_gates(const metrale_runtime* runtime, uint32_t m, uint32_t n,
                                                        uint32_t k, uint32_t k_stride,
                                                        metrale_explanation* explanation);
METRALE_API metrale_status metrale_explain_fp8_act_quant(const metrale_runtime* runtime, uint32_t m, uint32_t k,
                                                         metrale_explanation* explanation);

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
/* The same kernel and params again gives the same id. */
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
 * NULL) says why: no device, compile failed, load failed, not built, still building. */
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

#ifdef __cplusplus
}
#endif

#endif /* METRALE_METRALE_H */
