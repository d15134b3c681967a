"""Every op as a PyTorch custom op (metrale.torch.register) on CPU tensors, on the host backend:
results against the NumPy references of conftest, torch dtypes as themselves (bf16 in,
float8_e4m3fn out), torch.library.opcheck per op, torch.compile(fullgraph=True) against eager,
and the refusals (a dtype, a device no runtime serves, a second runtime for one device type).
Outputs are new tensors: torch's deterministic mode fills them with NaN / the largest integer
before the op runs (fill_uninitialized_memory), so an unwritten element fails the comparison.
Skips without torch: .ci/run installs it into a cached environment (tools/torch_env.sh).
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from conftest import ba_gates_reference, bf16_bits, fp8_reference
from test_silu_mul import silu_mul_reference

import metrale

torch = pytest.importorskip("torch")
metrale_torch = pytest.importorskip("metrale.torch")


@pytest.fixture(scope="module")
def ops(rt):
    metrale_torch.register(rt)
    return torch.ops.metrale


@pytest.fixture(autouse=True)
def poisoned_outputs():
    """torch.empty's memory filled (NaN, or the largest integer) while a test runs."""
    was_on, was_filled = torch.are_deterministic_algorithms_enabled(), torch.utils.deterministic.fill_uninitialized_memory
    torch.use_deterministic_algorithms(True)
    torch.utils.deterministic.fill_uninitialized_memory = True
    yield
    torch.use_deterministic_algorithms(was_on)
    torch.utils.deterministic.fill_uninitialized_memory = was_filled


def bf16_tensor(bits: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(bits.view(np.int16)).view(torch.bfloat16)


def codes(q: torch.Tensor) -> np.ndarray:
    assert q.dtype == torch.float8_e4m3fn, q.dtype
    return q.view(torch.uint8).numpy()


def ba_inputs(rng, m=3, n=32, k=256):
    x = bf16_bits(rng.uniform(-1, 1, (m, k)))
    w = bf16_bits(rng.uniform(-0.05, 0.05, (n, k)))
    a_log, dt_bias = (rng.uniform(-1, 1, n // 2).astype(np.float32) for _ in range(2))
    return x, w, a_log, dt_bias


def test_every_op_the_runtime_serves_is_a_custom_op(rt, ops):
    for name in rt.ops:
        spec = rt.op(name)
        op = getattr(ops, name)
        schema = op.default._schema
        taken = [a.name for a in schema.arguments]
        assert taken == [a.name for a in spec.args if a.kind == "input"] + [a.name for a in spec.args if not a.tensor] + [
            "role"], str(schema)
        assert len(schema.returns) == len([a for a in spec.args if a.kind == "output"]), str(schema)


def test_fp8_act_quant_is_the_reference_with_torch_dtypes(ops, rng):
    x = bf16_bits(rng.uniform(-3, 3, (5, 384)))
    q, scales = ops.fp8_act_quant(bf16_tensor(x))
    want_q, want_scales = fp8_reference(x)
    assert scales.dtype == torch.float32 and tuple(scales.shape) == (5, 3)
    np.testing.assert_array_equal(codes(q), want_q)
    np.testing.assert_array_equal(scales.numpy(), want_scales)


def test_fp8_column_major_scales_and_pow2_through_the_keywords(ops, rng):
    x = bf16_bits(rng.uniform(-3, 3, (6, 256)))
    q, scales = ops.fp8_act_quant(bf16_tensor(x), scale_layout=1, pow2_scales=1)
    want_q, want_scales = fp8_reference(x, pow2=True)
    assert scales.stride() == (1, 8), "column-major scales: [M, K/128] of a [K/128, M rounded up to 4] array"
    np.testing.assert_array_equal(codes(q), want_q)
    np.testing.assert_array_equal(scales.numpy(), want_scales)


@pytest.mark.parametrize("role", [None, "parent", "twin"])
def test_ba_gates_is_the_reference(ops, rt, rng, role):
    x, w, a_log, dt_bias = ba_inputs(rng)
    out = ops.ssm_ba_gates(bf16_tensor(x), bf16_tensor(w), torch.from_numpy(a_log), torch.from_numpy(dt_bias),
                           vheads_per_group=4, role=role)
    if role is not None:
        assert rt.last_pick.role == role
    assert out.dtype == torch.float32 and tuple(out.shape) == (3, 32)
    oracle = ba_gates_reference(x, w, a_log, dt_bias, 4)
    np.testing.assert_allclose(out.numpy(), oracle, rtol=1e-4, atol=1e-5, err_msg=f"role {role}")


def test_silu_mul_fp8_quant_takes_views_with_padded_rows(ops, rng):
    m, k = 4, 256
    gate_up = bf16_tensor(bf16_bits(rng.uniform(-4, 4, (m, 2 * k))))
    gate, up = gate_up[:, :k], gate_up[:, k:]  # row stride 2K each
    q, scales, scratch = ops.silu_mul_fp8_quant(gate, up)  # scratch: the parent's h, a declared output
    assert q.dtype == torch.float8_e4m3fn and tuple(q.shape) == (m, k) and tuple(scales.shape) == (m, 2)
    bits = lambda t: t.view(torch.int16).numpy().view(np.uint16)  # noqa: E731
    want_q, want_scales = silu_mul_reference(bits(gate), bits(up))
    np.testing.assert_array_equal(scales.numpy(), want_scales)
    np.testing.assert_array_equal(codes(q), want_q)


def sample_calls(rng):
    x, w, a_log, dt_bias = ba_inputs(rng)
    gate_up = bf16_tensor(bf16_bits(rng.uniform(-4, 4, (4, 512))))
    return {
        "fp8_act_quant": [((bf16_tensor(bf16_bits(rng.uniform(-3, 3, (4, 256)))),), {}),
                          ((bf16_tensor(bf16_bits(rng.uniform(-3, 3, (5, 128)))),), {"scale_layout": 1})],
        "ssm_ba_gates": [((bf16_tensor(x), bf16_tensor(w), torch.from_numpy(a_log), torch.from_numpy(dt_bias)),
                          {"vheads_per_group": 4})],
        "silu_mul_fp8_quant": [((gate_up[:, :256], gate_up[:, 256:]), {})],
        "fused_add_rmsnorm": [((gate_up[:, :256], gate_up[:, 256:], bf16_tensor(bf16_bits(rng.uniform(-2, 2, 256)))),
                               {})],
    }


def test_opcheck_holds_for_every_op(rt, ops, rng):
    calls = sample_calls(rng)
    assert set(calls) == set(rt.ops), "a sample call for every op the runtime serves"
    for name, samples in calls.items():
        for args, kwargs in samples:
            torch.library.opcheck(getattr(ops, name).default, args, kwargs)


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])  # inductor: generated C++ around the ops (~30 s)
def test_torch_compile_fullgraph_matches_eager(ops, rng, backend):
    x, w, a_log, dt_bias = ba_inputs(rng, m=4, n=32, k=256)
    tensors = (bf16_tensor(x), bf16_tensor(w), torch.from_numpy(a_log), torch.from_numpy(dt_bias))

    def layer(x, w, a_log, dt_bias):
        gates = ops.ssm_ba_gates(x, w, a_log, dt_bias, vheads_per_group=4)
        q, scales = ops.fp8_act_quant(x)
        return gates * 2.0 + 1.0, q.view(torch.uint8).to(torch.int32).sum(dim=1), scales

    torch._dynamo.reset()
    compiled = torch.compile(layer, fullgraph=True, backend=backend)  # fullgraph: a graph break raises
    for got, want in zip(compiled(*tensors), layer(*tensors)):
        torch.testing.assert_close(got, want, rtol=0, atol=0)


def test_a_wrong_dtype_is_refused_naming_the_argument(ops, rng):
    x = torch.from_numpy(rng.uniform(-1, 1, (4, 256)).astype(np.float16))
    with pytest.raises(metrale.ArgumentError, match=r"fp8_act_quant: x: expected bfloat16"):
        ops.fp8_act_quant(x)


def test_tensors_of_a_device_no_runtime_serves_are_refused(ops, rng):
    x = bf16_tensor(bf16_bits(rng.uniform(-1, 1, (4, 256)))).to("meta")
    with pytest.raises(metrale.ArgumentError, match=r"on meta, but the open runtimes registered for it serve cpu tensors"):
        ops.fp8_act_quant(x)


def test_a_second_runtime_for_the_same_device_type_is_refused(ops):
    with metrale.Runtime("host", target="hopper") as other:
        with pytest.raises(metrale.ArgumentError, match=r"an open runtime already serves its cpu tensors"):
            metrale_torch.register(other)


def test_a_namespace_that_is_no_identifier_is_refused(rt):
    with pytest.raises(metrale.ArgumentError, match=r"namespace 'no.such': must be a Python identifier"):
        metrale_torch.register(rt, namespace="no.such")


# The README's PyTorch example, verbatim (tests/scripts/check_readme_examples.py), run in a new
# interpreter: it registers the namespace "metrale", which this module's runtime holds here.
README_EXAMPLE = """
# README: PyTorch example
import torch

import metrale
import metrale.torch

rt = metrale.Runtime("host")  # CPU tensors; metrale.Runtime("cuda") serves CUDA tensors
metrale.torch.register(rt)  # namespace="metrale"; register a "cuda" runtime too for both devices
x = torch.randn(4, 256).to(torch.bfloat16)
q, scales = torch.ops.metrale.fp8_act_quant(x)  # float8_e4m3fn [4, 256], float32 [4, 2]
q, scales = torch.ops.metrale.fp8_act_quant(x, scale_layout=1, role="parent")  # column-major scales
print(q.dtype, tuple(scales.shape), scales.stride(), rt.last_pick.role)
# README: end
"""


def test_the_readme_example_runs():
    done = subprocess.run([sys.executable, "-c", README_EXAMPLE], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "torch.float8_e4m3fn (4, 2) (1, 4) parent", done.stdout
