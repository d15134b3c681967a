"""Refusals: bad shapes, dtypes, layouts, sizes, names and places raise a metrale error naming
the op, the argument and the rule, before anything is allocated or launched: the outputs are
poisoned first and compared after, and last_pick is left None."""

from __future__ import annotations

import re

import numpy as np
import pytest
from conftest import POISON_F32, POISON_U8, bf16_bits

import metrale
from metrale._arrays import Tensor, require_place


@pytest.fixture()
def ba(rng):
    m, n, k = 4, 8, 256
    return dict(
        x=bf16_bits(rng.uniform(-1, 1, (m, k))),
        weight=bf16_bits(rng.uniform(-0.1, 0.1, (n, k))),
        a_log=rng.uniform(-1, 1, n // 2).astype(np.float32),
        dt_bias=rng.uniform(-1, 1, n // 2).astype(np.float32),
        vheads_per_group=2,
    )


@pytest.fixture()
def gate_out():
    return np.full((4, 8), POISON_F32, np.float32)


def unchanged_f32(a: np.ndarray) -> bool:
    return bool((a.view(np.uint32) == POISON_F32.view(np.uint32)).all())


def refused(rt, message, op, **args):
    """The call raises ArgumentError whose message contains ``message``; no pick is left."""
    rt.last_pick = None
    rt.run("fp8_act_quant", x=bf16_bits(np.ones((1, 128))))  # a pick a refusal must clear
    with pytest.raises(metrale.ArgumentError, match=re.escape(message)):
        rt.run(op, **args)
    assert rt.last_pick is None


@pytest.mark.parametrize(
    "overrides, message",
    [
        ({"x": np.zeros((4, 256), np.float32)}, "ssm_ba_gates: x: expected bfloat16 ("),
        ({"a_log": np.zeros(4, np.float64)}, "ssm_ba_gates: a_log: expected float32"),
        ({"weight": np.zeros((8, 128), np.uint16)}, "weight.shape[1] is k = 128, but x.shape[1] is k = 256"),
        ({"dt_bias": np.zeros(3, np.float32)}, "dt_bias.shape[0] is nv = 3, but a_log.shape[0] is nv = 4"),
        ({"x": np.zeros(256, np.uint16)}, "x: expected 2 dimension(s) [m, k_stride], got shape (256,)"),
        ({"x": np.zeros((4, 512), np.uint16)[:, ::2]}, "x: each row must be contiguous"),
        ({"weight": np.zeros((256, 8), np.uint16).T}, "weight: each row must be contiguous"),
        ({"weight": np.zeros((8, 300), np.uint16)[:, :256]}, "weight: rows must be dense (the op takes no row stride"),
        ({"x": [[1, 2]]}, "x: expected a NumPy array"),
        ({"vheads_per_group": -1}, "vheads_per_group=-1 is outside [0, 4294967295]"),
        ({"vheads_per_group": "2"}, "vheads_per_group='2': expected an integer"),
        ({"vheads_per_group": None}, "vheads_per_group: missing"),
        ({"m": 5}, "x.shape[0] is m = 4, but m= (given) is m = 5"),
        ({"k_stride": 300}, "x.shape[1] is k_stride = 256, but k_stride= (given) is k_stride = 300"),
        ({"gate_out": np.full((4, 8), 7, np.float64)}, "gate_out: expected float32"),
        ({"gate_out": np.full((4, 6), POISON_F32, np.float32)}, "gate_out.shape[1] is n = 6, but weight.shape[0] is n = 8"),
        ({"gate_out": np.full((5, 8), POISON_F32, np.float32)}, "gate_out.shape[0] is m = 5, but x.shape[0] is m = 4"),
        ({"bias": np.zeros(4, np.float32)}, "ssm_ba_gates: no argument named 'bias' (arguments: x, weight"),
        ({"x": None}, "ssm_ba_gates: x: missing (an input bfloat16 tensor [m, k_stride]"),
    ],
)
def test_ba_gates_refusals_from_the_package(rt, ba, gate_out, overrides, message):
    args = {"gate_out": gate_out, **ba, **overrides}
    refused(rt, message, "ssm_ba_gates", **args)
    assert unchanged_f32(gate_out)


def test_read_only_and_misaligned_outputs(rt, ba):
    read_only = np.full((4, 8), POISON_F32, np.float32)
    read_only.flags.writeable = False
    refused(rt, "gate_out: the output array is read-only", "ssm_ba_gates", gate_out=read_only, **ba)
    gate_out = np.full((4, 8), POISON_F32, np.float32)
    x = np.zeros(4 * 256 + 1, np.uint16)[1:].reshape(4, 256)  # 2 bytes past NumPy's aligned start
    refused(rt, "x: its address must be 16-byte aligned", "ssm_ba_gates", **{**ba, "x": x, "gate_out": gate_out})
    assert unchanged_f32(gate_out) and unchanged_f32(read_only)


def test_shapes_the_library_refuses_write_nothing(rt, ba, rng, gate_out):
    # K % 8 != 0 and N odd: the package passes them on and the library names the constraint.
    x = bf16_bits(rng.uniform(-1, 1, (4, 100)))
    w = bf16_bits(rng.uniform(-1, 1, (8, 100)))
    odd_out = np.full((4, 7), POISON_F32, np.float32)
    refused_lib = [({"x": x, "weight": w}, "K"),
                   ({"weight": bf16_bits(rng.uniform(-1, 1, (7, 256))), "gate_out": odd_out}, "N")]
    for overrides, word in refused_lib:
        with pytest.raises(metrale.ArgumentError, match=word):
            rt.run("ssm_ba_gates", **{**ba, "gate_out": gate_out, **overrides})
        assert unchanged_f32(overrides.get("gate_out", gate_out)) and rt.last_pick is None


@pytest.mark.parametrize("m, k, message", [(0, 256, "M"), (4, 100, "k = 100 (x.shape[1]) is not a multiple of 128")])
def test_fp8_sizes_are_named_not_strides(rt, rng, m, k, message):
    # Today's bug: M = 0 and K = 100 surfaced as "strides (0, 0)".
    x = bf16_bits(rng.uniform(-1, 1, (m, k)))
    with pytest.raises(metrale.ArgumentError, match=re.escape(message)) as caught:
        rt.ops.fp8_act_quant(x)
    assert "strides" not in str(caught.value)


def test_fp8_refusals_write_nothing(rt, rng):
    x = bf16_bits(rng.uniform(-1, 1, (4, 256)))
    q = np.full((4, 256), POISON_U8)
    scales = np.full((4, 1), POISON_F32, np.float32)
    refused(rt, "scales.shape[1] is 1, but x.shape[1] is k = 256 and k/128 = 2", "fp8_act_quant", x=x, q=q, scales=scales)
    assert (q == POISON_U8).all() and unchanged_f32(scales)
    refused(rt, "q: expected float8_e4m3fn (ml_dtypes or torch, or its bits as uint8), got int8", "fp8_act_quant",
            x=x, q=np.zeros((4, 256), np.int8))
    with pytest.raises(metrale.ArgumentError, match="scales: must be C-contiguous"):
        rt.ops.fp8_act_quant(x, q=np.zeros((4, 256), np.uint8), scales=np.zeros((2, 4), np.float32).T, scale_layout=0)
    # Column-major scales to allocate with a column stride short of M: refused before allocating.
    six = bf16_bits(rng.uniform(-1, 1, (6, 256)))
    refused(rt, "m_aligned = 4 (m_aligned= (given)) is less than m = 6", "fp8_act_quant", x=six, scale_layout=1,
            m_aligned=4)
    refused(rt, "m_aligned = 6 (m_aligned= (given)) is not a multiple of 4", "fp8_act_quant", x=x, scale_layout=1,
            m_aligned=6)
    refused(rt, "scale_layout=2 is outside [0, 1]", "fp8_act_quant", x=x, scale_layout=2)


def test_unknown_op_and_role_are_named_with_the_valid_ones(rt, rng):
    x = bf16_bits(rng.uniform(-1, 1, (2, 256)))
    refused(rt, "no op named 'fp8' (ops: ssm_ba_gates, fp8_act_quant", "fp8", x=x)
    with pytest.raises(metrale.ArgumentError, match=re.escape("no kernel role 'mma' (roles: parent (shared), twin)")):
        rt.ops.fp8_act_quant(x, role="mma")
    with pytest.raises(AttributeError, match="no op named 'fp9'"):
        rt.ops.fp9


def test_runtime_options_are_named():
    with pytest.raises(metrale.ConfigError, match=r"no-such-target.*known: .*hopper"):
        metrale.Runtime("host", target="no-such-target")
    with pytest.raises(metrale.ConfigError, match=r"'no_such_lever' \(known: .*ssm_ba_gates_hopper"):
        metrale.Runtime("host", levers={"no_such_lever": True})
    with pytest.raises(metrale.ArgumentError, match=r"levers\['ssm_ba_gates_hopper'\]='yes'"):
        metrale.Runtime("host", levers={"ssm_ba_gates_hopper": "yes"})
    with pytest.raises(metrale.ArgumentError, match="backend='gpu'"):
        metrale.Runtime("gpu")
    with pytest.raises(metrale.ArgumentError, match=r"host_worker_threads=-1: expected an integer"):
        metrale.Runtime("host", host_worker_threads=-1)


def test_a_tensor_on_another_device_is_refused_naming_both():
    def on(device: bool, device_id: int) -> Tensor:
        return Tensor("x", 0x1000, (2, 128), (256, 2), "bf16", device, device_id, True, None)

    require_place(on(True, 1), on_host=False, device_ordinal=1)
    with pytest.raises(metrale.ArgumentError, match=r"x: is on CUDA device 1 \(cuda:1\), but this runtime runs on "
                                                     r"CUDA device 0 \(cuda:0\)"):
        require_place(on(True, 1), on_host=False, device_ordinal=0)
    with pytest.raises(metrale.ArgumentError, match="x: is in host memory, but this runtime runs on CUDA device 0"):
        require_place(on(False, 0), on_host=False, device_ordinal=0)
    with pytest.raises(metrale.ArgumentError, match="x: is in CUDA memory, but this runtime runs on the host backend"):
        require_place(on(True, 0), on_host=True, device_ordinal=0)


def test_no_device_is_a_state_of_the_raw_runtime_and_an_error_at_open(rng):
    # The C ABI opens "cuda" without a device as a state (explain needs none); the package
    # refuses it at open (Runtime("auto") takes the host backend instead: test_python_first).
    try:
        metrale.Runtime("cuda").close()
        pytest.skip("this machine has a CUDA device")
    except metrale.NoDeviceError as error:
        assert "no CUDA device" in str(error)
    raw = metrale._native.NativeRuntime(2, 0, "hopper", None, [], 0, 0)
    info = raw.describe()
    assert info["no_device_reason"] and not info["has_device"]
    with pytest.raises(metrale.NoDeviceError, match="no device"):
        raw.run("fp8_act_quant", None, ("x", "q", "scales", "m", "k"), (0, 0, 0, 2, 128))
    raw.close()


def test_a_call_shaped_like_a_checked_one_is_still_checked(rt, rng):
    # A call with the arrays' shapes, strides, dtypes and flags of an earlier one reuses its
    # checks; anything that changes takes them again, and a new address is checked for alignment.
    import ml_dtypes

    x = bf16_bits(rng.uniform(-1, 1, (4, 256)))
    q = np.full((4, 256), POISON_U8)
    scales = np.full((4, 2), POISON_F32, np.float32)
    rt.run("fp8_act_quant", x=x, q=q, scales=scales)
    q[:] = POISON_U8
    refused(rt, "x: expected bfloat16 (ml_dtypes.bfloat16, torch.bfloat16, or its bits as uint16), got int16",
            "fp8_act_quant", x=x.view(np.int16), q=q, scales=scales)
    misaligned = np.zeros(4 * 256 + 1, np.uint16)[1:].reshape(4, 256)
    refused(rt, "x: its address must be 16-byte aligned", "fp8_act_quant", x=misaligned, q=q, scales=scales)
    read_only = q.copy()
    read_only.flags.writeable = False
    refused(rt, "q: the output array is read-only", "fp8_act_quant", x=x, q=read_only, scales=scales)
    e4m3 = np.zeros((4, 256), ml_dtypes.float8_e4m3fn)
    rt.run("fp8_act_quant", x=x, q=e4m3, scales=scales)
    refused(rt, "q: expected float8_e4m3fn", "fp8_act_quant", x=x, q=np.zeros((4, 256), ml_dtypes.float8_e5m2),
            scales=scales)
    refused(rt, "x.shape[0] is m = 4, but m= (given) is m = 3", "fp8_act_quant", x=x, q=q, scales=scales, m=3)
    assert (q == POISON_U8).all()


def test_prepare_counts_its_kernels_and_refuses_by_name():
    """rt.prepare (metrale_op_prepare): the guards' pick and each built role made ready for a
    graph capture; a tensor, an unknown role or a shape the op refuses is named."""
    with metrale.Runtime("host") as rt:
        assert rt.prepare("fp8_act_quant", m=1, k=256) >= 2  # the pick, the parent, the twin
        assert rt.prepare("fp8-quant", role="parent", m=1, k=256) == 1
        with pytest.raises(metrale.ArgumentError, match="prepare takes sizes, and x is a tensor"):
            rt.prepare("fp8_act_quant", x=1, m=1, k=256)
        with pytest.raises(metrale.ArgumentError, match="no kernel role 'mma'"):
            rt.prepare("fp8_act_quant", role="mma", m=1, k=256)
        with pytest.raises(metrale.ArgumentError, match="K=100"):
            rt.prepare("fp8_act_quant", m=1, k=100)


def test_a_capture_refusal_is_a_capture_error():
    """METRALE_ERROR_CAPTURE (7) raises metrale.CaptureError, a BackendError."""
    from metrale._errors import from_status

    error = from_status(7, "ssm_ba_gates on a capturing stream: ...; call prepare")
    assert isinstance(error, metrale.CaptureError) and isinstance(error, metrale.BackendError)
    assert metrale.CaptureError.status == 7


def test_pinned_shapes_open_and_bad_pins_are_named():
    # shapes= pins shape constants (issue 26): a good pin opens and explain reports it; a key that
    # is not <op>.<argument>, a value that is not a positive integer and an argument without a
    # shape constant are refused by name.
    with metrale.Runtime("host", target="hopper", shapes={"ssm_ba_gates.n": [96, 90]}) as pinned:
        assert pinned.has_device
    with pytest.raises(metrale.ArgumentError, match=r"shapes\['n'\]"):
        metrale.Runtime("host", shapes={"n": [96]})
    with pytest.raises(metrale.ArgumentError, match="positive integers"):
        metrale.Runtime("host", shapes={"ssm_ba_gates.n": [0]})
    with pytest.raises(metrale.ConfigError, match="has no shape constant 'k'"):
        metrale.Runtime("host", shapes={"ssm_ba_gates.k": [96]})
