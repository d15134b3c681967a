"""One op call's arguments, from Python values to the C ABI's named arguments: arrays checked
against their declarations (dtype, rank, layout, alignment, place), sizes filled from the
shapes where the caller left them out and checked where both say, scalars range-checked, and
outputs the caller did not pass allocated last.
Invariants: every refusal is an ArgumentError naming the op, the argument and the rule, raised
before anything is allocated or launched; nothing here names an op (an op whose declaration
cannot say everything registers a shape hook in _op_shapes).
"""

from __future__ import annotations

import operator
from typing import Any, Callable

import numpy as np

from . import _alloc
from ._native import call_key
from ._arrays import (ITEMSIZE, Tensor, address, describe, python_dtype, require_contiguous, require_dtype,
                      require_place, require_writable)
from ._arrays import row_pitch
from ._declarations import ArgSpec, OpSpec
from ._errors import ArgumentError


class Call:
    """What a shape hook sees and may add to: the arrays given (``tensors``), the sizes known so
    far with where each came from (``scalars``, ``origin``), and allocators for outputs."""

    __slots__ = ("spec", "tensors", "arrays", "scalars", "origin", "allocators", "deferred")

    def __init__(self, spec: OpSpec) -> None:
        self.spec = spec
        self.tensors: dict[str, Tensor] = {}
        self.arrays: dict[str, Any] = {}
        self.scalars: dict[str, int] = {}
        self.origin: dict[str, str] = {}
        # An output's allocator: (like, on_host) -> (the array returned, the array whose address is passed).
        self.allocators: dict[str, Callable[[Any, bool], tuple[Any, Any]]] = {}
        self.deferred: list[tuple[str, int, str, int, int]] = []

    def fail(self, rule: str) -> ArgumentError:
        return ArgumentError(f"{self.spec.name}: {rule}")

    def known(self, name: str, value: int, origin: str) -> None:
        """Sets a size, or checks it against the value already known (naming both sources)."""
        have = self.scalars.get(name)
        if have is None:
            self.scalars[name] = value
            self.origin[name] = origin
        elif have != value:
            raise self.fail(f"{origin} is {name} = {value}, but {self.origin[name]} is {name} = {have}")

    def default(self, name: str, value: int, origin: str) -> None:
        """Sets a size the caller and the arrays left open (a no-op when it is known)."""
        if name not in self.scalars:
            self.scalars[name] = value
            self.origin[name] = origin


def _scalar(spec: OpSpec, arg: ArgSpec, value: Any) -> int:
    try:
        number = operator.index(value)
    except TypeError:
        raise ArgumentError(f"{spec.name}: {arg.name}={value!r}: expected an integer") from None
    if not arg.min <= number <= arg.max:
        raise ArgumentError(f"{spec.name}: {arg.name}={number} is outside [{arg.min}, {arg.max}]")
    return number


def _dims_text(arg: ArgSpec) -> str:
    return ", ".join(d.text for d in arg.dims)


def _check_tensor(call: Call, arg: ArgSpec, t: Tensor, owned: frozenset[str] = frozenset()) -> None:
    """dtype, rank, layout and alignment; then the sizes its extents give. A tensor whose layout
    the op's shape hook owns (``owned``: e.g. scales, row- or column-major) is left to the hook
    after its dtype and alignment."""
    require_dtype(t, arg.dtype)
    if arg.kind == "output":
        require_writable(t)
    if arg.alignment > 1 and t.ptr % arg.alignment != 0:
        raise call.fail(f"{t.name}: its address must be {arg.alignment}-byte aligned, got {t.ptr:#x}")
    if not arg.dims or arg.name in owned:
        return  # any shape: the op's own checks (or a shape hook) judge it
    rank = len(arg.dims)
    if len(t.shape) != rank:
        raise call.fail(f"{t.name}: expected {rank} dimension(s) [{_dims_text(arg)}], got shape {tuple(t.shape)}")
    itemsize = ITEMSIZE[arg.dtype]
    extents = list(t.shape)
    pitch_scalar = call.spec.pitch.get(arg.name)  # type: ignore[attr-defined]
    if rank == 2:
        pitch = row_pitch(t, itemsize)
        if pitch != t.shape[1]:
            if pitch_scalar is None:
                raise call.fail(f"{t.name}: rows must be dense (the op takes no row stride for it: dims "
                                f"[{_dims_text(arg)}]), got strides {t.strides} for shape {tuple(t.shape)}")
            extents[1] = pitch  # the buffer the op sees: rows of `pitch` elements
    elif rank > 2 or (rank == 1 and t.shape[0] > 1 and t.strides[0] != itemsize):
        require_contiguous(t, itemsize)
    for i, dim in enumerate(arg.dims):
        extent = extents[i]
        where = f"{t.name}'s row stride" if (i == 1 and pitch_scalar and extent != t.shape[1]) else f"{t.name}.shape[{i}]"
        if dim.number is not None:
            if extent != dim.number:
                raise call.fail(f"{where} must be {dim.number}, got {extent}")
        elif dim.divisor == 1:
            call.known(dim.scalar, extent, where)
        else:
            call.deferred.append((where, extent, dim.scalar, dim.divisor, i))


def bind(spec: OpSpec, given: dict[str, Any], on_host: bool, device_ordinal: int,
         hook: Callable[[Call], None] | None) -> Plan:
    """Checks a call's arguments and returns its Plan; ArgumentError naming the rule otherwise.
    Nothing is allocated here."""
    call = Call(spec)
    by_name = spec.by_name  # type: ignore[attr-defined]
    for key, value in given.items():
        arg = by_name.get(key)
        if arg is None:
            raise ArgumentError(f"{spec.name}: no argument named {key!r} (arguments: {spec.arg_list()})")
        if value is None:
            continue
        if arg.tensor:
            try:
                t = describe(value, key)
            except ArgumentError as error:
                raise call.fail(str(error)) from None
            call.tensors[key] = t
            call.arrays[key] = value
        else:
            call.known(key, _scalar(spec, arg, value), f"{key}= (given)")
    for arg in spec.args:
        t = call.tensors.get(arg.name)
        if t is not None:
            try:
                _check_tensor(call, arg, t, getattr(hook, "owns_layout", frozenset()))
                require_place(t, on_host, device_ordinal)
            except ArgumentError as error:
                if str(error).startswith(f"{spec.name}: "):
                    raise
                raise call.fail(str(error)) from None
        elif arg.kind == "input":
            raise call.fail(f"{arg.name}: missing (an input {python_dtype(arg.dtype)} tensor "
                            f"[{_dims_text(arg)}]: {arg.doc})")
    if hook is not None:
        hook(call)
    for where, extent, scalar, divisor, _ in call.deferred:
        if scalar in call.scalars and extent != call.scalars[scalar] // divisor:
            raise call.fail(f"{where} is {extent}, but {call.origin[scalar]} is {scalar} = {call.scalars[scalar]} "
                            f"and {scalar}/{divisor} = {call.scalars[scalar] // divisor}")
    for arg in spec.scalars:  # type: ignore[attr-defined]
        value = call.scalars.get(arg.name)
        if value is None:
            if arg.required:
                raise call.fail(f"{arg.name}: missing (an integer: {arg.doc}), and no array given names it")
        elif not arg.min <= value <= arg.max:
            raise call.fail(f"{arg.name} = {value} ({call.origin[arg.name]}) is outside [{arg.min}, {arg.max}]")
    # Every check passed: how to allocate what the caller left out, then the named arguments.
    like = next((a.name for a in spec.args if a.kind == "input" and a.name in call.arrays), None)
    slots: list[tuple[int, str, Any]] = []
    for arg in spec.args:
        if arg.tensor:
            if arg.name in call.arrays:
                slots.append((_GIVEN, arg.name, arg.alignment))
            else:
                allocator = call.allocators.get(arg.name)
                if allocator is None:
                    allocator = _shaped(_allocation_shape(call, arg), arg.dtype, arg.name)
                slots.append((_ALLOCATED, arg.name, allocator))
        elif arg.name in call.scalars:
            slots.append((_SCALAR, arg.name, call.scalars[arg.name]))
    return Plan(spec.name, tuple(slots), tuple(a.name for a in spec.outputs), like)  # type: ignore[attr-defined]


_GIVEN, _ALLOCATED, _SCALAR = 0, 1, 2


def _shaped(shape: tuple[int, ...], dtype: str, name: str) -> Callable[[Any, bool], tuple[Any, Any]]:
    def allocate(like: Any, on_host: bool) -> tuple[Any, Any]:
        array = _alloc.empty(like, on_host, shape, dtype, name)
        return array, array

    return allocate


class Plan:
    """A checked call, reusable for any call whose arrays have the same types, shapes, strides
    and flags and whose sizes are the same (the checks depend on nothing else but addresses,
    whose alignment execute() checks again): the named arguments in the op's order, each a
    given array, an output to allocate, or a size."""

    __slots__ = ("op", "names", "template", "given", "allocated", "outputs", "like")

    def __init__(self, op: str, slots: tuple[tuple[int, str, Any], ...], outputs: tuple[str, ...],
                 like: str | None) -> None:
        self.op = op
        self.names = tuple(name for _, name, _ in slots)
        # The values with the sizes in place; the addresses go in per call.
        self.template = tuple(extra if kind == _SCALAR else 0 for kind, _, extra in slots)
        self.given = tuple((i, name, extra) for i, (kind, name, extra) in enumerate(slots) if kind == _GIVEN)
        self.allocated = tuple((i, name, extra) for i, (kind, name, extra) in enumerate(slots) if kind == _ALLOCATED)
        self.outputs = outputs
        self.like = like

    def execute(self, given: dict[str, Any], on_host: bool,
                addresses: dict[str, int] | None = None) -> tuple[tuple[int, ...], dict[str, Any], Any]:
        """The values for metrale_op_run (outputs allocated now), the outputs by name, and the
        first input (where outputs live, whose stream a device call uses); ``addresses`` are the
        given arrays' where plan_key read them."""
        like = given[self.like] if self.like is not None else None
        values = list(self.template)
        for i, name, alignment in self.given:
            ptr = addresses[name] if addresses is not None else address(given[name], name)
            if alignment > 1 and ptr % alignment != 0:
                raise ArgumentError(f"{self.op}: {name}: its address must be {alignment}-byte aligned, got {ptr:#x}")
            values[i] = ptr
        if not self.allocated:
            return tuple(values), {name: given[name] for name in self.outputs}, like
        made = {}
        for i, name, allocator in self.allocated:
            returned, base = allocator(like, on_host)
            made[name] = returned
            values[i] = address(base, name)
        outputs = {name: made[name] if name in made else given[name] for name in self.outputs}
        return tuple(values), outputs, like


def plan_key(given: dict[str, Any]) -> tuple[bytes, dict[str, int]] | None:
    """What a Plan depends on (each array's format, shape, strides and writability; each size)
    and the arrays' addresses, in one C call; None when a value is not an array with a dtype and
    a buffer (NumPy), an int, a bool or None: such a call takes the full checks every time."""
    return call_key(given)


def _allocation_shape(call: Call, arg: ArgSpec) -> tuple[int, ...]:
    """An output's shape from its dims; a named refusal when a dim is not known."""
    if not arg.dims:
        raise call.fail(f"{arg.name}: pass {arg.name}= (its declaration gives no shape to allocate it by)")
    shape = []
    for dim in arg.dims:
        if dim.number is not None:
            shape.append(dim.number)
            continue
        value = call.scalars.get(dim.scalar)
        decl = call.spec.arg(dim.scalar)
        optional = decl is not None and not decl.required
        if value is None and optional and decl.fallback > 0:
            value = decl.fallback
        # An optional size left at 0 means "the op's own choice" (a stride of 0: the row's length),
        # which a generic caller cannot turn into an extent.
        if value is None or (value == 0 and optional):
            raise call.fail(f"{arg.name}: pass {arg.name}= or {dim.scalar}= (its dims [{_dims_text(arg)}] need "
                            f"{dim.scalar}, which no argument gives)")
        shape.append(value // dim.divisor)
    return tuple(shape)
