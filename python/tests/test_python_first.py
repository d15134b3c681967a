"""Python-first kernels (issue 33, item 4), on the host backend: launch dimensions as ints or
tuples, placeholders filled by the C ABI's declare as C++ fills them, build() raising
CompileError with the compiler's lines while the good variants stay usable, Runtime("auto") on a
machine with no GPU, errors in Python's terms, and readable reprs."""

from __future__ import annotations

import logging
import re

import numpy as np
import pytest
from conftest import POISON_F32, bf16_bits

import metrale
from metrale._backend_choice import choose_backend
from metrale._errors import python_terms
from metrale._kernel_params import lowered_name, parameter_types
from metrale._registry import pack_args

# B comes from the name expression's {block}: the output says which B the compiler saw.
FILL_SOURCE = """
template <int B>
__global__ void py_fill(float* y, float s) {
  const unsigned i = blockIdx.y * gridDim.x * blockDim.x + blockIdx.x * blockDim.x + threadIdx.x;
  y[i] = s * static_cast<float>(B) + static_cast<float>(blockIdx.x + 100 * blockIdx.y);
}
"""
BROKEN_SOURCE = "template <int B> __global__ void py_broken_k(float* p) { p[0] = undefined_name_q7; }\n"


@pytest.fixture(scope="module")
def jit(tmp_path_factory):
    """A host runtime with py_fill<{block}> (block 32) built; its own cache folder."""
    rt = metrale.Runtime("host", target="hopper", cache_dir=str(tmp_path_factory.mktemp("pyfirst")),
                         host_worker_threads=2)
    rt.add_source("py_fill.cuh", FILL_SOURCE)
    rt.add_source("py_broken_k.cuh", BROKEN_SOURCE)
    variant = rt.declare("py_fill", "py_fill.cuh", "py_fill<{block}>", block=32)
    rt.build()
    handle, reason = rt.handle(variant)
    assert handle != 0, reason
    yield rt, handle
    rt.close()


def fill_reference(s: float, b: int, grid: tuple[int, int], block: int) -> np.ndarray:
    gx, gy = grid
    x = np.repeat(np.arange(gx, dtype=np.float32), block)
    return np.concatenate([s * b + x + 100 * y for y in range(gy)]).astype(np.float32)


@pytest.mark.parametrize("grid, block, shape", [
    (4, 32, (4, 1)),
    ((4,), (32,), (4, 1)),
    ((4, 2), (32, 1), (4, 2)),
    ((4, 2, 1), (32, 1, 1), (4, 2)),
    (np.int64(3), np.uint32(32), (3, 1)),
])
def test_launch_takes_an_int_or_a_tuple(jit, grid, block, shape):
    rt, handle = jit
    y = np.full(shape[0] * shape[1] * 32, POISON_F32, np.float32)
    rt.launch(handle, grid, block, [y, np.float32(0.5)])
    rt.synchronize()
    # B = 32 in the output: {block} became 32 in the expression NVRTC / the host compiler saw.
    np.testing.assert_array_equal(y, fill_reference(0.5, 32, shape, 32))


@pytest.mark.parametrize("grid, message", [
    (0, "grid=0: each extent must be an integer in [1, 4294967295], got 0"),
    ((1, 2, 3, 4), "grid=(1, 2, 3, 4): expected 1 to 3 dimensions, got 4"),
    ((), "grid=(): expected 1 to 3 dimensions, got 0"),
    ("8", "grid='8': expected an int or a tuple of 1 to 3 ints"),
    (True, "grid=True: expected an int or a tuple of 1 to 3 ints"),
    ((4, -1), "grid=(4, -1): each extent must be an integer in [1, 4294967295], got -1"),
    ((4, 2.0), "grid=(4, 2.0): each extent must be an integer"),
])
def test_launch_refuses_bad_dimensions(jit, grid, message):
    rt, handle = jit
    y = np.full(32, POISON_F32, np.float32)
    with pytest.raises(metrale.ArgumentError, match=re.escape(message)):
        rt.launch(handle, grid, 32, [y, np.float32(1.0)])
    assert np.isnan(y).all()  # nothing ran


def test_declare_fills_placeholders_as_the_library_does(jit):
    rt, _ = jit
    # The same variant declared with the number written out is the same id (same kernel and
    # params) and compiles the same instantiation.
    placeholder = rt.declare("py_fill", "py_fill.cuh", "py_fill<{block}>", block=32)
    spelled = rt.declare("py_fill", "py_fill.cuh", "py_fill<32>", block=32)
    assert spelled == placeholder and rt.compile(spelled, "sm_90").ok
    lanes = rt.declare("py_fill_l", "py_fill.cuh", "py_fill<{lanes}>", block=32, lanes=8)
    result = rt.compile(lanes, "sm_90")
    assert result.ok, result.reason
    with pytest.raises(metrale.ArgumentError, match=r"uses \{lanes\}, but the variant's lanes is 0 \(not taken\)"):
        rt.declare("py_fill_z", "py_fill.cuh", "py_fill<{lanes}>", block=32)
    with pytest.raises(metrale.ArgumentError, match=r"unknown placeholder \{shape\} \(allowed: \{block\}, \{lanes\}, "
                                                     r"\{groups\}\)"):
        rt.declare("py_fill_s", "py_fill.cuh", "py_fill<{shape}>", block=32)
    with pytest.raises(metrale.ArgumentError, match=r"unknown placeholder \{warps\}"):
        rt.declare("py_fill_w", "py_fill.cuh", "py_fill<{warps}>", block=32)
    with pytest.raises(metrale.ArgumentError, match="never closed"):
        rt.declare("py_fill_c", "py_fill.cuh", "py_fill<{block>", block=32)
    with pytest.raises(metrale.ArgumentError) as caught:
        rt.declare("py_fill_w", "py_fill.cuh", "py_fill<{warps}>", block=32)
    assert str(caught.value).startswith("expression 'py_fill<{warps}>'")  # no "metrale_registry_declare: "
    rt.build()  # the two good ones declared since the last build load: no error


def test_build_raises_naming_the_failed_variant_and_the_good_ones_run(jit):
    rt, _ = jit
    good = rt.declare("py_fill_64", "py_fill.cuh", "py_fill<{block}>", block=64)
    bad = rt.declare("py_broken", "py_broken_k.cuh", "py_broken_k<{block}>", block=1)
    with pytest.raises(metrale.CompileError) as caught:
        rt.build()
    error = caught.value
    assert isinstance(error, metrale.Error)
    text = str(error)
    assert text.startswith("1 variant failed to build; 1 other(s) built and stay usable:\n")
    assert "  py_broken (py_broken_k<{block}>, block=1): load failed: host JIT of py_broken" in text
    assert "undefined_name_q7" in text and "error" in text  # the compiler's own lines
    (failure,) = error.failures
    assert (failure.id, failure.kernel, failure.expression, failure.params) == (bad, "py_broken",
                                                                                "py_broken_k<{block}>", "block=1")
    assert any("undefined_name_q7" in line and "error" in line for line in failure.log)
    assert "py_fill_64" not in text
    handle, reason = rt.handle(good)  # the good variant of the same build runs
    assert handle != 0, reason
    y = np.full(2 * 64, POISON_F32, np.float32)
    rt.launch(handle, 2, 64, [y, np.float32(2.0)])
    rt.synchronize()
    np.testing.assert_array_equal(y, fill_reference(2.0, 64, (2, 1), 64))
    assert rt.handle(bad)[0] == 0
    rt.build()  # nothing declared since: the failure was reported once


def test_compile_error_of_a_device_compile_shows_nvrtcs_lines():
    # On a device the handle's reason is compile_failure_reason's (C++ unit test "a failed
    # compile's reason is its first error, then the whole log"): this machine may have no GPU.
    from metrale._registry import Declared, build_failures, compile_error

    log = ('nvrtcCompileProgram: NVRTC_ERROR_COMPILATION\nk.cuh(3): error: identifier "nope" is undefined\n'
           '  y[0] = nope;\n\n1 error detected in the compilation of "k.cuh".\n')
    reason = 'compile failed: k.cuh(3): error: identifier "nope" is undefined\n' + log
    declared = [Declared(3, "k_ok", "k<{block}>", 64, 0, 0), Declared(4, "k_bad", "k<{block}, {lanes}>", 64, 2, 0)]
    handles = {3: (0x1234, None), 4: (0, reason)}
    failures = build_failures(declared, handles.__getitem__)
    assert [f.kernel for f in failures] == ["k_bad"]
    assert failures[0].reason == 'compile failed: k.cuh(3): error: identifier "nope" is undefined'
    assert failures[0].log == ("nvrtcCompileProgram: NVRTC_ERROR_COMPILATION",
                               'k.cuh(3): error: identifier "nope" is undefined', "  y[0] = nope;", "",
                               '1 error detected in the compilation of "k.cuh".')
    text = str(compile_error(failures, 1))
    assert text.splitlines()[:3] == [
        "1 variant failed to build; 1 other(s) built and stay usable:",
        '  k_bad (k<{block}, {lanes}>, block=64, lanes=2): compile failed: k.cuh(3): error: identifier "nope" is '
        "undefined",
        "    nvrtcCompileProgram: NVRTC_ERROR_COMPILATION",
    ]


def test_a_variant_not_built_yet_names_build_in_python_terms(jit):
    rt, _ = jit
    variant = rt.declare("py_fill_128", "py_fill.cuh", "py_fill<{block}>", block=128)
    handle, reason = rt.handle(variant)
    assert handle == 0
    # The C ABI says "call metrale_registry_build"; Python names its method.
    assert reason.endswith("is not built for host yet: call Runtime.build()"), reason
    assert "metrale_" not in reason
    rt.build()
    assert rt.handle(variant)[0] != 0


def _has_gpu() -> bool:
    try:
        metrale.Runtime("cuda").close()
    except metrale.NoDeviceError:
        return False
    return True


def test_auto_without_a_gpu_opens_the_host_backend_and_says_so(caplog, rng):
    if _has_gpu():
        pytest.skip("this machine has a CUDA device: auto takes it")
    with caplog.at_level(logging.WARNING, logger="metrale"):
        rt = metrale.Runtime("auto", target="hopper")
    try:
        lines = [r.getMessage() for r in caplog.records if r.name == "metrale" and "host backend" in r.getMessage()]
        assert len(lines) == 1, lines
        assert lines[0].startswith("Runtime('auto') runs on the host backend (the CPU): no CUDA device: ")
        assert rt.backend == "host" and rt.has_device and rt.device_ordinal == 0
        assert rt.backend_reason.startswith("no CUDA device: ") and len(rt.backend_reason) > len("no CUDA device: ")
        assert rt.describe()["device"].startswith("host")
        x = bf16_bits(rng.uniform(-1, 1, (2, 128)))
        q, scales = rt.ops.fp8_act_quant(x)  # runs: no NoDeviceError at the first call
        with metrale.Runtime("host", target="hopper") as host:
            want_q, want_scales = host.ops.fp8_act_quant(x)
        np.testing.assert_array_equal(q, want_q)
        np.testing.assert_array_equal(scales, want_scales)
    finally:
        rt.close()
    assert metrale.Runtime("host").backend_reason is None


def test_cuda_without_a_gpu_refuses_at_open():
    if _has_gpu():
        pytest.skip("this machine has a CUDA device")
    with pytest.raises(metrale.NoDeviceError, match=r"^Runtime\('cuda'\): no CUDA device: .+ \(Runtime\('host'\) runs "
                                                     r"on the CPU"):
        metrale.Runtime("cuda")


def test_backend_choice_is_a_pure_decision():
    assert choose_backend("host", False, "x").backend == "host"
    cuda = choose_backend("cuda", True, "")
    assert (cuda.backend, cuda.reopen_on_host, cuda.refusal, cuda.reason) == ("cuda", False, None, None)
    auto_gpu = choose_backend("auto", True, "")
    assert (auto_gpu.backend, auto_gpu.reopen_on_host, auto_gpu.reason) == ("cuda", False, None)
    auto = choose_backend("auto", False, "libcuda.so.1 could not be loaded")
    assert (auto.backend, auto.reopen_on_host, auto.refusal) == ("host", True, None)
    assert auto.reason == "no CUDA device: libcuda.so.1 could not be loaded"
    refused = choose_backend("cuda", False, "")
    assert refused.refusal.startswith("Runtime('cuda'): no CUDA device: the CUDA backend did not open")


@pytest.mark.parametrize("c_text, python_text", [
    ("metrale_op_run_role: fp8_act_quant: x: bad", "fp8_act_quant: x: bad"),
    ("metrale_runtime_open: RuntimeOptions::levers: no op declares the lever 'nope'",
     "levers: no op declares the lever 'nope'"),
    ("metrale_runtime_open: RuntimeOptions::shapes: key 'x' is not <op>.<argument>",
     "shapes: key 'x' is not <op>.<argument>"),
    ("k (b1) is not built for host yet: call metrale_registry_build",
     "k (b1) is not built for host yet: call Runtime.build()"),
    ("op on a capturing stream: x; call prepare (Runtime::prepare, metrale_op_prepare, rt.prepare) with this",
     "op on a capturing stream: x; call prepare (Runtime.prepare) with this"),
    ("metrale_runtime_open: RuntimeOptions::shapes[no_such_op.n]: no op named 'no_such_op'",
     "shapes[no_such_op.n]: no op named 'no_such_op'"),
    ("no device asked for (BackendChoice::kNone)", "no device asked for (the runtime explains and compiles only)"),
    ("error: metrale_host_kernel_v2 undefined", "error: metrale_host_kernel_v2 undefined"),  # a log's identifier stays
])
def test_python_terms(c_text, python_text):
    assert python_terms(c_text) == python_text


def test_library_errors_reach_python_without_c_names():
    # Each message was "metrale_runtime_open: RuntimeOptions::levers: ..." before.
    with pytest.raises(metrale.ConfigError) as caught:
        metrale.Runtime("host", levers={"no_such_lever_q": True})
    assert str(caught.value).startswith("levers: no op declares the lever 'no_such_lever_q' (known: ")
    with pytest.raises(metrale.Error) as caught:
        metrale.Runtime("host", shapes={"no_such_op.n": [96]})
    assert str(caught.value).startswith("shapes[no_such_op.n]: no op named 'no_such_op' (known: ")


def test_library_refusal_of_a_run_names_no_c_function(rt):
    # Refusals of the library's own rules, through the extension's one error path: each was
    # "metrale_op_explain: ..." / "metrale_op_run_role: ..." before.
    with pytest.raises(metrale.ArgumentError) as caught:
        rt.explain("fp8_act_quant", m=2, k=100)
    assert str(caught.value) == "fp8_act_quant: K=100 is not a multiple of the group size 128"
    with pytest.raises(metrale.ArgumentError) as caught:
        rt.raw.run("fp8_act_quant", None, ("m", "k"), (2, 128))  # the C call itself, no package checks
    assert str(caught.value).startswith("fp8_act_quant: "), str(caught.value)


@pytest.mark.parametrize("x, got", [
    (np.zeros((2, 128), np.float32), "float32"),
    (np.zeros((2, 128), np.int16), "int16"),
    (np.zeros((2, 128), np.int32), "int32"),
    (np.zeros((2, 128), np.float16), "float16"),
])
def test_dtype_names_are_numpys(rt, x, got):
    with pytest.raises(metrale.ArgumentError) as caught:
        rt.run("fp8_act_quant", x=x)
    assert str(caught.value) == (f"fp8_act_quant: x: expected bfloat16 (ml_dtypes.bfloat16, torch.bfloat16, or its "
                                 f"bits as uint16), got {got}")


def test_help_spells_dtypes_as_numpy(rt):
    doc = rt.ops.fp8_act_quant.__doc__
    assert "x: input bfloat16 [m, x_row_stride]" in doc and "output float8_e4m3fn" in doc and "output float32" in doc
    arguments = doc.split("Arguments (keywords):")[1].split("Roles")[0]  # the summary is the op's own text
    assert " bf16 " not in arguments and " fp32 " not in arguments and " e4m3 " not in arguments


def test_reprs_read_one_line_per_role(rt):
    explanation = rt.explain("fp8_act_quant", m=4, k=256)
    text = repr(explanation)
    assert text.splitlines()[0] == "<Explanation fp8_act_quant runs parent (kernel fp8_act_quant) at 132 SMs"
    assert text.splitlines()[1].startswith("  twin (fp8_act_quant_hopper): not at this shape: too few CTAs")
    assert "smallest M 264" in text and "lever fp8_act_quant_hopper on (file: " in text
    result = rt.run("fp8_act_quant", x=bf16_bits(np.ones((4, 256))))
    pick = repr(result.pick)
    assert pick.splitlines() == ["<Pick fp8_act_quant ran parent (kernel fp8_act_quant), the guards' pick",
                                 "  twin: not taken: too few CTAs to fill the device at 8 K-groups per CTA>"]
    lines = repr(result).splitlines()
    assert lines[0] == "<Result q uint8 (4, 256), scales float32 (4, 2)"
    assert lines[1] == "  pick: fp8_act_quant ran parent (kernel fp8_act_quant), the guards' pick"
    forced = rt.run("fp8_act_quant", x=bf16_bits(np.ones((4, 256))), role="twin").pick
    assert "forced by role=" in repr(forced).splitlines()[0]


MIX_SOURCE = """
template <int B>
__global__ void py_mix(double* y, int a, unsigned long long b, double c, short d, bool e, float f) {
  if (threadIdx.x == 0) {
    y[0] = a; y[1] = static_cast<double>(b); y[2] = c; y[3] = d; y[4] = e ? 1.0 : 0.0; y[5] = f * B;
  }
}
"""


def test_launch_packs_python_ints_and_floats_as_the_kernels_parameters(jit):
    rt, fill = jit
    y = np.full(4 * 32, POISON_F32, np.float32)
    rt.launch(fill, 4, 32, [y, 0.5])  # 0.5 as the kernel's float, from its lowered name
    rt.synchronize()
    np.testing.assert_array_equal(y, fill_reference(0.5, 32, (4, 1), 32))
    rt.add_source("py_mix.cuh", MIX_SOURCE)
    variant = rt.declare("py_mix", "py_mix.cuh", "py_mix<{block}>", block=2)
    rt.build()
    mix, reason = rt.handle(variant)
    assert mix != 0, reason
    out = np.full(6, np.nan)
    b = 2**40 + 3  # exact in a double, wrong in any 32-bit packing
    rt.launch(mix, 1, 1, [out, -7, b, 0.1, -300, True, 1.25])
    rt.synchronize()
    np.testing.assert_array_equal(out, [-7.0, float(b), 0.1, -300.0, 1.0, 2.5])  # 0.1: a double, not a float
    refusals = [
        ([out, 1.5, b, 0.1, 1, True, 1.0], "args[1]=1.5: a float for the kernel's int32 parameter"),
        ([out, 2**31, b, 0.1, 1, True, 1.0],
         "args[1]=2147483648: 2147483648 does not fit the kernel's int32 parameter"),
        ([out, 1, b, 0.1, 40000, True, 1.0], "args[4]=40000: 40000 does not fit the kernel's int16 parameter"),
        ([5, 1, b, 0.1, 1, True, 1.0], "args[0]=5: the kernel's parameter is a pointer"),
        ([out, 1, b], "args: the kernel takes 7 arguments, got 3"),
    ]
    for args, message in refusals:
        out[:] = np.nan
        with pytest.raises(metrale.ArgumentError, match=re.escape(message)):
            rt.launch(mix, 1, 1, args)
        assert np.isnan(out).all()  # nothing ran


def test_python_scalars_without_known_parameters_are_refused():
    with pytest.raises(metrale.ArgumentError, match=re.escape("args[1]=2: a Python int needs the kernel's parameter "
                                                              "types, unknown: its handle did not come from handle(); "
                                                              "pass a NumPy scalar")):
        pack_args([b"\0" * 8, 2], lambda: "its handle did not come from handle()")
    assert pack_args([np.float32(1.0), b"ab"], lambda: pytest.fail("asked for types with no Python scalar")) == [
        np.float32(1.0).tobytes(), b"ab"]


SIGNATURES = """
struct pair_q { int a, b; };
namespace eng {
template <int B, bool F>
__global__ void sig_a(const float* __restrict__ x, float* y, int n, unsigned m, long long a, unsigned long long b,
                      double d, bool f, char c, short s, unsigned short us, unsigned char uc) {}
}
__global__ void sig_b(float* x, float* y, const float* z, const float* w, pair_q p, float4 v, int n) {}
__global__ void sig_c() {}
"""


@pytest.mark.parametrize("expression, want", [
    ("eng::sig_a<64, true>", ("ptr", "ptr", "i", "j", "x", "y", "d", "b", "c", "s", "t", "h")),
    ("sig_b", ("ptr", "other", "ptr", "other", "other", "other", "i")),  # repeats are substitutions
    ("sig_c", ()),
])
def test_parameter_types_read_nvrtcs_lowered_names(rt, expression, want):
    # The reference is the declaration above; the lowered name is what NVRTC 13 made of it.
    rt.add_source("py_signatures.cuh", SIGNATURES)
    variant = rt.declare(f"py_sig_{expression.split('<')[0].split(':')[-1]}", "py_signatures.cuh", expression)
    result = rt.compile(variant, "sm_90")
    assert result.ok, result.reason
    assert parameter_types(lowered_name(result.log, expression)) == want


def test_unreadable_lowered_names_are_refused_not_guessed():
    for name in ("main", "_Z", "_Z3ab", "_ZN2ns1k", "_Z1kILi3"):
        with pytest.raises(ValueError):
            parameter_types(name)
    with pytest.raises(ValueError, match="names 0 entries"):
        lowered_name("ptxas info    : Compiling entry function '_Z1kv' for 'sm_90'", "other<1>")
