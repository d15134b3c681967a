"""The generic registry from Python, what the C ABI leaves to the caller: launch dimensions given
as an int or a tuple, the variants declared through a Runtime since its last build(), and the
CompileError that build() raises for those that failed (each by kernel, name expression and the
compiler's lines, from the reason metrale_registry_handle gives).
Invariant: pure functions over values the C ABI returned; the one call back into the library is
the ``handle`` function build_failures is handed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from ._errors import ArgumentError, CompileError, python_terms

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
