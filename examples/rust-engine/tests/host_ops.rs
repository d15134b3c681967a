//! Opens the runtime on the host backend through the C ABI and runs both seed ops, through the
//! typed helpers and through the generic `run` by name, against small references computed here
//! (float64 for the gates; the nearest e4m3 code for FP8); forces kernels by role name and
//! alias; runs the third op, silu_mul_fp8_quant, by name (gate and up the two halves of one
//! [M][2K] row) against bf16(silu(gate) * up) quantised here; and checks that refusals carry the
//! library's status and message and write nothing.
use metrale_rust_engine::{addr, addr_mut, ffi, BaGates, Runtime};

/// xorshift64*: seeded, never all zeros.
struct Rng(u64);
impl Rng {
    fn uniform(&mut self, lo: f32, hi: f32) -> f32 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        let unit = (self.0.wrapping_mul(0x2545F4914F6CDD1D) >> 40) as f32 / (1u32 << 24) as f32;
        lo + (hi - lo) * unit
    }
    fn bf16(&mut self, lo: f32, hi: f32) -> u16 {
        (self.uniform(lo, hi).to_bits() >> 16) as u16
    }
}

fn bf16(bits: u16) -> f32 {
    f32::from_bits((bits as u32) << 16)
}

// README: Rust example
fn run_both_ops(x: &[u16], weight: &[u16], a_log: &[f32], dt_bias: &[f32]) -> (Vec<f32>, Vec<u8>, Vec<f32>) {
    let mut rt = Runtime::open_host("hopper").expect("open the host backend");
    let problem = BaGates { x, weight, a_log, dt_bias, m: 4, n: 8, k: 256, vheads_per_group: 2 };
    let mut gates = vec![f32::NAN; 4 * 8];
    let pick = rt.ssm_ba_gates(&problem, &mut gates, "").expect("ssm_ba_gates");
    println!("ran {} (role {}; verdicts {:?})", pick.kernel, pick.role, pick.verdicts);
    let (mut q, mut scales) = (vec![0u8; 4 * 256], vec![0f32; 4 * 2]);
    // Any op by name, its arguments by the names it declares (rt.op("fp8_act_quant")?.args).
    let args = [("x", addr(x)), ("q", addr_mut(&mut q)), ("scales", addr_mut(&mut scales)), ("m", 4), ("k", 256)];
    // Safety: x and q hold [4][256], scales [4][2], as the op's rules want at m 4, k 256.
    let pick = unsafe { rt.run("fp8_act_quant", &args, 0) }.expect("fp8_act_quant");
    println!("ran {} (role {})", pick.kernel, pick.role);
    (gates, q, scales)
}
// README: end

fn e4m3_nearest(v: f32) -> u8 {
    let a = (v as f64).abs();
    let mut best = (0u8, f64::INFINITY);
    for code in 0u8..=0x7e {
        let (e, mant) = ((code >> 3) as i32, (code & 7) as f64);
        let value = if e == 0 { mant * 2f64.powi(-9) } else { (8.0 + mant) * 2f64.powi(e - 10) };
        let diff = (value - a).abs();
        if diff < best.1 || (diff == best.1 && code % 2 == 0) {
            best = (code, diff);
        }
    }
    best.0 | if v.is_sign_negative() { 0x80 } else { 0 }
}

struct Problem {
    x: Vec<u16>,
    weight: Vec<u16>,
    a_log: Vec<f32>,
    dt_bias: Vec<f32>,
}

fn problem(seed: u64) -> Problem {
    let mut rng = Rng(seed);
    Problem {
        x: (0..4 * 256).map(|_| rng.bf16(-2.0, 2.0)).collect(),
        weight: (0..8 * 256).map(|_| rng.bf16(-0.1, 0.1)).collect(),
        a_log: (0..4).map(|_| rng.uniform(-1.0, 1.0)).collect(),
        dt_bias: (0..4).map(|_| rng.uniform(-1.0, 1.0)).collect(),
    }
}

fn check_gates(p: &Problem, gates: &[f32], tolerance: f64) {
    for t in 0..4 {
        for n in 0..8 {
            let acc: f64 = (0..256).map(|i| bf16(p.x[t * 256 + i]) as f64 * bf16(p.weight[n * 256 + i]) as f64).sum();
            let (group, within) = (n / 4, n % 4);
            let beta = within < 2;
            let vh = group * 2 + if beta { within } else { within - 2 };
            let z = acc + p.dt_bias[vh] as f64;
            let softplus = if z > 20.0 { z } else { z.exp().ln_1p() };
            let want = if beta { 1.0 / (1.0 + (-acc).exp()) } else { -(p.a_log[vh] as f64).exp() * softplus };
            let got = gates[t * 8 + if beta { 4 + vh } else { vh }] as f64;
            assert!((got - want).abs() <= tolerance * (1.0 + want.abs()), "gate[{t}][n={n}] = {got}, reference {want}");
        }
    }
}

fn check_fp8(x: &[u16], q: &[u8], scales: &[f32]) {
    for t in 0..4 {
        for g in 0..2 {
            let group = &x[t * 256 + g * 128..t * 256 + (g + 1) * 128];
            let amax = group.iter().map(|&b| bf16(b).abs()).fold(0f32, f32::max);
            let scale = amax.max(1e-10) / 448.0;
            assert_eq!(scales[t * 2 + g], scale, "scale[{t}][{g}]");
            for (i, &b) in group.iter().enumerate() {
                assert_eq!(q[t * 256 + g * 128 + i], e4m3_nearest(bf16(b) / scale), "q[{t}][{}]", g * 128 + i);
            }
        }
    }
}

#[test]
fn both_ops_match_references_on_the_host_backend() {
    let p = problem(0x5eed_2026_1130);
    let (gates, q, scales) = run_both_ops(&p.x, &p.weight, &p.a_log, &p.dt_bias);
    check_gates(&p, &gates, 1e-4);
    check_fp8(&p.x, &q, &scales);
}

#[test]
fn forced_roles_by_name_and_alias() {
    let p = problem(0x5eed_2026_1201);
    let mut rt = Runtime::open_host("hopper").unwrap();
    let ba = BaGates {
        x: &p.x,
        weight: &p.weight,
        a_log: &p.a_log,
        dt_bias: &p.dt_bias,
        m: 4,
        n: 8,
        k: 256,
        vheads_per_group: 2,
    };
    let mut parent = vec![f32::NAN; 32];
    let pick = rt.ssm_ba_gates(&ba, &mut parent, "parent").unwrap();
    assert_eq!((pick.role.as_str(), pick.kernel.as_str(), pick.forced), ("parent", "ssm_ba_gates", true), "{pick:?}");
    assert!(pick.verdicts[0].reason.as_deref().unwrap_or("").contains("forced"), "{pick:?}");
    check_gates(&p, &parent, 1e-4);
    // The guards' pick at M = 4: the tensor-core guard speaks first, then the decode kernel's (K 256
    // is too short to split), then the twin's; all refuse.
    let mut guarded = vec![f32::NAN; 32];
    let pick = rt.ssm_ba_gates(&ba, &mut guarded, "").unwrap();
    let roles: Vec<&str> = pick.verdicts.iter().map(|v| v.role.as_str()).collect();
    assert_eq!((pick.role.as_str(), roles), ("parent", vec!["tensor_core", "decode", "twin"]), "{pick:?}");
    assert!(pick.verdict("twin").unwrap().reason.as_deref().unwrap().contains("one CTA per token"), "{pick:?}");
    let mut twin = vec![f32::NAN; 32];
    let pick = rt.ssm_ba_gates(&ba, &mut twin, "twin").unwrap();
    assert_eq!((pick.kernel.as_str(), pick.verdicts[0].reason.as_ref()), ("ssm_ba_gates_hopper", None), "{pick:?}");
    assert_eq!(
        parent.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
        twin.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
        "the twin's bytes differ from the parent's"
    );
    let mut mma = vec![f32::NAN; 32];
    let pick = rt.ssm_ba_gates(&ba, &mut mma, "mma").unwrap();
    assert_eq!((pick.role.as_str(), pick.kernel.as_str()), ("tensor_core", "ssm_ba_gates_mma"), "{pick:?}");
    check_gates(&p, &mma, 1e-4);

    // FP8 by its alias, the twin forced: the reference's bytes.
    let (mut q, mut scales) = (vec![0xa5u8; 4 * 256], vec![f32::NAN; 8]);
    let args = [("x", addr(&p.x)), ("q", addr_mut(&mut q)), ("scales", addr_mut(&mut scales)), ("m", 4), ("k", 256)];
    let pick = unsafe { rt.run_role("fp8-quant", "twin", &args, 0) }.unwrap();
    assert_eq!((pick.op.as_str(), pick.kernel.as_str()), ("fp8_act_quant", "fp8_act_quant_hopper"), "{pick:?}");
    check_fp8(&p.x, &q, &scales);
    let pick = unsafe { rt.run_role("fp8_act_quant", "shared", &args, 0) }.unwrap();
    assert_eq!((pick.role.as_str(), pick.forced), ("parent", true), "{pick:?}");
}

/// q and scales of bf16(silu(g) * u) for [m][k] rows of `stride` elements (h rounded to nearest
/// even once; silu in f32 with the C library's expf, as the host backend computes it).
fn silu_mul_reference(gate: &[u16], up: &[u16], m: usize, k: usize, stride: usize) -> (Vec<u8>, Vec<f32>) {
    let (mut q, mut scales) = (vec![0u8; m * k], vec![0f32; m * k / 128]);
    for t in 0..m {
        let h: Vec<f32> = (0..k)
            .map(|c| {
                let (g, u) = (bf16(gate[t * stride + c]), bf16(up[t * stride + c]));
                let bits = ((g / (1.0 + (-g).exp())) * u).to_bits();
                bf16(((bits + 0x7fff + ((bits >> 16) & 1)) >> 16) as u16)
            })
            .collect();
        for g in 0..k / 128 {
            let group = &h[g * 128..(g + 1) * 128];
            let scale = group.iter().map(|v| v.abs()).fold(0f32, f32::max).max(1e-10) / 448.0;
            scales[t * (k / 128) + g] = scale;
            for (i, &v) in group.iter().enumerate() {
                q[t * k + g * 128 + i] = e4m3_nearest(v / scale);
            }
        }
    }
    (q, scales)
}

#[test]
fn silu_mul_fp8_quant_matches_its_reference_by_name() {
    let (m, k) = (3usize, 256usize);
    let mut rng = Rng(0x5eed_2026_1202);
    let gate_up: Vec<u16> = (0..m * 2 * k).map(|_| rng.bf16(-4.0, 4.0)).collect();
    let (want_q, want_scales) = silu_mul_reference(&gate_up, &gate_up[k..], m, k, 2 * k);
    let mut rt = Runtime::open_host("hopper").unwrap();
    for role in ["", "parent", "twin"] {
        let (mut q, mut scales) = (vec![0xa5u8; m * k], vec![f32::NAN; m * k / 128]);
        let args = [
            ("gate", addr(&gate_up)),
            ("up", addr(&gate_up[k..])),
            ("q", addr_mut(&mut q)),
            ("scales", addr_mut(&mut scales)),
            ("m", m as u64),
            ("k", k as u64),
            ("gate_row_stride", 2 * k as u64),
            ("up_row_stride", 2 * k as u64),
        ];
        // Safety: gate and up are [3][512] rows (up K elements in), q [3][256], scales [3][2].
        let pick = unsafe { rt.run_role("silu_mul_fp8_quant", role, &args, 0) }.unwrap();
        assert_eq!(pick.op, "silu_mul_fp8_quant", "{pick:?}");
        assert!(role.is_empty() || pick.role == role, "{pick:?}");
        assert_eq!(q, want_q, "q ({role})");
        assert_eq!(
            scales.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            want_scales.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            "scales ({role})"
        );
    }
}

#[test]
fn refusals_carry_the_librarys_status_and_message_and_write_nothing() {
    let mut rt = Runtime::open_host("hopper").unwrap();
    let x = vec![0x3f80u16; 2 * 256];
    let (mut q, mut scales) = (vec![0xa5u8; 2 * 256], vec![f32::NAN; 4]);
    let (xa, qa, sa) = (addr(&x), addr_mut(&mut q), addr_mut(&mut scales));
    let base = [("x", xa), ("q", qa), ("scales", sa), ("m", 2), ("k", 256)];
    let refused = |rt: &mut Runtime, op: &str, role: &str, args: &[(&str, u64)], part: &str| {
        let err = unsafe { rt.run_role(op, role, args, 0) }.unwrap_err();
        assert_eq!(err.status, ffi::METRALE_ERROR_ARGUMENT, "{err}");
        assert!(err.message.contains(part), "'{}' does not name '{part}'", err.message);
    };
    refused(&mut rt, "no_such_op", "", &base, "no_such_op");
    refused(&mut rt, "fp8_act_quant", "mma", &base, "no kernel role 'mma'");
    refused(
        &mut rt,
        "fp8_act_quant",
        "",
        &[("x", xa), ("q", qa), ("scales", sa), ("m", 2), ("k", 256), ("kk", 1)],
        "no argument named 'kk'",
    );
    refused(&mut rt, "fp8_act_quant", "", &base[1..], "argument 'x' (input bf16) is missing");
    refused(
        &mut rt,
        "fp8_act_quant",
        "",
        &[("x", xa), ("q", qa), ("scales", sa), ("m", 2), ("k", 256), ("pow2_scales", 2)],
        "pow2_scales=2 is outside [0, 1]",
    );
    refused(&mut rt, "fp8_act_quant", "", &[("x", xa), ("q", qa), ("scales", sa), ("m", 2), ("k", 200)], "128");
    assert!(q.iter().all(|&b| b == 0xa5) && scales.iter().all(|s| s.is_nan()), "written on a refusal");
    // The typed helper checks the slices before the library sees them.
    let err = rt.fp8_act_quant(&x, 2, 256, &mut q[..10], &mut scales).unwrap_err();
    assert!(err.message.contains("q: 10 elements"), "{err}");
    assert!(Runtime::open_host("no-such-target").is_err());
    assert!(!metrale_rust_engine::version().is_empty());

    // A closed runtime is the library's closed error, never a crash (tests/closed.rs: every call).
    rt.close().unwrap();
    let err = unsafe { rt.run("fp8_act_quant", &base, 0) }.unwrap_err();
    assert!(err.status == ffi::METRALE_ERROR_CLOSED && err.message.contains("this Runtime is closed"), "{err}");
    assert!(rt.ops().unwrap_err().message.contains("this Runtime is closed"));
}
