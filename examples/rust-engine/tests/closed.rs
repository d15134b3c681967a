//! A closed runtime from Rust: after `close`, every call (op runs, prepare, explain, the catalog)
//! returns an `Error` of `ErrorKind::Closed` with the library's "this Runtime is closed" and
//! writes nothing; a second close is Ok, and drop frees the handle after it.
use metrale_rust_engine::{addr, addr_mut, ffi, ErrorKind, Runtime};

fn assert_closed<T: std::fmt::Debug>(what: &str, result: metrale_rust_engine::Result<T>) {
    let err = result.expect_err(what);
    assert_eq!(err.kind(), ErrorKind::Closed, "{what}: {err:?}");
    assert_eq!(err.status, ffi::METRALE_ERROR_CLOSED, "{what}: {err:?}");
    assert!(err.message.contains("this Runtime is closed"), "{what}: {err:?}");
}

#[test]
fn every_call_after_close_is_the_closed_error() {
    let mut rt = Runtime::open_host("hopper").expect("open the host backend");
    // Random bf16 inputs (a fixed xorshift seed), outputs poisoned.
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let x: Vec<u16> = (0..2 * 128)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            0x3c00 | (state as u16 & 0x83ff)
        })
        .collect();
    let (mut q, mut scales) = (vec![0xa5u8; 2 * 128], vec![f32::NAN; 2]);
    let args = [("x", addr(&x)), ("q", addr_mut(&mut q)), ("scales", addr_mut(&mut scales)), ("m", 2), ("k", 128)];
    // Safety: x and q hold [2][128], scales [2][1], as the op's rules want at m 2, k 128.
    unsafe { rt.run("fp8_act_quant", &args, 0) }.expect("a call before close runs");
    assert!(scales.iter().all(|s| s.is_finite() && *s > 0.0), "{scales:?}");

    rt.close().expect("close");
    let (mut q2, mut scales2) = (vec![0xa5u8; 2 * 128], vec![f32::NAN; 2]);
    let args = [("x", addr(&x)), ("q", addr_mut(&mut q2)), ("scales", addr_mut(&mut scales2)), ("m", 2), ("k", 128)];
    // Safety: as above; a closed runtime reads and writes nothing.
    assert_closed("run", unsafe { rt.run("fp8_act_quant", &args, 0) });
    assert_closed("run_role", unsafe { rt.run_role("fp8_act_quant", "parent", &args, 0) });
    assert!(q2.iter().all(|&b| b == 0xa5) && scales2.iter().all(|s| s.is_nan()), "a refused call wrote");
    assert_closed("prepare", rt.prepare("fp8_act_quant", "", &[("m", 2), ("k", 128)]));
    assert_closed("explain", rt.explain("fp8_act_quant", &[("m", 2), ("k", 128)], true));
    assert_closed("target", rt.target());
    assert_closed("lever", rt.lever("fp8_act_quant_hopper"));
    assert_closed("levers", rt.levers());
    assert_closed("ops", rt.ops());
    assert_closed("op", rt.op("fp8_act_quant"));
    rt.close().expect("a second close is Ok");
}
