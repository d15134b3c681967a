//! A safe layer over metrale-jit's C ABI for a Rust engine: open a runtime on the host
//! backend, run both ops on slices (host memory is the host backend's device memory), read
//! which kernel ran and why. Invariants: every failed call is an `Error` carrying the
//! library's own message; the runtime is closed on drop; slices are checked for length here
//! and the library checks every shape before anything runs, so a refusal writes nothing.
pub mod ffi;

use std::ffi::{CStr, CString};
use std::fmt;
use std::mem::MaybeUninit;
use std::ptr;

/// A failed call: the C ABI's status and `metrale_last_error()`.
#[derive(Debug, Clone, PartialEq)]
pub struct Error {
    pub status: i32,
    pub message: String,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "metrale status {}: {}", self.status, self.message)
    }
}

impl std::error::Error for Error {}

fn text(p: *const std::os::raw::c_char) -> Option<String> {
    (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
}

fn check(status: ffi::metrale_status) -> Result<(), Error> {
    if status == ffi::METRALE_OK {
        return Ok(());
    }
    Err(Error { status, message: text(unsafe { ffi::metrale_last_error() }).unwrap_or_default() })
}

fn refuse(message: String) -> Error {
    Error { status: 1, message }
}

/// A C struct filled by its `*_init`, after checking that the library and this crate agree
/// on its size (its first field is `struct_size`).
fn init<T>(init_fn: unsafe extern "C" fn(*mut T)) -> T {
    let mut value = MaybeUninit::<T>::zeroed();
    unsafe { init_fn(value.as_mut_ptr()) };
    let value = unsafe { value.assume_init() };
    let size = unsafe { *(&value as *const T as *const usize) };
    assert_eq!(size, std::mem::size_of::<T>(), "ffi.rs and metrale.h disagree on a struct's layout");
    value
}

/// Which kernel an op ran; `reason` (the twin guard's) is None when the twin or the
/// tensor-core kernel ran; `tensor_core_reason` is the tensor-core guard's (BA gates only).
#[derive(Debug, Clone, PartialEq)]
pub struct Pick {
    pub kernel: String,
    pub twin: bool,
    pub reason: Option<String>,
    pub tensor_core: bool,
    pub tensor_core_reason: Option<String>,
}

/// A pick for the library to fill in.
fn no_pick() -> ffi::metrale_pick {
    ffi::metrale_pick {
        kernel: ptr::null(),
        twin: 0,
        reason: ptr::null(),
        tensor_core: 0,
        tensor_core_reason: ptr::null(),
    }
}

fn pick(p: &ffi::metrale_pick) -> Pick {
    Pick {
        kernel: text(p.kernel).unwrap_or_default(),
        twin: p.twin != 0,
        reason: text(p.reason),
        tensor_core: p.tensor_core != 0,
        tensor_core_reason: text(p.tensor_core_reason),
    }
}

/// The library's version ("0.1.0").
pub fn version() -> String {
    text(unsafe { ffi::metrale_version() }).unwrap_or_default()
}

/// The BA-gates problem: x bf16 bits [m][k], weight bf16 bits [n][k], a_log and dt_bias
/// [n / 2]; gate_out [m][n] (gate in the first n / 2 columns, beta after).
pub struct BaGates<'a> {
    pub x: &'a [u16],
    pub weight: &'a [u16],
    pub a_log: &'a [f32],
    pub dt_bias: &'a [f32],
    pub m: u32,
    pub n: u32,
    pub k: u32,
    pub vheads_per_group: u32,
}

pub struct Runtime {
    raw: *mut ffi::metrale_runtime,
}

impl Runtime {
    /// A runtime on the host backend (the kernel templates run on the CPU) for `target`.
    pub fn open_host(target: &str) -> Result<Runtime, Error> {
        let target = CString::new(target).map_err(|_| refuse("target: contains a NUL byte".into()))?;
        let mut options = init(ffi::metrale_runtime_options_init);
        options.backend = ffi::METRALE_BACKEND_HOST;
        options.target = target.as_ptr();
        let mut raw = ptr::null_mut();
        check(unsafe { ffi::metrale_runtime_open(&options, &mut raw) })?;
        Ok(Runtime { raw })
    }

    pub fn ssm_ba_gates(&mut self, p: &BaGates, gate_out: &mut [f32]) -> Result<Pick, Error> {
        let (m, n, k) = (p.m as usize, p.n as usize, p.k as usize);
        let lengths = [("x", p.x.len(), m * k), ("weight", p.weight.len(), n * k), ("gate_out", gate_out.len(), m * n)];
        for (name, got, want) in lengths {
            if got != want {
                return Err(refuse(format!("{name}: {got} elements, the shape needs {want}")));
            }
        }
        if p.a_log.len() != n / 2 || p.dt_bias.len() != n / 2 {
            return Err(refuse(format!("a_log and dt_bias: need n / 2 = {} elements each", n / 2)));
        }
        let mut args = init(ffi::metrale_ba_gates_args_init);
        args.x = p.x.as_ptr() as u64;
        args.weight = p.weight.as_ptr() as u64;
        args.a_log = p.a_log.as_ptr() as u64;
        args.dt_bias = p.dt_bias.as_ptr() as u64;
        args.gate_out = gate_out.as_mut_ptr() as u64;
        (args.m, args.n, args.k, args.k_stride, args.gate_stride) = (p.m, p.n, p.k, p.k, p.n);
        (args.nv, args.vheads_per_group, args.kernel) = (p.n / 2, p.vheads_per_group, ffi::METRALE_KERNEL_AUTO);
        let mut ran = no_pick();
        check(unsafe { ffi::metrale_ssm_ba_gates(self.raw, &args, 0, &mut ran) })?;
        Ok(pick(&ran))
    }

    /// x bf16 bits [m][k] -> q (e4m3 bits [m][k]) and row-major scales [m][k / 128].
    pub fn fp8_act_quant(&mut self, x: &[u16], m: u32, k: u32, q: &mut [u8], scales: &mut [f32]) -> Result<Pick, Error> {
        let (mu, ku) = (m as usize, k as usize);
        if x.len() != mu * ku || q.len() != mu * ku || scales.len() != mu * (ku / 128) {
            return Err(refuse(format!("x, q: need {} elements, scales {}", mu * ku, mu * (ku / 128))));
        }
        let mut args = init(ffi::metrale_fp8_quant_args_init);
        args.x = x.as_ptr() as u64;
        args.q = q.as_mut_ptr() as u64;
        args.scales = scales.as_mut_ptr() as u64;
        (args.m, args.k, args.x_row_stride) = (m, k, k);
        let mut ran = no_pick();
        check(unsafe { ffi::metrale_fp8_act_quant(self.raw, &args, 0, &mut ran) })?;
        Ok(pick(&ran))
    }
}

impl Drop for Runtime {
    fn drop(&mut self) {
        unsafe { ffi::metrale_runtime_close(self.raw) };
    }
}
