//! A failure as data from Rust (`metrale_last_error_info` through `Error` and `last_error`):
//! a refused call carries the library's status and message and no CUDA error on the host backend,
//! the thread's last error reads the same until a call succeeds, and a driver failure's fields
//! (code, name, sticky or refusal) reach `Error` as the C struct gives them.
use std::ffi::CString;
use std::ptr;

use metrale_rust_engine::{ffi, last_error, CudaError, Error, Runtime};

#[test]
fn a_refused_call_is_data_without_a_cuda_error_on_the_host() {
    let mut rt = Runtime::open_host("hopper").unwrap();
    assert_eq!(last_error(), None, "a successful open leaves no last error");
    let err = rt.prepare("fp8_act_quant", "", &[("m", 3), ("k", 100)]).unwrap_err();
    assert_eq!(err.status, ffi::METRALE_ERROR_ARGUMENT, "{err:?}");
    assert!(err.message.contains("K=100") && err.message.contains("metrale_op_prepare"), "{err:?}");
    assert_eq!(err.cuda, None, "the host backend has no CUDA driver to fail: {err:?}");
    assert!(!err.is_sticky());
    // The thread's last error is the same failure, read twice (reading does not clear it).
    assert_eq!(last_error().as_ref(), Some(&err));
    assert_eq!(last_error().as_ref(), Some(&err));
    assert_eq!(err.to_string(), format!("metrale status 1: {}", err.message));
    rt.prepare("fp8_act_quant", "", &[("m", 3), ("k", 256)]).unwrap();
    assert_eq!(last_error(), None, "a success clears it");
}

#[test]
fn a_driver_failure_reaches_the_error_type_field_for_field() {
    let name = CString::new("CUDA_ERROR_ILLEGAL_ADDRESS").unwrap();
    let message = CString::new("metrale_op_run: cuLaunchKernel failed on cuda:0: an illegal memory access").unwrap();
    let mut info = ffi::metrale_error_info {
        struct_size: std::mem::size_of::<ffi::metrale_error_info>(),
        status: ffi::METRALE_ERROR_BACKEND,
        cuda_code: 700,
        cuda_name: name.as_ptr(),
        sticky: 1,
        refusal: 0,
        message: message.as_ptr(),
    };
    let err = unsafe { Error::from_info(&info) }.expect("a failure");
    assert_eq!((err.status, err.message.as_str()), (ffi::METRALE_ERROR_BACKEND, message.to_str().unwrap()));
    let sticky = CudaError { code: 700, name: "CUDA_ERROR_ILLEGAL_ADDRESS".into(), sticky: true, refusal: false };
    assert_eq!(err.cuda.as_ref(), Some(&sticky));
    assert!(err.is_sticky());
    assert!(err.to_string().ends_with("[CUDA_ERROR_ILLEGAL_ADDRESS (700), sticky]"), "{err}");

    (info.cuda_code, info.sticky, info.refusal) = (1, 0, 1); // CUDA_ERROR_INVALID_VALUE: refused
    let refused = unsafe { Error::from_info(&info) }.unwrap();
    assert!(refused.cuda.as_ref().is_some_and(|c| c.code == 1 && c.refusal && !c.sticky), "{refused:?}");
    assert!(!refused.is_sticky());

    (info.cuda_code, info.cuda_name, info.refusal) = (0, ptr::null(), 0); // no driver involved
    assert_eq!(unsafe { Error::from_info(&info) }.unwrap().cuda, None);
    info.status = ffi::METRALE_OK;
    assert_eq!(unsafe { Error::from_info(&info) }, None, "a success is no error");
}

#[test]
fn a_short_info_struct_is_refused_by_the_library() {
    let mut info = ffi::metrale_error_info {
        struct_size: 4,
        status: ffi::METRALE_OK,
        cuda_code: 0,
        cuda_name: ptr::null(),
        sticky: 0,
        refusal: 0,
        message: ptr::null(),
    };
    assert_eq!(unsafe { ffi::metrale_last_error_info(&mut info) }, ffi::METRALE_ERROR_VERSION);
    assert!(info.message.is_null(), "a refused struct is left as it was");
}
