"""The generic registry from Python: an engine's own kernel compiled, cached, launched and
checked against NumPy on the host backend, and a kernel that fails to compile named."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import POISON_F32

import metrale


def test_registry_names_a_failed_compile(rt):
    rt.add_source("py_broken.cuh", "template <int B> __global__ void broken(float* p) { p[0] = undefined_name; }\n")
    variant = rt.declare("py_broken", "py_broken.cuh", "broken<1>", block=1)
    result = rt.compile(variant, "sm_90")
    assert not result.ok
    assert result.reason.startswith("compile failed") and "undefined_name" in result.reason
    assert "undefined_name" in result.log
    with pytest.raises(metrale.CompileError, match="py_broken \\(broken<1>, block=1\\): load failed"):
        rt.build()
    handle, reason = rt.handle(variant)
    assert handle == 0 and reason.startswith("load failed")
    with pytest.raises(metrale.BackendError, match="absent"):
        rt.launch(0, (1, 1, 1), (1, 1, 1), [np.uint32(1)])
    with pytest.raises(metrale.ArgumentError, match="never declared"):
        rt.handle(10_000)



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
