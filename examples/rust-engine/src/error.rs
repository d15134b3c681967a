//! A failed call as data: the C ABI's status and message and, when the CUDA driver failed, its
//! CUresult, its name and whether the CUDA context survived (`metrale_last_error_info`). Read on
//! the failing call's thread right after it (the library's last error is per thread).
//! Invariants: `cuda` is Some exactly when the library reports a CUresult (never on the host
//! backend); sticky and refusal are the library's word, never guessed here; reading the last
//! error does not clear it.
use std::fmt;

use crate::{ffi, init, text};

/// The CUDA driver's part of a failure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CudaError {
    /// The CUresult (700: an illegal address).
    pub code: i32,
    /// cuGetErrorName's ("CUDA_ERROR_ILLEGAL_ADDRESS"), or "CUresult <code>".
    pub name: String,
    /// The CUDA context is unusable: every later call fails; close the runtime, restart the process.
    pub sticky: bool,
    /// The driver refused the call: nothing ran and the runtime stays usable.
    pub refusal: bool,
}

/// What kind of failure an `Error` is, by its status (`Error::kind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// A shape, stride, pointer or name no kernel can take.
    Argument,
    /// A HARDWARE.toml, target name or environment value is malformed.
    Config,
    /// The driver or the host backend refused an operation.
    Backend,
    /// The runtime has no device.
    NoDevice,
    /// A struct size the library does not understand.
    Version,
    /// Anything else (out of memory, a bug).
    Internal,
    /// A call on a capturing stream found nothing prepared.
    Capture,
    /// The runtime was closed (`Runtime::close`): nothing ran.
    Closed,
    /// A status this crate does not know.
    Other(i32),
}

/// A failed call: the C ABI's status (`ffi::METRALE_ERROR_*`), `metrale_last_error()`, and the
/// CUDA error behind it, if the driver failed.
#[derive(Debug, Clone, PartialEq)]
pub struct Error {
    pub status: i32,
    pub message: String,
    pub cuda: Option<CudaError>,
}

impl Error {
    /// The failure's kind by its status: `ErrorKind::Closed` for any call after `Runtime::close`.
    pub fn kind(&self) -> ErrorKind {
        match self.status {
            ffi::METRALE_ERROR_ARGUMENT => ErrorKind::Argument,
            ffi::METRALE_ERROR_CONFIG => ErrorKind::Config,
            ffi::METRALE_ERROR_BACKEND => ErrorKind::Backend,
            ffi::METRALE_ERROR_NO_DEVICE => ErrorKind::NoDevice,
            ffi::METRALE_ERROR_VERSION => ErrorKind::Version,
            ffi::METRALE_ERROR_INTERNAL => ErrorKind::Internal,
            ffi::METRALE_ERROR_CAPTURE => ErrorKind::Capture,
            ffi::METRALE_ERROR_CLOSED => ErrorKind::Closed,
            other => ErrorKind::Other(other),
        }
    }

    /// Whether the CUDA context is gone (a sticky driver error): retrying or falling back to
    /// another kernel cannot help.
    pub fn is_sticky(&self) -> bool {
        self.cuda.as_ref().is_some_and(|cuda| cuda.sticky)
    }

    /// The failure `info` describes (as `metrale_last_error_info` fills it); None for a success.
    ///
    /// # Safety
    /// `info`'s strings must each be null or a readable NUL-terminated string (the library's stay
    /// so until the thread's next call).
    pub unsafe fn from_info(info: &ffi::metrale_error_info) -> Option<Error> {
        if info.status == ffi::METRALE_OK {
            return None;
        }
        let cuda = (info.cuda_code != 0).then(|| CudaError {
            code: info.cuda_code,
            name: text(info.cuda_name).unwrap_or_default(),
            sticky: info.sticky != 0,
            refusal: info.refusal != 0,
        });
        Some(Error { status: info.status, message: text(info.message).unwrap_or_default(), cuda })
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "metrale status {}: {}", self.status, self.message)?;
        match &self.cuda {
            Some(cuda) => {
                let kind = if cuda.sticky {
                    "sticky"
                } else if cuda.refusal {
                    "refusal"
                } else {
                    "other"
                };
                write!(f, " [{} ({}), {kind}]", cuda.name, cuda.code)
            }
            None => Ok(()),
        }
    }
}

impl std::error::Error for Error {}

pub type Result<T> = std::result::Result<T, Error>;

/// The calling thread's last failure, None when its last call succeeded.
pub fn last_error() -> Option<Error> {
    let mut info = init(ffi::metrale_error_info_init);
    let status = unsafe { ffi::metrale_last_error_info(&mut info) };
    if status != ffi::METRALE_OK {
        let message = format!("metrale_last_error_info refused this crate's struct (status {status})");
        return Some(Error { status, message, cuda: None });
    }
    unsafe { Error::from_info(&info) }
}

/// Ok for METRALE_OK, else the thread's last failure with the call's own status.
pub(crate) fn check(status: ffi::metrale_status) -> Result<()> {
    if status == ffi::METRALE_OK {
        return Ok(());
    }
    let last = last_error().unwrap_or(Error { status, message: String::new(), cuda: None });
    Err(Error { status, ..last })
}

/// A refusal of this crate's own (a slice of the wrong length, a NUL in a name), with the
/// status the library gives bad arguments.
pub(crate) fn refuse(message: String) -> Error {
    Error { status: ffi::METRALE_ERROR_ARGUMENT, message, cuda: None }
}
