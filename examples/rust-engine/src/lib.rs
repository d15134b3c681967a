//! A safe layer over metrale-jit's C ABI for a Rust engine: open a runtime (on the host
//! backend here), call any op it serves by name with named arguments (`Runtime::run`,
//! `Runtime::run_role`), list its ops and levers and explain a pick (`catalog`), and read which
//! kernel ran and the ordered verdicts that led there. The two seed ops also have thin typed
//! helpers over `run` (`seed_ops`). Invariants: every failed call is an `Error` carrying the
//! library's own status and message, and the CUDA error behind it when the driver failed
//! (`error`); every string is copied out of the library before the call returns; the runtime is
//! closed on drop (or by `close`, after which every call is the library's closed error,
//! `ErrorKind::Closed`, until drop frees the handle); the library checks every argument before anything runs, so a refusal writes nothing.
pub mod catalog;
pub mod error;
pub mod ffi;
pub mod seed_ops;

pub use catalog::{ArgInfo, ArgKind, Explanation, Lever, OpInfo, RoleExplanation, RoleInfo};
pub(crate) use error::{check, refuse};
pub use error::{last_error, CudaError, Error, ErrorKind, Result};
pub use seed_ops::BaGates;

use std::ffi::{CStr, CString};
use std::mem::MaybeUninit;
use std::os::raw::c_char;
use std::ptr;

pub(crate) fn text(p: *const c_char) -> Option<String> {
    (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
}

pub(crate) fn c_string(text: &str, what: &str) -> Result<CString> {
    CString::new(text).map_err(|_| refuse(format!("{what} '{text}' contains a NUL byte")))
}

/// A C struct filled by its `*_init`, after checking that the library and this crate agree
/// on its size (its first field is `struct_size`).
pub(crate) fn init<T>(init_fn: unsafe extern "C" fn(*mut T)) -> T {
    let mut value = MaybeUninit::<T>::zeroed();
    unsafe { init_fn(value.as_mut_ptr()) };
    let value = unsafe { value.assume_init() };
    let size = unsafe { *(&value as *const T as *const usize) };
    assert_eq!(size, std::mem::size_of::<T>(), "ffi.rs and metrale.h disagree on a struct's layout");
    value
}

/// Named arguments as the C ABI takes them; the names live in `_names` while `args` is used.
pub(crate) struct CArgs {
    _names: Vec<CString>,
    pub args: Vec<ffi::metrale_op_arg>,
}

pub(crate) fn c_args(named: &[(&str, u64)]) -> Result<CArgs> {
    let names = named.iter().map(|(name, _)| c_string(name, "argument")).collect::<Result<Vec<_>>>()?;
    let args =
        names.iter().zip(named).map(|(name, (_, value))| ffi::metrale_op_arg { name: name.as_ptr(), value: *value });
    Ok(CArgs { args: args.collect(), _names: names })
}

/// The address of a slice as an op argument (host memory is the host backend's device memory).
pub fn addr<T>(slice: &[T]) -> u64 {
    slice.as_ptr() as u64
}

/// The address of a slice the op writes.
pub fn addr_mut<T>(slice: &mut [T]) -> u64 {
    slice.as_mut_ptr() as u64
}

/// One guard's word on a role: `reason` None when the role was taken.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    pub role: String,
    pub reason: Option<String>,
}

/// Which kernel an op call ran (the op's name even when called by alias, the role and its
/// kernel) and the verdicts that led there, the first guard first.
#[derive(Debug, Clone, PartialEq)]
pub struct Pick {
    pub op: String,
    pub role: String,
    pub kernel: String,
    pub forced: bool,
    pub verdicts: Vec<Verdict>,
    /// The shape constant of the specialised variant that ran (6 for "s6"); 0: the generic form.
    pub shape: u32,
}

impl Pick {
    /// The verdict on `role`, if a guard spoke of it.
    pub fn verdict(&self, role: &str) -> Option<&Verdict> {
        self.verdicts.iter().find(|v| v.role == role)
    }

    fn from_c(p: &ffi::metrale_op_pick) -> Pick {
        let count = (p.verdict_count as usize).min(ffi::METRALE_MAX_VERDICTS);
        Pick {
            op: text(p.op).unwrap_or_default(),
            role: text(p.role).unwrap_or_default(),
            kernel: text(p.kernel).unwrap_or_default(),
            forced: p.forced != 0,
            verdicts: p.verdicts[..count]
                .iter()
                .map(|v| Verdict { role: text(v.role).unwrap_or_default(), reason: text(v.reason) })
                .collect(),
            shape: p.shape,
        }
    }
}

/// The library's version ("0.1.0").
pub fn version() -> String {
    text(unsafe { ffi::metrale_version() }).unwrap_or_default()
}

/// The ABI version of the library loaded; this crate is written against `ffi::METRALE_ABI_VERSION`.
pub fn abi_version() -> u32 {
    unsafe { ffi::metrale_abi_version() }
}

pub struct Runtime {
    pub(crate) raw: *mut ffi::metrale_runtime,
}

impl Runtime {
    /// A runtime on the host backend (the kernel templates run on the CPU) for `target`.
    pub fn open_host(target: &str) -> Result<Runtime> {
        Runtime::open_host_with(target, &[])
    }

    /// The same with levers set by [defaults] key ("fp8_act_quant_hopper", on or off), over the
    /// target file and the environment: they report provenance "options". A key no op declares
    /// fails the open with the library's config error naming it.
    pub fn open_host_with(target: &str, levers: &[(&str, bool)]) -> Result<Runtime> {
        if abi_version() != ffi::METRALE_ABI_VERSION {
            return Err(refuse(format!(
                "libmetrale.so speaks ABI {}, this crate {}",
                abi_version(),
                ffi::METRALE_ABI_VERSION
            )));
        }
        let target = c_string(target, "target")?;
        let names = levers.iter().map(|(name, _)| c_string(name, "lever")).collect::<Result<Vec<_>>>()?;
        let overrides: Vec<ffi::metrale_lever_override> = names
            .iter()
            .zip(levers)
            .map(|(name, (_, on))| ffi::metrale_lever_override { name: name.as_ptr(), value: i32::from(*on) })
            .collect();
        let mut options = init(ffi::metrale_runtime_options_init);
        options.backend = ffi::METRALE_BACKEND_HOST;
        options.target = target.as_ptr();
        options.levers = if overrides.is_empty() { ptr::null() } else { overrides.as_ptr() };
        options.lever_count = overrides.len();
        let mut raw = ptr::null_mut();
        check(unsafe { ffi::metrale_runtime_open(&options, &mut raw) })?;
        Ok(Runtime { raw })
    }

    /// Closes the runtime now: background builds finish (a build's failure is the error), then
    /// its kernels are freed. The handle stays until drop, so every later call returns an error of
    /// `ErrorKind::Closed` ("this Runtime is closed"); a second close is Ok.
    pub fn close(&mut self) -> Result<()> {
        check(unsafe { ffi::metrale_runtime_shutdown(self.raw) })
    }

    /// Calls `op` (its name or an alias) with its arguments by the names it declares
    /// (`catalog`'s `OpInfo::args`): tensors as addresses (`addr`, `addr_mut`), scalars as values.
    /// The library binds them (every required one once, scalars inside their ranges), validates,
    /// guards, picks, logs once per slot and launches on `stream`.
    ///
    /// # Safety
    /// Every tensor address must point at memory of the runtime's device (host memory on the host
    /// backend) that holds the extent the op's rules give it for these sizes, and the outputs must
    /// not be read or written elsewhere until the launch has finished (on return, on the host
    /// backend). The library checks shapes, strides, NULLs and alignment, not extents.
    pub unsafe fn run(&mut self, op: &str, args: &[(&str, u64)], stream: u64) -> Result<Pick> {
        self.run_role(op, "", args, stream)
    }

    /// Does every first-call thing of `op` at the shape `shape` names (its scalars; tensors not
    /// needed) ahead, so that a call on a stream capturing into a CUDA graph can run it (`role`
    /// "": the guards' pick and every role built). A captured call of a shape not prepared
    /// fails with `METRALE_ERROR_CAPTURE`. Returns how many kernel choices were made ready.
    pub fn prepare(&mut self, op: &str, role: &str, shape: &[(&str, u64)]) -> Result<usize> {
        let op = c_string(op, "op")?;
        let role = c_string(role, "role")?;
        let named = c_args(shape)?;
        let mut prepared = 0usize;
        check(unsafe {
            ffi::metrale_op_prepare(
                self.raw,
                op.as_ptr(),
                if role.is_empty() { ptr::null() } else { role.as_ptr() },
                named.args.as_ptr(),
                named.args.len(),
                &mut prepared,
            )
        })?;
        Ok(prepared)
    }

    /// `run` with a kernel forced by role name or alias ("parent", "twin", "shared", "mma", ...;
    /// "" lets the guards pick). A role the op lacks, or one the target did not build, is refused
    /// before anything launches.
    ///
    /// # Safety
    /// As `run`.
    pub unsafe fn run_role(&mut self, op: &str, role: &str, args: &[(&str, u64)], stream: u64) -> Result<Pick> {
        let op = c_string(op, "op")?;
        let named = c_args(args)?;
        let role = c_string(role, "role")?;
        let (args, count) = (named.args.as_ptr(), named.args.len());
        let mut ran = init(ffi::metrale_op_pick_init);
        check(if role.is_empty() {
            ffi::metrale_op_run(self.raw, op.as_ptr(), args, count, stream, &mut ran)
        } else {
            ffi::metrale_op_run_role(self.raw, op.as_ptr(), role.as_ptr(), args, count, stream, &mut ran)
        })?;
        Ok(Pick::from_c(&ran))
    }
}

impl Drop for Runtime {
    fn drop(&mut self) {
        unsafe { ffi::metrale_runtime_close(self.raw) };
    }
}
