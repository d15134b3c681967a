"""Refusals: bad shapes, wrong dtypes, non-contiguous arrays and null pointers raise a
metrale error naming what is wrong, and nothing is written (the outputs are poisoned first
and compared after)."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import POISON_F32, POISON_U8, bf16_bits

import metrale


@pytest.fixture()
def ba(rng):
    m, n, k = 4, 8, 256
    return dict(
        x=bf16_bits(rng.uniform(-1, 1, (m, k))),
        weight=bf16_bits(rng.uniform(-0.1, 0.1, (n, k))),
        a_log=rng.uniform(-1, 1, n // 2).astype(np.float32),
        dt_bias=rng.uniform(-1, 1, n // 2).astype(np.float32),
    )


@pytest.fixture()
def gate_out():
    return np.full((4, 8), POISON_F32, np.float32)


def unchanged_f32(a: np.ndarray) -> bool:
    return bool((a.view(np.uint32) == POISON_F32.view(np.uint32)).all())


def call_ba(rt, args, out, **overrides):
    merged = {**args, **overrides}
    return rt.ssm_ba_gates(
        merged["x"], merged["weight"], merged["a_log"], merged["dt_bias"], vheads_per_group=2, out=out
    )


@pytest.mark.parametrize(
    "overrides, message",
    [
        ({"x": np.zeros((4, 256), np.float32)}, "x: expected bf16"),
        ({"a_log": np.zeros(4, np.float64)}, "a_log: expected float32"),
        ({"weight": np.zeros((8, 128), np.uint16)}, "weight: expected shape (8, 256)"),
        ({"dt_bias": np.zeros(3, np.float32)}, "dt_bias: expected shape (4,)"),
        ({"x": np.zeros(256, np.uint16)}, "x: expected 2 dimension(s)"),
        ({"x": np.zeros((4, 512), np.uint16)[:, ::2]}, "x: each row must be contiguous"),
        ({"weight": np.zeros((256, 8), np.uint16).T}, "weight: must be C-contiguous"),
        ({"x": [[1, 2]]}, "x: expected a NumPy array"),
    ],
)
def test_ba_gates_refusals_from_the_package(rt, ba, gate_out, overrides, message):
    with pytest.raises(metrale.ArgumentError, match=message.replace("(", r"\(").replace(")", r"\)")):
        call_ba(rt, ba, gate_out, **overrides)
    assert unchanged_f32(gate_out)


def test_ba_gates_shapes_the_library_refuses(rt, ba, rng, gate_out):
    # K % 8 != 0: the package passes it on and the library names the constraint.
    x = bf16_bits(rng.uniform(-1, 1, (4, 100)))
    w = bf16_bits(rng.uniform(-1, 1, (8, 100)))
    with pytest.raises(metrale.ArgumentError, match="K"):
        call_ba(rt, ba, gate_out, x=x, weight=w)
    assert unchanged_f32(gate_out)
    # N odd: nv != N / 2.
    w7 = bf16_bits(rng.uniform(-1, 1, (7, 256)))
    with pytest.raises(metrale.ArgumentError, match="nv|N"):
        call_ba(rt, ba, gate_out, weight=w7)
    assert unchanged_f32(gate_out)


def test_wrong_out_is_refused(rt, ba):
    wrong_dtype = np.full((4, 8), 7, np.float64)
    with pytest.raises(metrale.ArgumentError, match="out: expected float32"):
        call_ba(rt, ba, wrong_dtype)
    read_only = np.full((4, 8), POISON_F32, np.float32)
    read_only.flags.writeable = False
    with pytest.raises(metrale.ArgumentError, match="read-only"):
        call_ba(rt, ba, read_only)
    assert unchanged_f32(read_only)
    with pytest.raises(metrale.ArgumentError, match=r"out: expected shape \(4, 8\)"):
        call_ba(rt, ba, np.full((4, 6), POISON_F32, np.float32))


def test_null_pointers_through_the_c_abi(rt, ba, gate_out):
    ptr = {name: a.__array_interface__["data"][0] for name, a in ba.items()}
    out = gate_out.__array_interface__["data"][0]
    with pytest.raises(metrale.ArgumentError, match="weight") as caught:
        rt.raw.ssm_ba_gates(ptr["x"], 0, ptr["a_log"], ptr["dt_bias"], out, 4, 8, 256, 256, 8, 4, 2)
    assert "null" in str(caught.value).lower()
    assert unchanged_f32(gate_out)
    q = np.full((4, 256), POISON_U8)
    with pytest.raises(metrale.ArgumentError, match="scales"):
        rt.raw.fp8_act_quant(ptr["x"], q.__array_interface__["data"][0], 0, 4, 256, 256)
    assert (q == POISON_U8).all()


def test_fp8_refusals_write_nothing(rt, rng):
    q = np.full((4, 200), POISON_U8)
    scales = np.full((4, 1), POISON_F32, np.float32)
    x = bf16_bits(rng.uniform(-1, 1, (4, 200)))
    with pytest.raises(metrale.ArgumentError, match="128"):
        rt.fp8_act_quant(x, out=(q, scales))
    assert (q == POISON_U8).all() and unchanged_f32(scales)
    x = bf16_bits(rng.uniform(-1, 1, (4, 256)))
    with pytest.raises(metrale.ArgumentError, match="q: expected uint8"):
        rt.fp8_act_quant(x, out=(np.zeros((4, 256), np.int8), np.zeros((4, 2), np.float32)))
    with pytest.raises(metrale.ArgumentError, match="scales: must be C-contiguous"):
        rt.fp8_act_quant(x, out=(np.zeros((4, 256), np.uint8), np.zeros((2, 4), np.float32).T))
    with pytest.raises(metrale.ArgumentError, match="kernel='fastest'"):
        rt.fp8_act_quant(x, kernel="fastest")


def test_runtime_errors():
    with pytest.raises(metrale.ConfigError, match="no-such-target"):
        metrale.Runtime("host", target="no-such-target")
    with pytest.raises(metrale.ArgumentError, match="backend='gpu'"):
        metrale.Runtime("gpu")
    rt = metrale.Runtime("host")
    rt.close()
    with pytest.raises(metrale.ArgumentError, match="closed"):
        rt.describe()


def test_registry_names_a_failed_compile(rt):
    rt.add_source("py_broken.cuh", "template <int B> __global__ void broken(float* p) { p[0] = undefined_name; }\n")
    variant = rt.declare("py_broken", "py_broken.cuh", "broken<1>", block=1)
    result = rt.compile(variant, "sm_90")
    assert not result.ok
    assert result.reason.startswith("compile failed") and "undefined_name" in result.reason
    assert "undefined_name" in result.log
    rt.build()
    handle, reason = rt.handle(variant)
    assert handle == 0 and reason.startswith("load failed")
    with pytest.raises(metrale.BackendError, match="absent"):
        rt.launch(0, (1, 1, 1), (1, 1, 1), [np.uint32(1)])
    with pytest.raises(metrale.ArgumentError, match="never declared"):
        rt.handle(10_000)


def test_no_device_is_a_state_then_an_error(rng):
    rt = metrale.Runtime("cuda")
    if rt.has_device:
        pytest.skip("this machine has a CUDA device")
    assert rt.no_device_reason and not rt.describe()["has_device"]
    assert rt.explain("fp8_act_quant", m=100, k=5120).twin_min_m == 53  # explain needs no device
    with pytest.raises(metrale.NoDeviceError, match="no device"):
        rt.fp8_act_quant(bf16_bits(rng.uniform(-1, 1, (2, 128))))
    with pytest.raises(metrale.ArgumentError, match="ssm_ba_gates_hopper='yes'"):
        metrale.Runtime("host", ssm_ba_gates_hopper="yes")
