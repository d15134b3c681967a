"""The third op, silu_mul_fp8_quant, from NumPy on the host backend: gate and up as the two halves
of one [M, 2K] array (row strides from the views), each role's codes and scales equal to a NumPy
reference computed here (h = bf16(silu(gate) * up), then the FP8 quant), outputs poisoned first."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import POISON_F32, POISON_U8, bf16_bits, bf16_values, fp8_reference


def bf16_round(values: np.ndarray) -> np.ndarray:
    """float32 -> bf16 bits, rounded to nearest even (the op rounds h once, so the reference must)."""
    bits = np.asarray(values, np.float32).view(np.uint32).astype(np.uint64)
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)


def silu_mul_reference(gate_bits, up_bits, pow2=False):
    g, u = bf16_values(gate_bits), bf16_values(up_bits)
    # exp in float64, rounded once to float32 (a correctly rounded expf); the rest in float32.
    e = np.exp(-g.astype(np.float64)).astype(np.float32)
    h = bf16_round((g / (np.float32(1) + e)) * u)
    return fp8_reference(h, pow2)


@pytest.mark.parametrize("role", [None, "parent", "twin"])
@pytest.mark.parametrize("pow2", [False, True])
def test_silu_mul_fp8_quant_matches_the_reference(rt, rng, role, pow2):
    m, k = 5, 384
    gate_up = bf16_bits(rng.uniform(-4, 4, (m, 2 * k)))
    gate, up = gate_up[:, :k], gate_up[:, k:]  # row stride 2K each
    q = np.full((m, k), POISON_U8)
    scales = np.full((m, k // 128), POISON_F32, np.float32)
    result = rt.run("silu_mul_fp8_quant", gate=gate, up=up, q=q, scales=scales, pow2_scales=int(pow2), role=role)
    assert result.q is q and result.scales is scales and result.pick.op == "silu_mul_fp8_quant"
    if role is not None:
        assert result.pick.role == role and result.pick.forced
    want_q, want_scales = silu_mul_reference(gate, up, pow2)
    np.testing.assert_array_equal(scales, want_scales)
    np.testing.assert_array_equal(q, want_q)
