"""Shared fixtures and NumPy references for the metrale package's tests (host backend)."""

from __future__ import annotations

import numpy as np
import pytest

import metrale

POISON_F32 = np.uint32(0x7FC00BAD).view(np.float32)  # a NaN no kernel writes
POISON_U8 = np.uint8(0xA5)


@pytest.fixture(scope="session")
def rt() -> metrale.Runtime:
    runtime = metrale.Runtime("host", target="hopper")
    yield runtime
    runtime.close()


@pytest.fixture()
def rng() -> np.random.Generator:
    return np.random.default_rng(20261130)


def bf16_bits(values: np.ndarray) -> np.ndarray:
    """float32 -> bf16 bits (truncation: any bf16 value will do as an input)."""
    return (np.asarray(values, np.float32).view(np.uint32) >> 16).astype(np.uint16)


def bf16_values(bits: np.ndarray) -> np.ndarray:
    return (np.asarray(bits).view(np.uint16).astype(np.uint32) << 16).view(np.float32)


def ba_gates_reference(x, w, a_log, dt_bias, vheads_per_group: int) -> np.ndarray:
    """The float64 oracle: [gate | beta] per token, by DESIGN.md's slot rule."""
    acc = bf16_values(x).astype(np.float64) @ bf16_values(w).astype(np.float64).T
    m, n = acc.shape
    nv = n // 2
    out = np.empty((m, 2 * nv))
    for col in range(n):
        group, within = divmod(col, 2 * vheads_per_group)
        beta = within < vheads_per_group
        vh = group * vheads_per_group + (within if beta else within - vheads_per_group)
        if beta:
            out[:, nv + vh] = 1.0 / (1.0 + np.exp(-acc[:, col]))
        else:
            z = acc[:, col] + dt_bias[vh]
            softplus = np.where(z > 20.0, z, np.log1p(np.exp(np.minimum(z, 20.0))))
            out[:, vh] = -np.exp(np.float64(a_log[vh])) * softplus
    return out


# The bounds a device's BA gates are judged by, as tests/support/ba_gates_check.hpp defines them:
# a kernel in the parent's summation order (parent, twin) within 2e-6 relative of the CPU's bytes
# per element (the device's expf / log1pf may differ from glibc's by 2 ulp); the tensor-core
# kernel, which sums in another order, within 1e-5 relative Frobenius error of the float64 oracle.
BA_MAX_RELATIVE_GAP = 2e-6
BA_MMA_MAX_RELATIVE_FROBENIUS = 1e-5


def assert_ba_within_oracle(out: np.ndarray, oracle: np.ndarray, what: str) -> None:
    """Every output written and ||out - oracle||_F / ||oracle||_F under the tensor-core bound:
    the bound every BA kernel meets, whichever the guards picked."""
    assert not np.isnan(out).any(), f"{what}: unwritten (poison) or NaN outputs"
    error = np.linalg.norm(out.astype(np.float64) - oracle) / np.linalg.norm(oracle)
    assert error < BA_MMA_MAX_RELATIVE_FROBENIUS, f"{what}: relative Frobenius error {error:.3g}"


def assert_ba_close_to(out: np.ndarray, want: np.ndarray, what: str) -> None:
    """Per element within BA_MAX_RELATIVE_GAP of `want` (a kernel of the parent's order)."""
    gap = np.abs(out.astype(np.float64) - want) / np.maximum(np.abs(want.astype(np.float64)), 1e-30)
    assert not np.isnan(out).any() and gap.max() <= BA_MAX_RELATIVE_GAP, f"{what}: worst relative gap {gap.max():.3g}"


def _e4m3_table() -> np.ndarray:
    codes = np.arange(0x7F)
    exponent, mantissa = codes >> 3, codes & 7
    return np.where(exponent == 0, np.ldexp(mantissa, -9), np.ldexp(8 + mantissa, exponent - 10))


E4M3 = _e4m3_table()  # positive finite values by code, ascending


def e4m3_nearest(values: np.ndarray) -> np.ndarray:
    """The nearest e4m3fn code (ties to the even code), saturating at +-448."""
    a = np.abs(values.astype(np.float64))
    hi = np.clip(np.searchsorted(E4M3, a), 1, len(E4M3) - 1)
    lo = hi - 1
    d_lo, d_hi = a - E4M3[lo], E4M3[hi] - a
    code = np.where((d_lo < d_hi) | ((d_lo == d_hi) & (lo % 2 == 0)), lo, hi)
    code = np.where(a >= 448.0, 0x7E, code)
    return (code | np.where(np.signbit(values), 0x80, 0)).astype(np.uint8)


def fp8_reference(x_bits: np.ndarray, pow2: bool = False) -> tuple[np.ndarray, np.ndarray]:
    x = bf16_values(x_bits)
    m, k = x.shape
    groups = x.reshape(m, k // 128, 128)
    amax = np.maximum(np.abs(groups).max(axis=2), np.float32(1e-10))
    scales = (amax / np.float32(448.0)).astype(np.float32)
    if pow2:
        scales = np.exp2(np.ceil(np.log2(scales.astype(np.float64)))).astype(np.float32)
    q = e4m3_nearest((groups / scales[:, :, None]).astype(np.float32)).reshape(m, k)
    return q, scales
