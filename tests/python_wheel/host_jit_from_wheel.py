"""An engine kernel through the host JIT of the package laid out as its wheel (tests/python_wheel).

argv: SITE (the folder holding metrale/, the only one on PYTHONPATH) and CACHE_DIR (fresh).
Checks that metrale is imported from SITE, then runs a kernel without a built-in host
instantiation on random integers (every sum exact) against a NumPy reference.
"""

import pathlib
import sys

import numpy as np

site, cache = pathlib.Path(sys.argv[1]).resolve(), sys.argv[2]
import metrale  # noqa: E402

assert pathlib.Path(metrale.__file__).resolve().is_relative_to(site), metrale.__file__

SOURCE = """
template <int B>
__global__ void wheel_mirror(const float* x, float* y, float s) {
  __shared__ float tile[B];
  const int t = static_cast<int>(threadIdx.x);
  const int base = static_cast<int>(blockIdx.x * blockDim.x);
  tile[t] = x[base + t];
  __syncthreads();
  float sum = tile[B - 1 - t];
  for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
  y[base + t] = s * tile[B - 1 - t] + sum;
}
"""

blocks = 3
rng = np.random.default_rng(23)
x = rng.integers(-1000, 1000, 64 * blocks).astype(np.float32)
with metrale.Runtime("host", cache_dir=cache, host_worker_threads=2) as rt:
    rt.add_source("wheel_mirror.cuh", SOURCE)
    variant = rt.declare("wheel_mirror", "wheel_mirror.cuh", "wheel_mirror<64>", block=64)
    rt.build()
    handle, reason = rt.handle(variant)
    assert handle != 0, reason
    y = np.full_like(x, np.nan)
    rt.launch(handle, (blocks,), (64,), [x, y, np.float32(0.5)])
    rt.synchronize()
mirrored = x.reshape(blocks, 2, 32)[:, ::-1, ::-1]  # thread t reads x[63 - t]
want = 0.5 * mirrored + mirrored.sum(axis=2, keepdims=True)
np.testing.assert_array_equal(y, want.reshape(-1))
print("engine kernel ran through the host JIT of", metrale.__file__)
