"""PyTorch custom ops: ``metrale.torch.register(rt)`` makes every op the runtime serves, the
library's and an engine's, a ``torch.ops.<namespace>.<op>`` custom op with a fake (meta)
implementation, so that ``torch.compile(fullgraph=True)`` traces through it and
``torch.library.opcheck`` holds.

    import torch, metrale, metrale.torch
    rt = metrale.Runtime("host")                 # CPU tensors; a "cuda" runtime serves CUDA ones
    metrale.torch.register(rt)
    q, scales = torch.ops.metrale.fp8_act_quant(x)          # x: torch.bfloat16 [M, K]

Each op is functional: its declared inputs are ``Tensor`` parameters in the op's order, its
sizes and flags ``int?`` keywords (None: taken from the shapes or the declaration's default),
then ``str? role`` (a role name or alias; None lets the guards pick); it returns its declared
outputs, new tensors (one ``Tensor`` or a tuple). A runtime on the host backend serves CPU
tensors, one on a CUDA device that device's tensors, on torch's current stream; registering a
second runtime under the same namespace adds its device type to the same ops.
Invariants: ``torch`` is imported only by this module; nothing here names an op; the fake
implementation and the real one shape their outputs by the same binding (metrale._binding.bind),
so their shapes, strides and dtypes cannot disagree.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field
from typing import Any, Callable

import torch

from ._binding import bind
from ._declarations import OpSpec
from ._errors import ArgumentError
from ._runtime import Runtime


@dataclass
class _Registered:
    """One op registered under a namespace: its spec, the custom op, and a runtime per device type
    (held weakly: torch keeps the op for the process's life, the engine decides the runtime's)."""

    spec: OpSpec
    op: Any
    runtimes: dict[str, weakref.ref[Runtime]] = field(default_factory=dict)

    def runtime(self, device: str) -> Runtime | None:
        """The open runtime serving ``device`` tensors, if any."""
        ref = self.runtimes.get(device)
        rt = ref() if ref is not None else None
        return rt if rt is not None and not rt.closed else None


# (namespace, op name) -> what was registered; torch keeps a custom op for the process's life.
_REGISTERED: dict[tuple[str, str], _Registered] = {}


def _device_type(rt: Runtime) -> str:
    return "cpu" if rt.backend == "host" else "cuda"  # the torch device type its tensors have


def schema(spec: OpSpec) -> str:
    """The custom op's schema: inputs as Tensors, sizes as ``int?``, ``str? role``; outputs returned."""
    params = [f"Tensor {a.name}" for a in spec.args if a.kind == "input"]
    params += [f"SymInt? {a.name}=None" for a in spec.args if not a.tensor]
    params.append("str? role=None")
    outputs = [a for a in spec.args if a.kind == "output"]
    returns = "Tensor" if len(outputs) == 1 else "(" + ", ".join("Tensor" for _ in outputs) + ")"
    return f"({', '.join(params)}) -> {returns}"


def _keywords(spec: OpSpec, values: tuple[Any, ...], named: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
    """The op's arguments by name from the schema's values, positional then by keyword (None or
    left out: not given), and the role."""
    names = [a.name for a in spec.args if a.kind == "input"] + [a.name for a in spec.args if not a.tensor] + ["role"]
    given = dict(zip(names, values))
    given.update(named)
    role = given.pop("role", None)
    return {name: value for name, value in given.items() if value is not None}, role


def _runtime_for(entry: _Registered, given: dict[str, Any]) -> Runtime:
    first = next((v for v in given.values() if isinstance(v, torch.Tensor)), None)
    device = first.device.type if first is not None else "cpu"
    rt = entry.runtime(device)
    if rt is None:
        served = ", ".join(d for d in sorted(entry.runtimes) if entry.runtime(d) is not None) or "no"
        raise ArgumentError(f"{entry.spec.name}: its tensors are on {device}, but the open runtimes registered for "
                            f"it serve {served} tensors (metrale.torch.register a runtime for {device})")
    return rt


def _returned(spec: OpSpec, outputs: dict[str, Any]) -> Any:
    made = tuple(outputs[a.name] for a in spec.args if a.kind == "output")
    return made[0] if len(made) == 1 else made


def _real(entry: _Registered) -> Callable[..., Any]:
    spec = entry.spec

    def run(*values: Any, **named: Any) -> Any:
        given, role = _keywords(spec, values, named)
        rt = _runtime_for(entry, given)
        return _returned(spec, rt.run(spec.name, role=role, **given).outputs)

    return run


def _fake(entry: _Registered) -> Callable[..., Any]:
    """The outputs' metadata without running: the call bound as rt.run binds it (every check and
    the outputs' shapes, strides and dtypes), its outputs allocated as fake tensors."""
    spec = entry.spec

    def shape_only(*values: Any, **named: Any) -> Any:
        given, role = _keywords(spec, values, named)
        rt = _runtime_for(entry, given)
        if role is not None and role not in spec.role_names:  # type: ignore[attr-defined]
            raise ArgumentError(f"{spec.name}: no kernel role {role!r} (roles: {spec.role_list()})")
        on_host = rt.backend == "host"
        plan = bind(spec, given, on_host, rt.device_ordinal)
        _, outputs, _ = plan.execute(given, on_host)
        return _returned(spec, outputs)

    return shape_only


def register(rt: Runtime, namespace: str = "metrale") -> dict[str, Any]:
    """Registers every op ``rt`` serves as ``torch.ops.<namespace>.<op>`` for the tensors of
    ``rt``'s device type (CPU for the host backend, CUDA otherwise) and returns them by op name.
    Registering another runtime under the namespace adds its device type; an op of the same name
    declared differently, or a second runtime for the same device type, is an ArgumentError."""
    if not namespace.isidentifier():
        raise ArgumentError(f"namespace {namespace!r}: must be a Python identifier (torch.ops.<namespace>)")
    device = _device_type(rt)
    registered = {}
    for name in rt.ops:
        spec = rt.op(name)
        entry = _REGISTERED.get((namespace, name))
        if entry is None:
            if not any(a.kind == "output" for a in spec.args):
                raise ArgumentError(f"{name}: declares no output, so it cannot be a functional custom op")
            op = torch.library.custom_op(f"{namespace}::{name}", mutates_args=(), schema=schema(spec))
            entry = _Registered(spec, None)
            entry.op = op(_real(entry))
            entry.op.register_fake(_fake(entry))
            _REGISTERED[(namespace, name)] = entry
        elif schema(entry.spec) != schema(spec):
            raise ArgumentError(f"{namespace}::{name}: registered as {schema(entry.spec)}, but this runtime "
                                f"declares it as {schema(spec)}")
        held = entry.runtime(device)
        if held is not None and held is not rt:
            raise ArgumentError(f"{namespace}::{name}: an open runtime already serves its {device} tensors "
                                f"(close it first)")
        entry.runtimes[device] = weakref.ref(rt)
        registered[name] = getattr(getattr(torch.ops, namespace), name)
    return registered
