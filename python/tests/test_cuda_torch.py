"""Both ops on a CUDA device from PyTorch tensors (DLPack, the tensor's current stream), through
rt.run and the wrappers, against the host backend; tensors on the wrong place refused.
BA gates are judged by the bounds of tests/support/ba_gates_check.hpp (conftest): at M = 300 the
guards pick the tensor-core kernel, which sums in another order than the parent, so its bytes are
not the parent's (issue 36); the parent forced is within 2e-6 of the host's (the device's expf).
FP8 codes and scales must equal the host's exactly.
Skips without PyTorch or a device: tools/device_check.sh runs it on a lent GPU."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import POISON_F32, assert_ba_close_to, assert_ba_within_oracle, ba_gates_reference, bf16_bits

import metrale

torch = pytest.importorskip("torch")


@pytest.fixture(scope="module")
def cuda_rt():
    if not torch.cuda.is_available():
        pytest.skip("PyTorch sees no CUDA device")
    try:
        rt = metrale.Runtime("cuda")
    except metrale.NoDeviceError as error:
        pytest.skip(f"metrale sees no device: {error}")
    yield rt
    rt.close()


def on_device(a: np.ndarray):
    return torch.from_numpy(a.view(np.int16) if a.dtype == np.uint16 else a).cuda()


def test_torch_tensors_match_the_host_backend(cuda_rt, rt, rng):
    m, n, k = 300, 96, 5120
    x = bf16_bits(rng.uniform(-1, 1, (m, k)))
    w = bf16_bits(rng.uniform(-0.05, 0.05, (n, k)))
    a_log, dt_bias = (rng.uniform(-1, 1, n // 2).astype(np.float32) for _ in range(2))
    tx = on_device(x).view(torch.bfloat16)
    tw = on_device(w).view(torch.bfloat16)
    out = torch.full((m, n), float(POISON_F32), dtype=torch.float32, device="cuda")
    result = cuda_rt.run("ssm_ba_gates", x=tx, weight=tw, a_log=on_device(a_log), dt_bias=on_device(dt_bias),
                         gate_out=out, vheads_per_group=3)
    torch.cuda.current_stream().synchronize()
    assert result.gate_out is out
    oracle = ba_gates_reference(x, w, a_log, dt_bias, 3)
    assert_ba_within_oracle(out.cpu().numpy(), oracle, f"the pick {result.pick}")
    # The parent forced: the host's accumulation order, so close to its bytes element by element.
    parent = torch.full((m, n), float(POISON_F32), dtype=torch.float32, device="cuda")
    cuda_rt.run("ssm_ba_gates", x=tx, weight=tw, a_log=on_device(a_log), dt_bias=on_device(dt_bias),
                gate_out=parent, vheads_per_group=3, role="parent")
    torch.cuda.current_stream().synchronize()
    want = rt.ops.ssm_ba_gates(x, w, a_log, dt_bias, vheads_per_group=3, role="parent").gate_out
    assert_ba_close_to(parent.cpu().numpy(), want, "the parent on the device")

    q, scales = cuda_rt.ops.fp8_act_quant(tx)
    torch.cuda.current_stream().synchronize()
    assert q.device.type == "cuda" and q.dtype == torch.float8_e4m3fn  # e4m3 as itself, no bit view
    want_q, want_scales = rt.ops.fp8_act_quant(x)
    np.testing.assert_array_equal(q.view(torch.uint8).cpu().numpy(), want_q)
    np.testing.assert_array_equal(scales.cpu().numpy(), want_scales)


def test_host_arrays_on_the_device_are_refused(cuda_rt, rng):
    x = bf16_bits(rng.uniform(-1, 1, (4, 256)))
    with pytest.raises(metrale.ArgumentError, match="host memory"):
        cuda_rt.ops.fp8_act_quant(x)


class OtherDevice:
    """A CUDA tensor that says it lives on another device than the runtime's."""

    def __init__(self, tensor, device_id: int) -> None:
        self._tensor = tensor
        self._device_id = device_id

    def __dlpack__(self, **kwargs):
        return self._tensor.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return (2, self._device_id)


def test_a_tensor_on_another_device_is_refused(cuda_rt, rng):
    x = on_device(bf16_bits(rng.uniform(-1, 1, (4, 256)))).view(torch.bfloat16)
    with pytest.raises(metrale.ArgumentError, match=r"x: is on CUDA device 3 \(cuda:3\), but this runtime runs on "
                                                     r"CUDA device 0"):
        cuda_rt.run("fp8_act_quant", x=OtherDevice(x, 3))


def test_custom_ops_serve_cuda_and_cpu_tensors_and_replay_in_a_cuda_graph(cuda_rt, rt, rng):
    """metrale.torch with a host runtime and a CUDA one under one namespace: CPU tensors run on the
    host backend, CUDA tensors on the device on torch's current stream, and a prepared op captured
    into torch.cuda.graph replays on new inputs (the codes equal the host's exactly)."""
    from metrale import torch as metrale_torch

    metrale_torch.register(rt, namespace="metrale_cuda_test")
    metrale_torch.register(cuda_rt, namespace="metrale_cuda_test")
    op = torch.ops.metrale_cuda_test.fp8_act_quant
    m, k = 7, 512
    x = bf16_bits(rng.uniform(-3, 3, (m, k)))
    want_q, want_scales = rt.ops.fp8_act_quant(x)
    host_q, host_scales = op(torch.from_numpy(x.view(np.int16)).view(torch.bfloat16))
    assert host_q.device.type == "cpu"
    np.testing.assert_array_equal(host_q.view(torch.uint8).numpy(), want_q)
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):  # torch's current stream is the one launched on
        q, scales = op(on_device(x).view(torch.bfloat16))
    side.synchronize()
    assert q.device.type == "cuda" and q.dtype == torch.float8_e4m3fn
    np.testing.assert_array_equal(q.view(torch.uint8).cpu().numpy(), want_q)
    np.testing.assert_array_equal(scales.cpu().numpy(), want_scales)

    cuda_rt.prepare("fp8_act_quant", m=m, k=k)
    static_x = on_device(x).view(torch.bfloat16)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        graph_q, graph_scales = op(static_x)
    x2 = bf16_bits(rng.uniform(-5, 5, (m, k)))
    static_x.copy_(on_device(x2).view(torch.bfloat16))
    graph.replay()
    torch.cuda.synchronize()
    want_q2, want_scales2 = rt.ops.fp8_act_quant(x2)
    np.testing.assert_array_equal(graph_q.view(torch.uint8).cpu().numpy(), want_q2)
    np.testing.assert_array_equal(graph_scales.cpu().numpy(), want_scales2)
