"""Both ops from NumPy on the host backend against NumPy references."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from conftest import POISON_F32, POISON_U8, ba_gates_reference, bf16_bits, fp8_reference

import metrale


# README: Python example
def ba_gates_example(rng: np.random.Generator):
    x = rng.standard_normal((5, 256), dtype=np.float32).astype(ml_dtypes.bfloat16)
    w = (0.1 * rng.standard_normal((8, 256), dtype=np.float32)).astype(ml_dtypes.bfloat16)
    a_log = rng.standard_normal(4, dtype=np.float32)
    dt_bias = rng.standard_normal(4, dtype=np.float32)
    with metrale.Runtime(backend="host") as rt:  # "auto" takes the GPU (then pass device arrays)
        gates = rt.ssm_ba_gates(x, w, a_log, dt_bias, vheads_per_group=2)  # float32 [5, 8]
        q, scales = rt.fp8_act_quant(x)  # uint8 e4m3 bits [5, 256], float32 [5, 2]
        print(rt.last_pick.kernel, rt.last_pick.reason)
    return x, w, a_log, dt_bias, gates, q, scales
# README: end


def test_readme_example_matches_references(rng):
    x, w, a_log, dt_bias, gates, q, scales = ba_gates_example(rng)
    bits = x.view(np.uint16)
    np.testing.assert_allclose(gates, ba_gates_reference(bits, w.view(np.uint16), a_log, dt_bias, 2), rtol=1e-4, atol=1e-5)
    want_q, want_scales = fp8_reference(bits)
    np.testing.assert_array_equal(scales, want_scales)
    np.testing.assert_array_equal(q, want_q)


@pytest.mark.parametrize("m, n, vpg", [(3, 8, 2), (7, 16, 8), (2, 12, 3)])
def test_ba_gates_padded_rows_match_the_oracle(rt, rng, m, n, vpg):
    k, nv = 512, n // 2
    wide_x = bf16_bits(rng.uniform(-1, 1, (m, k + 16)))
    x = wide_x[:, :k]  # rows padded: k_stride = k + 16
    w = bf16_bits(rng.uniform(-0.1, 0.1, (n, k)))
    a_log = rng.uniform(-1, 1, nv).astype(np.float32)
    dt_bias = rng.uniform(-1, 1, nv).astype(np.float32)
    wide_out = np.full((m, 2 * nv + 4), POISON_F32, np.float32)
    out = rt.ssm_ba_gates(x, w, a_log, dt_bias, vheads_per_group=vpg, out=wide_out[:, : 2 * nv])
    assert out.base is wide_out
    np.testing.assert_allclose(out, ba_gates_reference(x, w, a_log, dt_bias, vpg), rtol=1e-4, atol=1e-5)
    pad = wide_out[:, 2 * nv :].view(np.uint32)
    assert (pad == POISON_F32.view(np.uint32)).all(), "the row padding of out was written"


def test_forced_twin_writes_the_parents_bytes(rt, rng):
    x = bf16_bits(rng.uniform(-1, 1, (4, 256)))
    w = bf16_bits(rng.uniform(-0.1, 0.1, (8, 256)))
    a_log, dt_bias = (rng.uniform(-1, 1, 4).astype(np.float32) for _ in range(2))
    parent = rt.ssm_ba_gates(x, w, a_log, dt_bias, vheads_per_group=2, kernel="parent")
    assert rt.last_pick == metrale.Pick("ssm_ba_gates", False, "forced by the caller's kernel choice", False, None)
    twin = rt.ssm_ba_gates(x, w, a_log, dt_bias, vheads_per_group=2, kernel="twin")
    assert rt.last_pick.twin and rt.last_pick.kernel == "ssm_ba_gates_hopper"
    assert parent.tobytes() == twin.tobytes()


def test_forced_tensor_core_kernel_matches_the_reference(rt, rng):
    m, n, k, vpg = 70, 64, 512, 2  # a partial 128-token tile; K split over a cluster of 8
    x = bf16_bits(rng.standard_normal((m, k)))
    w = bf16_bits(0.02 * rng.standard_normal((n, k)))
    a_log, dt_bias = (rng.uniform(-1, 1, n // 2).astype(np.float32) for _ in range(2))
    out = rt.ssm_ba_gates(x, w, a_log, dt_bias, vheads_per_group=vpg, kernel="mma")
    assert rt.last_pick.tensor_core and rt.last_pick.kernel == "ssm_ba_gates_mma"
    want = ba_gates_reference(x, w, a_log, dt_bias, vpg)
    assert np.linalg.norm(out - want) / np.linalg.norm(want) < 1e-5
    with pytest.raises(metrale.ArgumentError, match="tensor-core"):
        rt.fp8_act_quant(bf16_bits(rng.uniform(-1, 1, (2, 256))), kernel="mma")


@pytest.mark.parametrize("pow2", [False, True])
@pytest.mark.parametrize("column_major", [False, True])
def test_fp8_matches_the_reference(rt, rng, pow2, column_major):
    m, k = 6, 384
    x = bf16_bits(rng.uniform(-4, 4, (m, k)))
    q, scales = rt.fp8_act_quant(x, column_major_scales=column_major, pow2_scales=pow2)
    want_q, want_scales = fp8_reference(x, pow2)
    assert q.dtype == np.uint8 and scales.dtype == np.float32 and scales.shape == (m, 3)
    if column_major:
        assert scales.strides == (4, 4 * 8)  # M_aligned = 8
    np.testing.assert_array_equal(scales, want_scales)
    np.testing.assert_array_equal(q, want_q)


def test_fp8_writes_into_out(rt, rng):
    x = bf16_bits(rng.uniform(-2, 2, (3, 256)))
    q = np.full((3, 256), POISON_U8)
    scales = np.full((3, 2), POISON_F32, np.float32)
    got_q, got_scales = rt.fp8_act_quant(x, out=(q, scales), kernel="twin")
    assert got_q is q and got_scales is scales
    assert rt.last_pick.kernel == "fp8_act_quant_hopper"
    np.testing.assert_array_equal(q, fp8_reference(x)[0])


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
    rt.fp8_act_quant(HostDLPack(x), out=(HostDLPack(q), HostDLPack(scales)))
    want_q, want_scales = fp8_reference(x)
    np.testing.assert_array_equal(q, want_q)
    np.testing.assert_array_equal(scales, want_scales)


def test_explain_agrees_with_the_op(rt, rng):
    x = bf16_bits(rng.uniform(-1, 1, (3, 256)))
    rt.fp8_act_quant(x)
    why = rt.explain("fp8_act_quant", m=3, k=256)
    assert (why.kernel, why.twin, why.reason) == (rt.last_pick.kernel, rt.last_pick.twin, rt.last_pick.reason)
    assert rt.explain("fp8_act_quant", m=100, k=5120).twin_min_m == 53
    # K = 64 is one chunk: no K split, so the tensor-core kernel wants 11 tiles and the twin runs.
    assert rt.explain("ssm_ba_gates", m=500, n=96, k=64).twin
    prefill = rt.explain("ssm_ba_gates", m=8192, n=96, k=5120)
    # 11 blocks (a twelfth of 132 SMs): 2 tiles of 128 tokens, each split over a cluster of 8.
    assert prefill.tensor_core and prefill.kernel == "ssm_ba_gates_mma" and prefill.tensor_core_min_m == 128 * 2
    small = rt.explain("ssm_ba_gates", m=255, n=96, k=5120)
    assert not small.tensor_core and "too few tokens" in small.tensor_core_reason


def test_describe_reports_lever_provenance():
    with metrale.Runtime("host", target="b200", ssm_ba_gates_hopper=True) as rt:
        info = rt.describe()
        assert info["target"] == "b200" and info["has_device"]
        assert info["levers"]["ssm_ba_gates_hopper"] == {
            "value": True,
            "provenance": "options",
            "origin": "metrale_runtime_options.ssm_ba_gates_hopper = on",
        }
        assert info["levers"]["fp8_act_quant_hopper"]["provenance"] in ("file", "environment")


def test_cache_dir_option_receives_compiled_kernels(tmp_path):
    with metrale.Runtime("host", cache_dir=str(tmp_path)) as rt:
        rt.add_source("py_scale.cuh", "template <int B> __global__ void scale(float* p) { p[threadIdx.x] *= B; }\n")
        variant = rt.declare("py_scale", "py_scale.cuh", "scale<2>", block=2)
        assert rt.declare("py_scale", "py_scale.cuh", "scale<2>", block=2) == variant
        result = rt.compile(variant, "sm_90")
        assert result.ok and result.reason is None, result.log
    assert list(tmp_path.rglob("py_scale*")), "nothing was written under cache_dir"


def test_bundle_dirs_option_reaches_the_runtime(tmp_path, capfd):
    # A directory whose manifest is not JSON: the runtime's bundle reader names it as skipped,
    # which only happens if the option got through the C ABI to the runtime.
    broken = tmp_path / "broken-bundle"
    broken.mkdir()
    (broken / "bundle.json").write_text("not json")
    with metrale.Runtime("host", bundle_dirs=[str(tmp_path / "absent"), str(broken)]):
        pass
    err = capfd.readouterr().err
    assert str(broken) in err and "skipped" in err, err
    assert str(tmp_path / "absent") in err, err
    with metrale.Runtime("host"):
        pass
    assert str(broken) not in capfd.readouterr().err
    with pytest.raises(metrale.ArgumentError, match="bundle_dirs"):
        metrale.Runtime("host", bundle_dirs=["/a:b"])
    with pytest.raises(metrale.ArgumentError, match="bundle_dirs"):
        metrale.Runtime("host", bundle_dirs="/one/string")


MIRROR_SOURCE = """
template <int B>
__global__ void py_mirror(const float* x, float* y, float s, int blocks) {
  __shared__ float tile[B];
  const int t = static_cast<int>(threadIdx.x);
  const int base = static_cast<int>(blockIdx.x * blockDim.x);
  if (static_cast<int>(blockIdx.x) >= blocks) return;
  tile[t] = x[base + t];
  __syncthreads();
  const float v = tile[B - 1 - t];
  float sum = v;
  for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
  y[base + t] = s * v + sum;
}
"""


def test_engine_kernel_runs_through_the_host_jit(tmp_path, rng):
    # No built-in host instantiation: libmetrale.so (loaded by the extension, not global)
    # compiles it with the system compiler and hands the object its prelude functions.
    blocks = 5
    x = rng.integers(-1000, 1000, 64 * blocks).astype(np.float32)  # integers: every sum exact
    for attempt in ("compiled", "from the cache"):
        with metrale.Runtime("host", cache_dir=str(tmp_path), host_worker_threads=2) as rt:
            rt.add_source("py_mirror.cuh", MIRROR_SOURCE)
            variant = rt.declare("py_mirror", "py_mirror.cuh", "py_mirror<64>", block=64)
            rt.build()
            handle, reason = rt.handle(variant)
            assert handle != 0, f"{attempt}: {reason}"
            y = np.full_like(x, POISON_F32)
            rt.launch(handle, (blocks,), (64,), [x, y, np.float32(0.5), np.int32(blocks)])
            rt.synchronize()
        mirrored = x.reshape(blocks, 2, 32)[:, ::-1, ::-1]  # thread t reads x[63 - t]
        want = 0.5 * mirrored + mirrored.sum(axis=2, keepdims=True)
        np.testing.assert_array_equal(y, want.reshape(-1), err_msg=attempt)
    assert list((tmp_path / "host").glob("py_mirror*.so")), "the object was not kept in the cache"
