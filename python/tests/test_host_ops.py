"""The library's ops from NumPy on the host backend, through rt.run, rt.ops and the thin
wrappers, against NumPy references; outputs poisoned first."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from conftest import POISON_F32, POISON_U8, ba_gates_reference, bf16_bits, fp8_reference

import metrale


# The README's Python example, line for line (tests/scripts/check_readme_examples.py): run as
# a script of its own, so it shows imports and needs no optional package.
README_EXAMPLE = """\
# README: Python example
import numpy as np

import metrale

rng = np.random.default_rng(0)
x = rng.standard_normal((4, 256), dtype=np.float32)
x_bf16 = (x.view(np.uint32) >> 16).astype(np.uint16)  # bf16 travels as its bits

with metrale.Runtime("host") as rt:  # "auto" takes the GPU (then pass device tensors)
    print(list(rt.ops))  # the ops this runtime serves; help(rt.ops.fp8_act_quant) documents one
    result = rt.run("fp8_act_quant", x=x_bf16)  # or rt.ops.fp8_act_quant(x=x_bf16)
    q, scales = result  # uint8 e4m3 codes [4, 256], float32 scales [4, 2]
    print(result.pick.role, result.pick.kernel)
# README: end
"""


def test_readme_example_matches_the_reference(capsys):
    namespace: dict = {}
    exec(compile(README_EXAMPLE, "README.md (Python example)", "exec"), namespace)
    x, q, scales, pick = namespace["x_bf16"], namespace["q"], namespace["scales"], namespace["result"].pick
    want_q, want_scales = fp8_reference(x)
    np.testing.assert_array_equal(scales, want_scales)
    np.testing.assert_array_equal(q, want_q)
    assert pick.op == "fp8_act_quant" and pick.role in ("parent", "twin")
    assert pick.kernel in capsys.readouterr().out


def ba_inputs(rng, m, n, k, pad=0):
    wide_x = bf16_bits(rng.uniform(-1, 1, (m, k + pad)))
    w = bf16_bits(rng.uniform(-0.1, 0.1, (n, k)))
    a_log = rng.uniform(-1, 1, n // 2).astype(np.float32)
    dt_bias = rng.uniform(-1, 1, n // 2).astype(np.float32)
    return wide_x[:, :k], w, a_log, dt_bias


@pytest.mark.parametrize("m, n, vpg", [(3, 8, 2), (7, 16, 8), (2, 12, 3)])
def test_ba_gates_through_run_with_padded_rows(rt, rng, m, n, vpg):
    x, w, a_log, dt_bias = ba_inputs(rng, m, n, 512, pad=16)  # x rows padded: k_stride = 528
    wide_out = np.full((m, n + 4), POISON_F32, np.float32)
    result = rt.run("ssm_ba_gates", x=x, weight=w, a_log=a_log, dt_bias=dt_bias, gate_out=wide_out[:, :n],
                    vheads_per_group=vpg)
    (out,) = result
    assert out.base is wide_out and result.pick.op == "ssm_ba_gates" and rt.last_pick == result.pick
    np.testing.assert_allclose(out, ba_gates_reference(x, w, a_log, dt_bias, vpg), rtol=1e-4, atol=1e-5)
    pad = wide_out[:, n:].view(np.uint32)
    assert (pad == POISON_F32.view(np.uint32)).all(), "the row padding of gate_out was written"


def test_ba_gates_through_ops_and_the_alias(rt, rng):
    x, w, a_log, dt_bias = ba_inputs(rng, 5, 8, 256)
    want = ba_gates_reference(x, w, a_log, dt_bias, 2)
    for function in (rt.ops.ssm_ba_gates, rt.ops.ba_gates, rt.ops["ba-gates"]):
        result = function(x=x, weight=w, a_log=a_log, dt_bias=dt_bias, vheads_per_group=2)
        assert result.gate_out.shape == (5, 8) and result.pick.op == "ssm_ba_gates"
        np.testing.assert_allclose(result.gate_out, want, rtol=1e-4, atol=1e-5)
    assert "vheads_per_group" in rt.ops.ssm_ba_gates.__doc__ and "role" in str(
        __import__("inspect").signature(rt.ops.ssm_ba_gates))


def test_forced_roles_and_their_picks(rt, rng):
    x, w, a_log, dt_bias = ba_inputs(rng, 4, 8, 256)
    args = dict(x=x, weight=w, a_log=a_log, dt_bias=dt_bias, vheads_per_group=2)
    parent = rt.run("ssm_ba_gates", role="parent", **args)
    assert (parent.pick.role, parent.pick.kernel, parent.pick.forced) == ("parent", "ssm_ba_gates", True)
    assert parent.pick.reason("parent") == "forced by the caller's kernel choice"
    twin = rt.run("ssm_ba_gates", role="twin", **args)
    assert (twin.pick.role, twin.pick.kernel) == ("twin", "ssm_ba_gates_hopper")
    assert parent.gate_out.tobytes() == twin.gate_out.tobytes()
    shared = rt.run("fp8_act_quant", role="shared", x=x)  # the parent's alias
    assert shared.pick.role == "parent" and shared.pick.kernel == "fp8_act_quant"


def test_forced_tensor_core_kernel_matches_the_reference(rt, rng):
    m, n, k, vpg = 70, 64, 512, 2  # a partial 128-token tile; K split over a cluster of 8
    x = bf16_bits(rng.standard_normal((m, k)))
    w = bf16_bits(0.02 * rng.standard_normal((n, k)))
    a_log, dt_bias = (rng.uniform(-1, 1, n // 2).astype(np.float32) for _ in range(2))
    out = rt.ops.ssm_ba_gates(x, w, a_log, dt_bias, vheads_per_group=vpg, role="mma").gate_out
    assert rt.last_pick.role == "tensor_core" and rt.last_pick.kernel == "ssm_ba_gates_mma"
    want = ba_gates_reference(x, w, a_log, dt_bias, vpg)
    assert np.linalg.norm(out - want) / np.linalg.norm(want) < 1e-5


def test_the_pick_names_the_shape_variant_that_ran(rng):
    # N = 96 pinned: the tensor-core kernel's 6-tile variant is built at open and the pick says so;
    # the twin has no shape constant, so its pick names the generic form.
    m, n, k, vpg = 70, 96, 512, 2
    x = bf16_bits(rng.standard_normal((m, k)))
    w = bf16_bits(0.02 * rng.standard_normal((n, k)))
    a_log, dt_bias = (rng.uniform(-1, 1, n // 2).astype(np.float32) for _ in range(2))
    want = ba_gates_reference(x, w, a_log, dt_bias, vpg)
    with metrale.Runtime("host", target="hopper", shapes={"ssm_ba_gates.n": [96]}) as pinned:
        out = pinned.ops.ssm_ba_gates(x, w, a_log, dt_bias, vheads_per_group=vpg, role="mma").gate_out
        assert (pinned.last_pick.kernel, pinned.last_pick.shape) == ("ssm_ba_gates_mma", 6)
        assert "specialised for shape 6" in pinned.last_pick.lines()[0]
        assert np.linalg.norm(out - want) / np.linalg.norm(want) < 1e-5
        pinned.ops.ssm_ba_gates(x, w, a_log, dt_bias, vheads_per_group=vpg, role="twin")
        assert (pinned.last_pick.role, pinned.last_pick.shape) == ("twin", 0)


@pytest.mark.parametrize("pow2", [False, True])
@pytest.mark.parametrize("column_major", [False, True])
def test_fp8_matches_the_reference(rt, rng, pow2, column_major):
    m, k = 6, 384
    x = bf16_bits(rng.uniform(-4, 4, (m, k)))
    q, scales = rt.ops.fp8_act_quant(x, scale_layout=int(column_major), pow2_scales=int(pow2))
    want_q, want_scales = fp8_reference(x, pow2)
    assert q.dtype == np.uint8 and scales.dtype == np.float32 and scales.shape == (m, 3)
    if column_major:
        assert scales.strides == (4, 4 * 8)  # M_aligned = 8
    np.testing.assert_array_equal(scales, want_scales)
    np.testing.assert_array_equal(q, want_q)
    # The same through rt.run by the declared names.
    run_q, run_scales = rt.run("fp8-quant", x=x, scale_layout=int(column_major), pow2_scales=int(pow2))
    np.testing.assert_array_equal(run_q, want_q)
    np.testing.assert_array_equal(run_scales, want_scales)


def test_fp8_writes_into_out_and_reads_its_layout(rt, rng):
    m, k = 3, 256
    x = bf16_bits(rng.uniform(-2, 2, (m, k)))
    q = np.full((m, k), POISON_U8)
    base = np.full((2, 4), POISON_F32, np.float32)  # column-major scales: [K/128][M_aligned = 4]
    result = rt.run("fp8_act_quant", x=x, q=q, scales=base.T[:m], role="twin")
    assert result.q is q and result.scales.base is base
    assert result.pick.kernel == "fp8_act_quant_hopper"
    want_q, want_scales = fp8_reference(x)
    np.testing.assert_array_equal(q, want_q)
    np.testing.assert_array_equal(base.T[:m], want_scales)
    assert (base[:, m:].view(np.uint32) == POISON_F32.view(np.uint32)).all(), "M_aligned's padding was written"


def test_bfloat16_and_e4m3_dtypes(rt, rng):
    x = rng.standard_normal((2, 128), dtype=np.float32).astype(ml_dtypes.bfloat16)
    q = np.zeros((2, 128), ml_dtypes.float8_e4m3fn)
    scales = np.full((2, 1), POISON_F32, np.float32)
    rt.run("fp8_act_quant", x=x, q=q, scales=scales)
    want_q, want_scales = fp8_reference(x.view(np.uint16))
    np.testing.assert_array_equal(q.view(np.uint8), want_q)
    np.testing.assert_array_equal(scales, want_scales)


class HostDLPack:
    """An array seen only through DLPack (as a JAX or PyTorch CPU array would be)."""

    def __init__(self, array: np.ndarray) -> None:
        self._array = array

    def __dlpack__(self, **kwargs):
        return self._array.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._array.__dlpack_device__()


def test_dlpack_inputs_and_outputs(rt, rng):
    x = bf16_bits(rng.uniform(-2, 2, (2, 128)))
    q = np.full((2, 128), POISON_U8)
    scales = np.full((2, 1), POISON_F32, np.float32)
    rt.ops.fp8_act_quant(HostDLPack(x), q=HostDLPack(q), scales=HostDLPack(scales))
    want_q, want_scales = fp8_reference(x)
    np.testing.assert_array_equal(q, want_q)
    np.testing.assert_array_equal(scales, want_scales)


def test_explain_agrees_with_the_op(rt, rng):
    x = bf16_bits(rng.uniform(-1, 1, (3, 256)))
    pick = rt.run("fp8_act_quant", x=x).pick
    why = rt.explain("fp8_act_quant", m=3, k=256)
    assert (why.kernel, why.role) == (pick.kernel, pick.role)
    assert why.role_explanation("twin").reject == pick.reason("twin")
    assert rt.explain("fp8_act_quant", m=100, k=5120).role_explanation("twin").min_m == 53
    # K = 64 is one chunk: no K split, so the tensor-core kernel wants 11 tiles and the twin runs.
    assert rt.explain("ssm_ba_gates", m=500, n=96, k=64).role == "twin"
    prefill = rt.explain("ssm_ba_gates", m=8192, n=96, k=5120)
    # 11 blocks (a twelfth of 132 SMs): 2 tiles of 128 tokens, each split over a cluster of 8.
    tensor_core = prefill.role_explanation("tensor_core")
    assert prefill.kernel == "ssm_ba_gates_mma" and tensor_core.min_m == 128 * 2
    small = rt.explain("ssm_ba_gates", m=255, n=96, k=5120).role_explanation("tensor_core")
    assert not small.runs and "too few tokens" in small.reject


def test_ops_and_levers_are_listed_from_the_declarations(rt):
    assert {"ssm_ba_gates", "fp8_act_quant"} <= set(rt.ops)
    assert "ba_gates" in dir(rt.ops) and "fp8_quant" in dir(rt.ops)
    spec = rt.op("ba-gates")
    assert spec.name == "ssm_ba_gates" and [r.role for r in spec.roles][:2] == ["parent", "twin"]
    assert {"ssm_ba_gates_hopper", "fp8_act_quant_hopper", "ssm_ba_gates_tensor_core"} <= set(rt.levers)
    lever = rt.lever("fp8_act_quant_hopper")
    assert lever.env_var == "METRALE_FP8_ACT_QUANT_HOPPER" and lever.provenance in ("file", "environment")


def test_levers_set_by_name_carry_their_provenance(rng):
    with metrale.Runtime("host", target="b200", levers={"ssm_ba_gates_hopper": False}) as rt:
        info = rt.describe()
        assert info["target"] == "b200" and info["has_device"]
        lever = rt.levers["ssm_ba_gates_hopper"]
        assert (lever.value, lever.provenance) == (False, "options")
        assert info["levers"]["ssm_ba_gates_hopper"]["provenance"] == "options"
        assert rt.levers["fp8_act_quant_hopper"].provenance in ("file", "environment")
        x, w, a_log, dt_bias = ba_inputs(rng, 300, 96, 256)  # the twin's M, were its lever on
        pick = rt.run("ssm_ba_gates", x=x, weight=w, a_log=a_log, dt_bias=dt_bias, vheads_per_group=2).pick
        assert pick.role != "twin" and "METRALE_SSM_BA_GATES_HOPPER" in (pick.reason("twin") or "") + lever.env_var


def test_cache_dir_option_receives_compiled_kernels(tmp_path):
    with metrale.Runtime("host", cache_dir=str(tmp_path)) as rt:
        rt.add_source("py_scale.cuh", "template <int B> __global__ void scale(float* p) { p[threadIdx.x] *= B; }\n")
        variant = rt.declare("py_scale", "py_scale.cuh", "scale<2>", block=2)
        assert rt.declare("py_scale", "py_scale.cuh", "scale<2>", block=2) == variant
        result = rt.compile(variant, "sm_90")
        assert result.ok and result.reason is None, result.log
    assert list(tmp_path.rglob("py_scale*")), "nothing was written under cache_dir"


def test_bundle_dirs_reach_the_runtime_and_its_lines_reach_logging(tmp_path, caplog):
    # A directory whose manifest is not JSON: the runtime's bundle reader names it as skipped,
    # which only happens if the option got through the C ABI, and the line arrives in logging.
    broken = tmp_path / "broken-bundle"
    broken.mkdir()
    (broken / "bundle.json").write_text("not json")
    with caplog.at_level("INFO", logger="metrale"):
        with metrale.Runtime("host", bundle_dirs=[str(tmp_path / "absent"), str(broken)]):
            pass
    lines = [r.getMessage() for r in caplog.records if r.name == "metrale"]
    assert any(str(broken) in line and "skipped" in line for line in lines), lines
    assert any(str(tmp_path / "absent") in line for line in lines), lines
    assert any(r.levelname == "WARNING" for r in caplog.records if r.name == "metrale")
    caplog.clear()
    with metrale.Runtime("host"):
        pass
    assert not any(str(broken) in r.getMessage() for r in caplog.records)
    with pytest.raises(metrale.ArgumentError, match="bundle_dirs"):
        metrale.Runtime("host", bundle_dirs=["/a:b"])
    with pytest.raises(metrale.ArgumentError, match="bundle_dirs"):
        metrale.Runtime("host", bundle_dirs="/one/string")
