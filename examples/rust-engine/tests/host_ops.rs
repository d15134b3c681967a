//! Opens the runtime on the host backend through the C ABI and runs both ops against small
//! references computed here (float64 for the gates; the nearest e4m3 code for FP8).
use metrale_rust_engine::{BaGates, Runtime};

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
    let pick = rt.ssm_ba_gates(&problem, &mut gates).expect("ssm_ba_gates");
    println!("ran {} ({:?})", pick.kernel, pick.reason);
    let (mut q, mut scales) = (vec![0u8; 4 * 256], vec![0f32; 4 * 2]);
    rt.fp8_act_quant(x, 4, 256, &mut q, &mut scales).expect("fp8_act_quant");
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

#[test]
fn both_ops_match_references_on_the_host_backend() {
    let mut rng = Rng(0x5eed_2026_1130);
    let x: Vec<u16> = (0..4 * 256).map(|_| rng.bf16(-2.0, 2.0)).collect();
    let weight: Vec<u16> = (0..8 * 256).map(|_| rng.bf16(-0.1, 0.1)).collect();
    let a_log: Vec<f32> = (0..4).map(|_| rng.uniform(-1.0, 1.0)).collect();
    let dt_bias: Vec<f32> = (0..4).map(|_| rng.uniform(-1.0, 1.0)).collect();
    let (gates, q, scales) = run_both_ops(&x, &weight, &a_log, &dt_bias);

    for t in 0..4 {
        for n in 0..8 {
            let acc: f64 = (0..256).map(|i| bf16(x[t * 256 + i]) as f64 * bf16(weight[n * 256 + i]) as f64).sum();
            let (group, within) = (n / 4, n % 4);
            let beta = within < 2;
            let vh = group * 2 + if beta { within } else { within - 2 };
            let z = acc + dt_bias[vh] as f64;
            let softplus = if z > 20.0 { z } else { z.exp().ln_1p() };
            let want = if beta { 1.0 / (1.0 + (-acc).exp()) } else { -(a_log[vh] as f64).exp() * softplus };
            let got = gates[t * 8 + if beta { 4 + vh } else { vh }] as f64;
            assert!((got - want).abs() <= 1e-4 * (1.0 + want.abs()), "gate[{t}][n={n}] = {got}, reference {want}");
        }
    }
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
fn a_refused_shape_is_an_error_with_the_librarys_message() {
    let mut rt = Runtime::open_host("hopper").unwrap();
    let x = vec![0x3f80u16; 2 * 200];
    let (mut q, mut scales) = (vec![0xa5u8; 2 * 200], vec![0f32; 2]);
    let err = rt.fp8_act_quant(&x, 2, 200, &mut q, &mut scales).unwrap_err();
    assert_eq!(err.status, 1, "{err}");
    assert!(err.message.contains("128"), "{err}");
    assert!(q.iter().all(|&b| b == 0xa5), "q was written on a refusal");
    assert!(Runtime::open_host("no-such-target").is_err());
    assert!(!metrale_rust_engine::version().is_empty());
}
