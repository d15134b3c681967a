//! Typed helpers for the library's two seed ops on slices, each one `Runtime::run` call with
//! the op's declared argument names: the slices' lengths are checked against the sizes here, so
//! the addresses handed to `run` always cover what the op reads and writes (which is what makes
//! these safe). An engine's own ops need no helper: `run` takes any declared op.
use crate::{addr, addr_mut, refuse, Pick, Result, Runtime};

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

fn require_lengths(lengths: &[(&str, usize, usize)]) -> Result<()> {
    for &(name, got, want) in lengths {
        if got != want {
            return Err(refuse(format!("{name}: {got} elements, the shape needs {want}")));
        }
    }
    Ok(())
}

impl Runtime {
    /// ssm_ba_gates with the guards' pick (`role` "") or a role forced by name or alias.
    pub fn ssm_ba_gates(&mut self, p: &BaGates, gate_out: &mut [f32], role: &str) -> Result<Pick> {
        let (m, n, k) = (p.m as usize, p.n as usize, p.k as usize);
        require_lengths(&[
            ("x", p.x.len(), m * k),
            ("weight", p.weight.len(), n * k),
            ("a_log", p.a_log.len(), n / 2),
            ("dt_bias", p.dt_bias.len(), n / 2),
            ("gate_out", gate_out.len(), m * n),
        ])?;
        let args = [
            ("x", addr(p.x)),
            ("weight", addr(p.weight)),
            ("a_log", addr(p.a_log)),
            ("dt_bias", addr(p.dt_bias)),
            ("gate_out", addr_mut(gate_out)),
            ("m", u64::from(p.m)),
            ("n", u64::from(p.n)),
            ("k", u64::from(p.k)),
            ("vheads_per_group", u64::from(p.vheads_per_group)),
        ];
        // Safe: the lengths above cover [m][k], [n][k], [n / 2] and [m][n] with the default strides
        // (k, n) and nv = n / 2 that the op takes when they are not given.
        unsafe { self.run_role("ssm_ba_gates", role, &args, 0) }
    }

    /// fp8_act_quant: x bf16 bits [m][k] -> q (e4m3 bits [m][k]) and row-major scales [m][k / 128].
    pub fn fp8_act_quant(&mut self, x: &[u16], m: u32, k: u32, q: &mut [u8], scales: &mut [f32]) -> Result<Pick> {
        let (mu, ku) = (m as usize, k as usize);
        require_lengths(&[
            ("x", x.len(), mu * ku),
            ("q", q.len(), mu * ku),
            ("scales", scales.len(), mu * (ku / 128)),
        ])?;
        let args = [
            ("x", addr(x)),
            ("q", addr_mut(q)),
            ("scales", addr_mut(scales)),
            ("m", u64::from(m)),
            ("k", u64::from(k)),
        ];
        // Safe: x and q hold [m][k] (row stride k, the default), scales [m][k / 128] (row-major,
        // the default); a k that is no multiple of 128 is refused by the op before anything runs.
        unsafe { self.run("fp8_act_quant", &args, 0) }
    }
}
