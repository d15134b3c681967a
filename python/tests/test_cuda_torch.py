"""Both ops on a CUDA device from PyTorch tensors (DLPack, the tensor's current stream), against
the host backend's bytes. Skips without PyTorch or a device: tools/device_check.sh runs it on a
lent GPU."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import POISON_F32, bf16_bits

import metrale

torch = pytest.importorskip("torch")


@pytest.fixture(scope="module")
def cuda_rt():
    if not torch.cuda.is_available():
        pytest.skip("PyTorch sees no CUDA device")
    rt = metrale.Runtime("cuda")
    if not rt.has_device:
        pytest.skip(f"metrale sees no device: {rt.no_device_reason}")
    yield rt
    rt.close()


def test_torch_tensors_match_the_host_backend(cuda_rt, rt, rng):
    m, n, k = 300, 96, 5120
    x = bf16_bits(rng.uniform(-1, 1, (m, k)))
    w = bf16_bits(rng.uniform(-0.05, 0.05, (n, k)))
    a_log, dt_bias = (rng.uniform(-1, 1, n // 2).astype(np.float32) for _ in range(2))
    on = lambda a: torch.from_numpy(a.view(np.int16) if a.dtype == np.uint16 else a).cuda()  # noqa: E731
    tx = on(x).view(torch.bfloat16)
    tw = on(w).view(torch.bfloat16)
    out = torch.full((m, n), float(POISON_F32), dtype=torch.float32, device="cuda")
    cuda_rt.ssm_ba_gates(tx, tw, on(a_log), on(dt_bias), vheads_per_group=3, out=out)
    torch.cuda.current_stream().synchronize()
    want = rt.ssm_ba_gates(x, w, a_log, dt_bias, vheads_per_group=3, kernel="parent")
    assert out.cpu().numpy().tobytes() == want.tobytes(), cuda_rt.last_pick

    q, scales = cuda_rt.fp8_act_quant(tx)
    torch.cuda.current_stream().synchronize()
    want_q, want_scales = rt.fp8_act_quant(x)
    np.testing.assert_array_equal(q.cpu().numpy(), want_q)
    np.testing.assert_array_equal(scales.cpu().numpy(), want_scales)


def test_host_arrays_on_the_device_are_refused(cuda_rt, rng):
    x = bf16_bits(rng.uniform(-1, 1, (4, 256)))
    with pytest.raises(metrale.ArgumentError, match="host memory"):
        cuda_rt.fp8_act_quant(x)
