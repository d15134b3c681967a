"""Engine ops declared as data from Python: ``Runtime(..., ops=[dict])`` (the keys of a TOML op file,
passed through the C ABI as JSON). tests/data/ops/fp8_as_data.toml, read with tomllib and renamed,
explains as the library's fp8_act_quant at each rule's edge and refuses what run refuses; the same
dict with a planted mistake in its twin (a grid dropping a row's last partial CTA) has that twin
refused by verification, the refusal named as the twin's reason; a malformed dict is refused by key.
Called with arrays, the dict op is bound from its declared arguments alone (nothing in the package
knows it): x's width gives k, the scales are allocated row- or column-major (layout_by,
column_stride, m_aligned rounded up to its multiple_of), and its bytes equal the reference's."""

from __future__ import annotations

import copy
import pathlib
import tomllib

import numpy as np
import pytest
from conftest import POISON_F32, bf16_bits, fp8_reference

import metrale

OP_FILE = pathlib.Path(__file__).resolve().parents[2] / "tests" / "data" / "ops" / "fp8_as_data.toml"


def op_dict(name: str = "fp8_act_quant_py") -> dict:
    spec = tomllib.loads(OP_FILE.read_text())
    spec["name"] = name
    return spec


@pytest.mark.parametrize("k,m", [(5120, 52), (5120, 53), (6144, 43), (6144, 44), (1152, 131), (1152, 132), (128, 264)])
def test_a_dict_op_explains_as_the_library_op(tmp_path, k, m):
    with metrale.Runtime("host", target="hopper", verify=False, cache_dir=str(tmp_path), ops=[op_dict()]) as rt:
        mine = rt.explain("fp8_act_quant_py", k=k, m=m)
        library = rt.explain("fp8_act_quant", k=k, m=m)
        assert (mine.kernel, mine.role) == (library.kernel, library.role)
        assert mine.roles[0].reject == library.roles[0].reject
        assert rt.explain("fp8_act_quant_py", k=k).roles[0].min_m == rt.explain("fp8_act_quant", k=k).roles[0].min_m


def test_a_dict_op_refuses_what_run_refuses(tmp_path):
    with metrale.Runtime("host", target="hopper", verify=False, cache_dir=str(tmp_path), ops=[op_dict()]) as rt:
        with pytest.raises(metrale.ArgumentError, match="K is not a multiple of the group size 128"):
            rt.explain("fp8_act_quant_py", k=100, m=4)


def test_a_dict_op_whose_twin_has_a_planted_mistake_is_refused_by_verification(tmp_path):
    planted = op_dict()
    planted["roles"][1]["grid"][1] = "k / 128 / max(twin.groups, 1)"  # floor: the last partial CTA dropped
    with metrale.Runtime("host", target="hopper", verify=True, cache_dir=str(tmp_path), ops=[planted]) as rt:
        twin = rt.explain("fp8_act_quant_py", k=5120, m=4096).roles[0]
        assert not twin.runs
        assert "failed its check" in (twin.reject or "")


def test_a_malformed_dict_op_is_refused_naming_its_key(tmp_path):
    bad = copy.deepcopy(op_dict())
    bad["roles"][1]["guard"][0]["holds"] = "twin.present && ctas > 0"
    with pytest.raises(metrale.ConfigError, match=r"op_specs\[0\]: roles\[1\]\.guard\[0\]\.holds: .*unknown name 'ctas'"):
        metrale.Runtime("host", target="hopper", verify=False, cache_dir=str(tmp_path), ops=[bad])
    with pytest.raises(metrale.ArgumentError, match=r"ops\[0\]=3: expected a dict"):
        metrale.Runtime("host", target="hopper", verify=False, cache_dir=str(tmp_path), ops=[3])


@pytest.mark.parametrize("layout", [0, 1])
def test_a_dict_op_called_with_arrays_allocates_and_checks_from_its_declaration(tmp_path, layout):
    rng = np.random.default_rng(0x5CA1E + layout)
    m, k = 5, 384
    x = bf16_bits(rng.uniform(-4, 4, (m, k)))
    want_q, want_scales = fp8_reference(x)
    with metrale.Runtime("host", target="hopper", verify=False, cache_dir=str(tmp_path), ops=[op_dict()]) as rt:
        q, scales = rt.ops.fp8_act_quant_py(x, scale_layout=layout)  # x by position, the outputs allocated
        assert scales.shape == (m, 3)
        assert scales.strides == ((4, 4 * 8) if layout else (12, 4))  # column-major: m_aligned = 8 (5 up to 4s)
        np.testing.assert_array_equal(scales, want_scales)
        np.testing.assert_array_equal(q, want_q)
        # A padded view of x: its width is k, its row pitch the stride; given column-major scales
        # say their own layout and column stride (12 rows: m_aligned = 12).
        wide = np.concatenate([x, bf16_bits(rng.uniform(-4, 4, (m, 64)))], axis=1)
        base = np.full((3, 12), POISON_F32, np.float32)
        q2, scales2 = rt.ops.fp8_act_quant_py(wide[:, :k], scales=base.T[:m])
        np.testing.assert_array_equal(scales2, want_scales)
        np.testing.assert_array_equal(q2, want_q)
        assert (base[:, m:].view(np.uint32) == np.float32(POISON_F32).view(np.uint32)).all()  # padding untouched
        with pytest.raises(metrale.ArgumentError, match=r"m_aligned = 6 \(m_aligned= \(given\)\) is not a multiple of 4"):
            rt.ops.fp8_act_quant_py(x, scale_layout=1, m_aligned=6)
        with pytest.raises(metrale.ArgumentError, match=r"q.shape\[1\] is k = 256, but x.shape\[1\] is k = 384"):
            rt.ops.fp8_act_quant_py(x, q=np.zeros((m, 256), np.uint8))


def test_a_column_stride_the_binding_derives_is_held_to_its_declared_range(tmp_path):
    """m_aligned left out of a column-major call is derived (m rounded up to its multiple_of); a
    declared max it would pass is a refusal naming where the value came from, not a launch."""
    spec = op_dict("fp8_act_quant_capped")
    next(a for a in spec["args"] if a["name"] == "m_aligned")["max"] = 4
    x = bf16_bits(np.random.default_rng(0xCA9).uniform(-4, 4, (5, 128)))
    with metrale.Runtime("host", target="hopper", verify=False, cache_dir=str(tmp_path), ops=[spec]) as rt:
        with pytest.raises(metrale.ArgumentError,
                           match=r"m_aligned = 8 \(m = 5 rounded up to 4 \(scales\)\) is outside \[0, 4\]"):
            rt.ops.fp8_act_quant_capped(x, scale_layout=1)
        q, scales = rt.ops.fp8_act_quant_capped(x[:4], scale_layout=1)  # m = 4: m_aligned = 4 is within
        want_q, want_scales = fp8_reference(x[:4])
        np.testing.assert_array_equal(scales, want_scales)
        np.testing.assert_array_equal(q, want_q)
