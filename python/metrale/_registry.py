"""The generic registry from Python, what the C ABI leaves to the caller: launch dimensions given
as an int or a tuple, launch arguments packed (Python ints and floats as the kernel's parameter
types), the variants declared through a Runtime since its last build(), and the CompileError that
build() raises for those that failed (each by kernel, name expression and the compiler's lines,
from the reason metrale_registry_handle gives).
Invariant: functions over values the C ABI returned; the calls back into the library are the
``handle`` and ``parameters`` functions they are handed and kernel_parameters' compile.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from ._arrays import describe
from ._errors import ArgumentError, CompileError, Error, python_terms
from ._kernel_params import lowered_name, pack, parameter_types

_U32 = 2**32 - 1


def launch_dims(name: str, value: Any) -> tuple[int, int, int]:
    """``grid=8``, ``grid=(8,)``, ``grid=(8, 2)`` or ``grid=(8, 2, 1)`` as (x, y, z): each a
    positive integer (a 0 extent launches nothing, and the driver refuses it)."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        given: tuple[Any, ...] = (value,)
    elif isinstance(value, (tuple, list)):
        given = tuple(value)
    else:
        raise ArgumentError(f"{name}={value!r}: expected an int or a tuple of 1 to 3 ints")
    if not 1 <= len(given) <= 3:
        raise ArgumentError(f"{name}={value!r}: expected 1 to 3 dimensions, got {len(given)}")
    for extent in given:
        if isinstance(extent, bool) or not isinstance(extent, (int, np.integer)) or not 1 <= extent <= _U32:
            raise ArgumentError(f"{name}={value!r}: each extent must be an integer in [1, {_U32}], got {extent!r}")
    padded = tuple(int(e) for e in given) + (1,) * (3 - len(given))
    return padded  # type: ignore[return-value]


@dataclass(frozen=True)
class Declared:
    """One variant as declare() was given it (the expression before its placeholders are filled)."""

    id: int
    kernel: str
    expression: str
    block: int
    lanes: int
    groups: int

    @property
    def params(self) -> str:
        """"block=128, lanes=4": the parameters the variant takes (0: not taken)."""
        return ", ".join(f"{n}={v}" for n, v in (("block", self.block), ("lanes", self.lanes),
                                                  ("groups", self.groups)) if v)


@dataclass(frozen=True)
class VariantFailure:
    """A variant build() could not load: its id, kernel, name expression as declared and its
    parameters, the reason's first line ("compile failed: k.cuh(3): error: ...") and the
    compiler's log lines after it (NVRTC's on a device, the C++ compiler's on the host backend)."""

    id: int
    kernel: str
    expression: str
    params: str
    reason: str
    log: tuple[str, ...]


def failure(declared: Declared, reason: str) -> VariantFailure:
    """The failure of ``declared`` from the reason its handle gives: the first line, then the log."""
    first, _, rest = python_terms(reason).partition("\n")
    lines = [line.rstrip() for line in rest.splitlines()]
    while lines and not lines[-1]:
        lines.pop()
    return VariantFailure(declared.id, declared.kernel, declared.expression, declared.params, first, tuple(lines))


def build_failures(declared: Sequence[Declared],
                   handle: Callable[[int], tuple[int, str | None]]) -> list[VariantFailure]:
    """The variants of ``declared`` whose handle is absent after a build, in declaration order."""
    out = []
    for d in declared:
        found, reason = handle(d.id)
        if found == 0:
            out.append(failure(d, reason or "absent (the library gave no reason)"))
    return out


def compile_error(failures: Sequence[VariantFailure], built: int) -> CompileError:
    """The CompileError naming each failed variant with its compiler lines; ``built`` is how many
    of the variants this build() was for did load (they stay usable)."""
    noun = "variant" if len(failures) == 1 else "variants"
    lines = [f"{len(failures)} {noun} failed to build; {built} other(s) built and stay usable:"]
    for f in failures:
        expression = f"{f.expression}, {f.params}" if f.params else f.expression
        lines.append(f"  {f.kernel} ({expression}): {f.reason}")
        lines += [f"    {line}" for line in f.log]
    return CompileError("\n".join(lines), tuple(failures))


def kernel_parameters(raw: Any, variant: int, expression: str) -> tuple[str, ...] | str:
    """The variant's parameter types from the lowered name in its NVRTC log (a compile for the
    runtime's target arch, served from the cache after the first), or why they are unknown."""
    try:
        ok, reason, log = raw.registry_compile(variant, None)
        if not ok:
            return f"its NVRTC compile failed: {reason}"
        return parameter_types(lowered_name(log, expression))
    except (Error, ValueError) as error:
        return python_terms(str(error))


def pack_args(args: Sequence[Any], parameters: Callable[[], tuple[str, ...] | str]) -> list[bytes]:
    """Each launch argument as its bytes: bytes as given, a NumPy scalar's, an array's address, a
    Python int or float as the kernel's parameter type (``parameters()`` is asked only then)."""
    packed = []
    types: tuple[str, ...] | str | None = None
    for i, arg in enumerate(args):
        if isinstance(arg, bytes):
            packed.append(arg)
        elif isinstance(arg, np.generic):
            packed.append(arg.tobytes())
        elif isinstance(arg, (int, float)):
            if types is None:
                types = parameters()
                if not isinstance(types, str) and len(types) != len(args):
                    raise ArgumentError(f"args: the kernel takes {len(types)} arguments, got {len(args)}")
            if isinstance(types, str):
                raise ArgumentError(f"args[{i}]={arg!r}: a Python {type(arg).__name__} needs the kernel's parameter "
                                    f"types, unknown: {types}; pass a NumPy scalar (np.float32(x)) or bytes")
            try:
                packed.append(pack(arg, types[i], f"args[{i}]={arg!r}"))
            except ValueError as error:
                raise ArgumentError(str(error)) from None
        else:
            try:
                packed.append(np.uint64(describe(arg, f"args[{i}]").ptr).tobytes())
            except ArgumentError:
                raise ArgumentError(f"args[{i}]: expected bytes, a NumPy scalar, a Python int or float, or an "
                                    f"array, got {type(arg).__name__}") from None
    return packed
