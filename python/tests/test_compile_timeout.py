"""compile_timeout_s= (over METRALE_COMPILE_TIMEOUT_S): bad values refused at the boundary, a bad
variable a ConfigError naming it, and a host-JIT compile past the limit cut: build() raises
CompileError naming "compile exceeded 1 s" well before the compile would end, and a normal kernel
declared after it still builds (from the cache an earlier runtime filled: no timing dependence)
and runs (the host backend: no GPU needed)."""

from __future__ import annotations

import os
import time

import numpy as np
import pytest

import metrale

# About 160 chunks of constant evaluation: seconds of g++ time (tests/support/slow_compile.hpp).
SLOW = """
namespace deadline_slow {
constexpr unsigned long long part(unsigned long long c) {
  unsigned long long s = 0;
  for (unsigned long long i = 0; i < 400; ++i) {
    for (unsigned long long j = 0; j < 400; ++j) { s += (i ^ j ^ c) % 7; }
  }
  return s;
}
template <unsigned long long C> struct Chunk { static constexpr unsigned long long v = part(C); };
template <unsigned long long N, unsigned long long... C> struct Sum {
  static constexpr unsigned long long v = Sum<N - 1, N - 1, C...>::v;
};
template <unsigned long long... C> struct Sum<0, C...> {
  static constexpr unsigned long long v = (Chunk<C>::v + ... + 0ull);
};
template <int K> __global__ void slow_kernel(unsigned long long* out) { out[0] = Sum<160>::v + K; }
}  // namespace deadline_slow
"""

FAST = """
template <int K> __global__ void add_k(float* out, const float* in) {
  out[threadIdx.x] = in[threadIdx.x] + K;
}
"""


@pytest.mark.parametrize("bad", [-1, 0, float("nan"), float("inf"), "5", True])
def test_a_bad_limit_is_refused_naming_it(bad):
    with pytest.raises(metrale.ArgumentError, match=r"compile_timeout_s=.*expected a positive number of seconds"):
        metrale.Runtime("host", compile_timeout_s=bad)


def test_a_bad_variable_is_a_config_error_naming_it(monkeypatch):
    monkeypatch.setenv("METRALE_COMPILE_TIMEOUT_S", "soon")
    with pytest.raises(metrale.ConfigError, match=r"METRALE_COMPILE_TIMEOUT_S"):
        metrale.Runtime("host")


def test_a_host_compile_past_the_limit_is_cut_and_the_runtime_still_builds(tmp_path, rng):
    os.chmod(tmp_path, 0o700)
    salt = f"// salt {time.time_ns()}\n"  # a key no earlier run compiled
    # The normal kernel compiled ahead under a generous limit: a full compile takes more than 1 s
    # on a loaded machine, so the runtime with the 1 s limit finds it in the cache, and what is
    # tested is that the cut leaves the runtime able to build, not g++'s speed.
    with metrale.Runtime("host", cache_dir=str(tmp_path), compile_timeout_s=600) as warm:
        warm.add_source("add_k.cuh", salt + FAST)
        warm.declare("add_k", "add_k.cuh", "add_k<3>")
        warm.build()
    with metrale.Runtime("host", cache_dir=str(tmp_path), compile_timeout_s=1) as rt:
        rt.add_source("deadline_slow.cuh", salt + SLOW)
        slow = rt.declare("slow_kernel", "deadline_slow.cuh", "deadline_slow::slow_kernel<1>")
        started = time.monotonic()
        with pytest.raises(metrale.CompileError, match=r"compile exceeded 1 s"):
            rt.build()
        assert time.monotonic() - started < 20, "cut near the limit, not when the compile ends"
        handle, reason = rt.handle(slow)
        assert handle == 0 and "compile exceeded 1 s" in reason

        rt.add_source("add_k.cuh", salt + FAST)
        fast = rt.declare("add_k", "add_k.cuh", "add_k<3>")
        rt.build()
        handle, reason = rt.handle(fast)
        assert handle != 0, reason
        x = rng.standard_normal(32).astype(np.float32)
        out = np.full(32, np.nan, np.float32)
        rt.launch(handle, 1, 32, [out, x])
        np.testing.assert_array_equal(out, x + 3)
