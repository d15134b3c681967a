"""After close() or its `with` block, every public method of a Runtime, its ops and its raw C
ABI raises metrale.ClosedError ("this Runtime is closed"): none crashes the interpreter (the closed
check runs while the GIL is held, before a C call releases it)."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import bf16_bits

import metrale

X = bf16_bits(np.random.default_rng(7).uniform(-1, 1, (2, 128)))

# One call per public method or property (a new public method fails the test until it is here).
CALLS = {
    "__enter__": lambda rt: rt.__enter__(),
    "add_source": lambda rt: rt.add_source("closed.cuh", "template <int B> __global__ void k() {}\n"),
    "build": lambda rt: rt.build(),
    "compile": lambda rt: rt.compile(0, "sm_90"),
    "declare": lambda rt: rt.declare("closed", "closed.cuh", "k<1>", block=1),
    "describe": lambda rt: rt.describe(),
    "explain": lambda rt: rt.explain("fp8_act_quant", m=1, k=128),
    "handle": lambda rt: rt.handle(0),
    "launch": lambda rt: rt.launch(1, (1,), (1,), [np.uint32(1)]),
    "lever": lambda rt: rt.lever("fp8_act_quant_hopper"),
    "levers": lambda rt: rt.levers,
    "op": lambda rt: rt.op("fp8_act_quant"),
    "prepare": lambda rt: rt.prepare("fp8_act_quant", m=1, k=128),
    "run": lambda rt: rt.run("fp8_act_quant", x=X),
    "synchronize": lambda rt: rt.synchronize(),
    "tune": lambda rt: rt.tune("fp8_act_quant", m=[1], k=[128], repeats=1),
    "tuning_status": lambda rt: rt.tuning_status,
}
# Attributes that stay readable: state, not calls into the library.
READABLE = {"backend", "backend_reason", "close", "closed", "device_ordinal", "has_device", "no_device_reason", "last_pick", "ops", "raw",
            "verify"}

RAW_CALLS = {
    "describe": lambda raw: raw.describe(),
    "levers": lambda raw: raw.levers(),
    "lever": lambda raw: raw.lever("fp8_act_quant_hopper"),
    "ops": lambda raw: raw.ops(),
    "op": lambda raw: raw.op("fp8_act_quant"),
    "prepare": lambda raw: raw.prepare("fp8_act_quant", None, ("m", "k"), (1, 128)),
    "run": lambda raw: raw.run("fp8_act_quant", None, ("m", "k"), (1, 128), 0),
    "explain": lambda raw: raw.explain("fp8_act_quant", ("m", "k"), (1, 128), True),
    "registry_add_source": lambda raw: raw.registry_add_source("closed.cuh", "x"),
    "registry_declare": lambda raw: raw.registry_declare("closed", "closed.cuh", "k<1>", 1),
    "registry_build": lambda raw: raw.registry_build(),
    "registry_compile": lambda raw: raw.registry_compile(0),
    "registry_handle": lambda raw: raw.registry_handle(0),
    "launch": lambda raw: raw.launch(1, (1, 1, 1), (1, 1, 1), []),
    "synchronize": lambda raw: raw.synchronize(0),
    "tune": lambda raw: raw.tune("fp8_act_quant", [1], [], [128], 1, "closed-tuning.toml"),
    "tuning_status": lambda raw: raw.tuning_status(),
}


def public(obj) -> set[str]:
    return {n for n in dir(obj) if not n.startswith("_")}


def closed_runtime(how: str) -> metrale.Runtime:
    if how == "close":
        rt = metrale.Runtime("host")
        rt.close()
        return rt
    with metrale.Runtime("host") as rt:
        rt.run("fp8_act_quant", x=X)
    return rt


def test_every_public_method_is_listed():
    rt = metrale.Runtime("host")
    try:
        assert public(rt) | {"__enter__"} == set(CALLS) | READABLE
        assert public(rt.raw) == set(RAW_CALLS) | {"close", "closed"}
    finally:
        rt.close()


@pytest.mark.parametrize("how", ["close", "with"])
@pytest.mark.parametrize("name", sorted(CALLS))
def test_a_closed_runtime_raises(how, name):
    rt = closed_runtime(how)
    assert rt.closed
    with pytest.raises(metrale.ClosedError, match="this Runtime is closed"):
        CALLS[name](rt)
    rt.close()  # a second close does nothing


@pytest.mark.parametrize("name", sorted(RAW_CALLS))
def test_a_closed_raw_runtime_raises(name):
    rt = closed_runtime("close")
    with pytest.raises(metrale.ClosedError, match="this Runtime is closed"):
        RAW_CALLS[name](rt.raw)


def test_the_generated_ops_of_a_closed_runtime_raise():
    rt = closed_runtime("with")
    for name in rt.ops:
        with pytest.raises(metrale.ClosedError, match="this Runtime is closed"):
            rt.ops[name](x=X)
