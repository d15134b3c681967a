//! The C ABI of include/metrale/metrale.h (ABI version 8), by hand: the structs (repr(C), field
//! for field) and the functions this crate uses. C enums are `i32`. Each struct with a
//! `struct_size` is checked at run time against the library's own (see `crate::init`); the
//! embedded arrays' lengths are the header's `METRALE_MAX_*`.
#![allow(non_camel_case_types)]

use std::os::raw::c_char;

pub type metrale_status = i32;
pub const METRALE_OK: metrale_status = 0;
pub const METRALE_ERROR_ARGUMENT: metrale_status = 1;
pub const METRALE_ERROR_CONFIG: metrale_status = 2;
pub const METRALE_ERROR_BACKEND: metrale_status = 3;
pub const METRALE_ERROR_NO_DEVICE: metrale_status = 4;
pub const METRALE_ERROR_VERSION: metrale_status = 5;
pub const METRALE_ERROR_INTERNAL: metrale_status = 6;
pub const METRALE_ERROR_CAPTURE: metrale_status = 7;
pub const METRALE_ERROR_CLOSED: metrale_status = 8;
pub const METRALE_ABI_VERSION: u32 = 8;
pub const METRALE_BACKEND_HOST: i32 = 1;
pub const METRALE_ARG_INPUT: i32 = 0;
pub const METRALE_ARG_OUTPUT: i32 = 1;
pub const METRALE_ARG_SCALAR: i32 = 2;
pub const METRALE_MAX_VERDICTS: usize = 4;
pub const METRALE_MAX_EXPLAIN_ROLES: usize = 8;
pub const METRALE_MAX_EXPLAIN_DETAILS: usize = 4;

#[repr(C)]
pub struct metrale_error_info {
    pub struct_size: usize,
    pub status: metrale_status,
    pub cuda_code: i32,
    pub cuda_name: *const c_char,
    pub sticky: i32,
    pub refusal: i32,
    pub message: *const c_char,
}

#[repr(C)]
pub struct metrale_runtime {
    _opaque: [u8; 0],
}

#[repr(C)]
pub struct metrale_lever_override {
    pub name: *const c_char,
    pub value: i32,
}

#[repr(C)]
pub struct metrale_runtime_options {
    pub struct_size: usize,
    pub backend: i32,
    pub device_ordinal: i32,
    pub target: *const c_char,
    pub cache_dir: *const c_char,
    pub levers: *const metrale_lever_override,
    pub lever_count: usize,
    pub host_sm_count: u32,
    pub host_worker_threads: u32,
    pub bundle_dirs: *const c_char,
    pub verify: i32,
    pub verify_time_limit_ms: u32,
    pub shapes: *const c_char,
    pub bundle_pubkey: *const c_char,
    pub remote_cache: *const c_char,
    pub compile_timeout_s: f64,
    pub op_specs: *const *const c_char, // ABI 6: ops declared as data (left empty by this crate)
    pub op_spec_count: usize,
    pub tuning_table: *const c_char, // ABI 8: a tuning table's path (NULL: METRALE_TUNING_TABLE; "": none)
}

#[repr(C)]
pub struct metrale_runtime_info {
    pub struct_size: usize,
    pub has_device: i32,
    pub device: *const c_char,
    pub no_device_reason: *const c_char,
    pub target: *const c_char,
    pub target_source: *const c_char,
    pub arch: *const c_char,
    pub sm_count: u32,
    pub lever_count: usize,
    pub op_count: usize,
    pub verify: i32,
}

#[repr(C)]
pub struct metrale_lever_info {
    pub struct_size: usize,
    pub name: *const c_char,
    pub value: i32,
    pub provenance: *const c_char,
    pub origin: *const c_char,
    pub env_var: *const c_char,
}

#[repr(C)]
pub struct metrale_op_info {
    pub struct_size: usize,
    pub name: *const c_char,
    pub aliases: *const c_char,
    pub summary: *const c_char,
    pub role_count: usize,
    pub arg_count: usize,
}

#[repr(C)]
pub struct metrale_role_info {
    pub struct_size: usize,
    pub role: *const c_char,
    pub kernel: *const c_char,
    pub aliases: *const c_char,
    pub lever: *const c_char,
    pub shipped: i32,
    pub present: i32,
}

#[repr(C)]
pub struct metrale_arg_info {
    pub struct_size: usize,
    pub name: *const c_char,
    pub kind: i32,
    pub dtype: *const c_char,
    pub alignment: u32,
    pub dims: *const c_char,
    pub min: u64,
    pub max: u64,
    pub required: i32,
    pub fallback: u64,
    pub doc: *const c_char,
    // ABI 7
    pub zero_means: *const c_char,
    pub in_place_of: *const c_char,
    pub multiple_of: u64,
    pub layout_by: *const c_char,
    pub column_stride: *const c_char,
}

#[repr(C)]
pub struct metrale_op_arg {
    pub name: *const c_char,
    pub value: u64,
}

#[repr(C)]
pub struct metrale_verdict {
    pub role: *const c_char,
    pub reason: *const c_char,
}

#[repr(C)]
pub struct metrale_op_pick {
    pub struct_size: usize,
    pub op: *const c_char,
    pub role: *const c_char,
    pub kernel: *const c_char,
    pub forced: i32,
    pub verdict_count: u32,
    pub verdicts: [metrale_verdict; METRALE_MAX_VERDICTS],
    pub shape: u32,
}

#[repr(C)]
pub struct metrale_explain_detail {
    pub name: *const c_char,
    pub value: i64,
}

#[repr(C)]
pub struct metrale_role_explanation {
    pub role: *const c_char,
    pub kernel: *const c_char,
    pub present: i32,
    pub runs: i32,
    pub reject: *const c_char,
    pub lever: *const c_char,
    pub requested: i32,
    pub lever_origin: *const c_char,
    pub has_min_m: i32,
    pub min_m: u32,
    pub min_reason: *const c_char,
    pub detail_count: u32,
    pub details: [metrale_explain_detail; METRALE_MAX_EXPLAIN_DETAILS],
}

#[repr(C)]
pub struct metrale_op_explanation {
    pub struct_size: usize,
    pub op: *const c_char,
    pub kernel: *const c_char,
    pub role: *const c_char,
    pub sm_count: u32,
    pub role_count: u32,
    pub roles: [metrale_role_explanation; METRALE_MAX_EXPLAIN_ROLES],
    pub threshold_origins: [*const c_char; METRALE_MAX_EXPLAIN_ROLES], // ABI 8: by role, as roles
}

extern "C" {
    pub fn metrale_version() -> *const c_char;
    pub fn metrale_abi_version() -> u32;
    pub fn metrale_last_error() -> *const c_char;
    pub fn metrale_error_info_init(info: *mut metrale_error_info);
    pub fn metrale_last_error_info(info: *mut metrale_error_info) -> metrale_status;
    pub fn metrale_runtime_options_init(options: *mut metrale_runtime_options);
    pub fn metrale_runtime_open(
        options: *const metrale_runtime_options,
        out: *mut *mut metrale_runtime,
    ) -> metrale_status;
    pub fn metrale_runtime_shutdown(runtime: *mut metrale_runtime) -> metrale_status;
    pub fn metrale_runtime_close(runtime: *mut metrale_runtime);
    pub fn metrale_runtime_info_init(info: *mut metrale_runtime_info);
    pub fn metrale_runtime_describe(runtime: *const metrale_runtime, info: *mut metrale_runtime_info)
        -> metrale_status;
    pub fn metrale_runtime_tuning_status(runtime: *const metrale_runtime) -> *const c_char;
    pub fn metrale_runtime_tune(
        runtime: *mut metrale_runtime,
        ops: *const c_char,
        m: *const u32,
        m_count: usize,
        n: *const u32,
        n_count: usize,
        k: *const u32,
        k_count: usize,
        repeats: u32,
        out_path: *const c_char,
    ) -> metrale_status;
    pub fn metrale_lever_info_init(info: *mut metrale_lever_info);
    pub fn metrale_lever_get(
        runtime: *const metrale_runtime,
        index: usize,
        info: *mut metrale_lever_info,
    ) -> metrale_status;
    pub fn metrale_lever_find(
        runtime: *const metrale_runtime,
        name: *const c_char,
        info: *mut metrale_lever_info,
    ) -> metrale_status;
    pub fn metrale_op_info_init(info: *mut metrale_op_info);
    pub fn metrale_op_get(runtime: *const metrale_runtime, index: usize, info: *mut metrale_op_info) -> metrale_status;
    pub fn metrale_op_find(
        runtime: *const metrale_runtime,
        op: *const c_char,
        info: *mut metrale_op_info,
    ) -> metrale_status;
    pub fn metrale_role_info_init(info: *mut metrale_role_info);
    pub fn metrale_op_role(
        runtime: *const metrale_runtime,
        op: *const c_char,
        index: usize,
        info: *mut metrale_role_info,
    ) -> metrale_status;
    pub fn metrale_arg_info_init(info: *mut metrale_arg_info);
    pub fn metrale_op_arg_get(
        runtime: *const metrale_runtime,
        op: *const c_char,
        index: usize,
        info: *mut metrale_arg_info,
    ) -> metrale_status;
    pub fn metrale_op_pick_init(pick: *mut metrale_op_pick);
    pub fn metrale_op_run(
        runtime: *mut metrale_runtime,
        op: *const c_char,
        args: *const metrale_op_arg,
        arg_count: usize,
        stream: u64,
        pick: *mut metrale_op_pick,
    ) -> metrale_status;
    pub fn metrale_op_prepare(
        runtime: *mut metrale_runtime,
        op: *const c_char,
        role: *const c_char,
        shape: *const metrale_op_arg,
        arg_count: usize,
        prepared: *mut usize,
    ) -> metrale_status;
    pub fn metrale_op_run_role(
        runtime: *mut metrale_runtime,
        op: *const c_char,
        role: *const c_char,
        args: *const metrale_op_arg,
        arg_count: usize,
        stream: u64,
        pick: *mut metrale_op_pick,
    ) -> metrale_status;
    pub fn metrale_op_explanation_init(explanation: *mut metrale_op_explanation);
    pub fn metrale_op_explain(
        runtime: *const metrale_runtime,
        op: *const c_char,
        shape: *const metrale_op_arg,
        arg_count: usize,
        m_given: i32,
        explanation: *mut metrale_op_explanation,
    ) -> metrale_status;
}
