"""Verification from Python: ``Runtime(..., verify=...)`` reaches the C ABI's options (the runtime
reports it back as ``rt.verify``), METRALE_VERIFY decides when it is None, a bad value is refused
by name, and a verified runtime's op call still returns the reference's bytes."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import bf16_bits, fp8_reference

import metrale


def test_verify_argument_reaches_the_runtime(tmp_path, monkeypatch):
    monkeypatch.setenv("METRALE_CACHE_DIR", str(tmp_path))
    with metrale.Runtime("host", target="hopper", verify=False) as off:
        assert off.verify is False
    monkeypatch.setenv("METRALE_VERIFY", "off")
    with metrale.Runtime("host", target="hopper") as from_env:
        assert from_env.verify is False
    with metrale.Runtime("host", target="hopper", verify=True) as on:
        assert on.verify is True  # the argument wins over the variable


def test_a_bad_verify_value_is_named():
    with pytest.raises(metrale.ArgumentError, match=r"verify='yes': expected True, False or None"):
        metrale.Runtime("host", verify="yes")


def test_a_verified_runtime_quantises_like_the_reference(tmp_path, monkeypatch, rng):
    monkeypatch.setenv("METRALE_CACHE_DIR", str(tmp_path))
    with metrale.Runtime("host", target="hopper", verify=True) as rt:
        x = bf16_bits(rng.uniform(-4, 4, (3, 256)))
        q, scales = rt.ops.fp8_act_quant(x)
        want_q, want_scales = fp8_reference(x)
        np.testing.assert_array_equal(scales, want_scales)
        np.testing.assert_array_equal(q, want_q)
    assert any(p.suffix == ".verdict" for p in (tmp_path / "verdicts").iterdir())  # kept beside the cache
