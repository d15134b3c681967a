//! The C ABI of include/metrale/metrale.h, by hand: the structs (repr(C), field for field)
//! and the functions this crate uses. C enums are `i32`. Each struct's size is checked at
//! run time against the library's own `struct_size` (see `crate::init`).
#![allow(non_camel_case_types)]

use std::os::raw::c_char;

pub type metrale_status = i32;
pub const METRALE_OK: metrale_status = 0;
pub const METRALE_BACKEND_HOST: i32 = 1;
pub const METRALE_KERNEL_AUTO: i32 = 0;

#[repr(C)]
pub struct metrale_runtime {
    _opaque: [u8; 0],
}

#[repr(C)]
pub struct metrale_runtime_options {
    pub struct_size: usize,
    pub backend: i32,
    pub device_ordinal: i32,
    pub target: *const c_char,
    pub cache_dir: *const c_char,
    pub ssm_ba_gates_hopper: i32,
    pub fp8_act_quant_hopper: i32,
    pub ssm_ba_gates_tensor_core: i32,
    pub host_sm_count: u32,
    pub host_worker_threads: u32,
    pub bundle_dirs: *const c_char,
}

#[repr(C)]
pub struct metrale_pick {
    pub kernel: *const c_char,
    pub twin: i32,
    pub reason: *const c_char,
    pub tensor_core: i32,
    pub tensor_core_reason: *const c_char,
}

#[repr(C)]
pub struct metrale_ba_gates_args {
    pub struct_size: usize,
    pub x: u64,
    pub weight: u64,
    pub a_log: u64,
    pub dt_bias: u64,
    pub gate_out: u64,
    pub m: u32,
    pub n: u32,
    pub k: u32,
    pub k_stride: u32,
    pub gate_stride: u32,
    pub nv: u32,
    pub vheads_per_group: u32,
    pub kernel: i32,
}

#[repr(C)]
pub struct metrale_fp8_quant_args {
    pub struct_size: usize,
    pub x: u64,
    pub q: u64,
    pub scales: u64,
    pub m: u32,
    pub k: u32,
    pub x_row_stride: u32,
    pub scale_layout: i32,
    pub m_aligned: u32,
    pub pow2_scales: i32,
    pub kernel: i32,
}

extern "C" {
    pub fn metrale_version() -> *const c_char;
    pub fn metrale_last_error() -> *const c_char;
    pub fn metrale_runtime_options_init(options: *mut metrale_runtime_options);
    pub fn metrale_runtime_open(
        options: *const metrale_runtime_options,
        out: *mut *mut metrale_runtime,
    ) -> metrale_status;
    pub fn metrale_runtime_close(runtime: *mut metrale_runtime);
    pub fn metrale_ba_gates_args_init(args: *mut metrale_ba_gates_args);
    pub fn metrale_ssm_ba_gates(
        runtime: *mut metrale_runtime,
        args: *const metrale_ba_gates_args,
        stream: u64,
        pick: *mut metrale_pick,
    ) -> metrale_status;
    pub fn metrale_fp8_quant_args_init(args: *mut metrale_fp8_quant_args);
    pub fn metrale_fp8_act_quant(
        runtime: *mut metrale_runtime,
        args: *const metrale_fp8_quant_args,
        stream: u64,
        pick: *mut metrale_pick,
    ) -> metrale_status;
}
