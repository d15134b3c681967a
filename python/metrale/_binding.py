"""One op call's arguments, from Python values to the C ABI's named arguments: arrays checked
against their declarations (dtype, rank, layout, alignment, place), sizes filled from the
shapes where the caller left them out and checked where both say, scalars range-checked, and
outputs the caller did not pass allocated last.
Invariants: every refusal is an ArgumentError naming the op, the argument and the rule, raised
before anything is allocated or launched; nothing here names an op: every size, width, layout
and allocation comes from the declaration (dims, a row stride's zero_means, a column-major
tensor's layout_by and column_stride, a scalar's multiple_of).
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
from ._declarations import ArgSpec, Dim, OpSpec
from ._errors import ArgumentError


class Call:
    """One call being bound: the arrays given (``tensors``), the sizes known so far with where
    each came from (``scalars``, ``origin``), allocators for outputs, and the extents that name
    a divided size ("k/128"), checked once every size is known (``deferred``)."""

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


def _know_dim(call: Call, dim: Dim, extent: int, where: str) -> None:
    """An extent the array gives for a declared dim: a number checked, a size learnt (or checked
    against what is known), a divided size ("k/128") checked once every size is known."""
    if dim.number is not None:
        if extent != dim.number:
            raise call.fail(f"{where} must be {dim.number}, got {extent}")
    elif dim.divisor == 1:
        call.known(dim.scalar, extent, where)
    else:
        call.deferred.append((where, extent, dim.scalar, dim.divisor, 0))


def _check_layout(call: Call, arg: ArgSpec, t: Tensor, itemsize: int) -> None:
    """A tensor that may be column-major (layout_by): its layout from the selector, or from its
    strides when the caller left the selector out; a column-major one's column stride from its
    strides. Its shape is the declared [rows, columns] either way."""
    rows, columns = t.shape
    selector = call.scalars.get(arg.layout_by)
    if selector is None:
        # One row or one column: both layouts are the same bytes, so row-major.
        selector = int(rows > 1 and columns > 1 and t.strides[0] == itemsize and t.strides[1] != itemsize)
        call.default(arg.layout_by, selector, f"{t.name}'s strides")
    if not selector:
        require_contiguous(t, itemsize)
        return
    if (rows > 1 and t.strides[0] != itemsize) or (columns > 1 and t.strides[1] % itemsize != 0):
        raise call.fail(f"{t.name}: column-major ({arg.layout_by} = 1) needs strides ({itemsize}, {itemsize} * "
                        f"{arg.column_stride}) bytes, got {t.strides}")
    if columns > 1:
        call.known(arg.column_stride, t.strides[1] // itemsize, f"{t.name}'s column stride")


def _check_tensor(call: Call, arg: ArgSpec, t: Tensor) -> None:
    """dtype, rank, layout and alignment; then the sizes its extents give."""
    require_dtype(t, arg.dtype)
    if arg.kind == "output":
        require_writable(t)
    if arg.alignment > 1 and t.ptr % arg.alignment != 0:
        raise call.fail(f"{t.name}: its address must be {arg.alignment}-byte aligned, got {t.ptr:#x}")
    if not arg.dims:
        return  # any shape: the op's own checks judge it
    rank = len(arg.dims)
    if len(t.shape) != rank:
        raise call.fail(f"{t.name}: expected {rank} dimension(s) [{_dims_text(arg)}], got shape {tuple(t.shape)}")
    itemsize = ITEMSIZE[arg.dtype]
    if arg.layout_by:
        _check_layout(call, arg, t, itemsize)
        for i, dim in enumerate(arg.dims):
            _know_dim(call, dim, t.shape[i], f"{t.name}.shape[{i}]")
        return
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
        _know_dim(call, dim, extent, where)
    width = call.spec.width.get(arg.name)  # type: ignore[attr-defined]
    if width is not None:
        # The view's width is what the op reads or writes of each row (the stride's 0 means it).
        _know_dim(call, width, t.shape[1], f"{t.name}.shape[1]")


def _column_major_outputs(call: Call) -> None:
    """For each column-major tensor whose column stride no array or argument gave: the rows
    rounded up to the stride's multiple_of (a new array's, or the one-column array's); then an
    allocator for a column-major output the caller left out: a [columns, stride] array, returned
    as its transposed [rows, columns] view."""
    spec = call.spec
    for arg in spec.args:
        if not arg.layout_by:
            continue
        selector = call.scalars.get(arg.layout_by)
        if not (selector if selector is not None else _fallback(spec, arg.layout_by)):
            continue
        rows = _dim_value(call, arg.dims[0])
        if rows is None:
            continue
        stride_decl = spec.arg(arg.column_stride)
        if not call.scalars.get(arg.column_stride):
            step = max(stride_decl.multiple_of, 1) if stride_decl is not None else 1
            call.scalars[arg.column_stride] = -(-rows // step) * step
            call.origin[arg.column_stride] = f"{arg.dims[0].text} = {rows} rounded up to {step} ({arg.name})"
            if stride_decl is not None:  # derived here, after the given sizes were checked
                _check_scalar(call, stride_decl, call.scalars[arg.column_stride])
        stride = call.scalars[arg.column_stride]
        if stride < rows:
            raise call.fail(f"{arg.column_stride} = {stride} ({call.origin[arg.column_stride]}) is less than "
                            f"{arg.dims[0].text} = {rows}: a column-major {arg.name} needs a column stride >= its rows")
        if arg.kind == "output" and arg.name not in call.tensors:
            columns = _allocation_shape(call, arg)[1]
            call.allocators[arg.name] = _column_major(rows, columns, stride, arg.dtype, arg.name)


def _column_major(rows: int, columns: int, stride: int, dtype: str,
                  name: str) -> Callable[[Any, bool], tuple[Any, Any]]:
    def allocate(like: Any, on_host: bool) -> tuple[Any, Any]:
        base = _alloc.empty(like, on_host, (columns, stride), dtype, name)
        return base.T[:rows], base

    return allocate


def _check_scalar(call: Call, arg: ArgSpec, value: int) -> None:
    """A size within its declared range and a multiple of its multiple_of, or a refusal naming
    where the value came from."""
    if not arg.min <= value <= arg.max:
        raise call.fail(f"{arg.name} = {value} ({call.origin[arg.name]}) is outside [{arg.min}, {arg.max}]")
    if arg.multiple_of > 1 and value % arg.multiple_of != 0:
        raise call.fail(f"{arg.name} = {value} ({call.origin[arg.name]}) is not a multiple of {arg.multiple_of}")


def _fallback(spec: OpSpec, name: str) -> int:
    decl = spec.arg(name)
    return decl.fallback if decl is not None and not decl.required else 0


def bind(spec: OpSpec, given: dict[str, Any], on_host: bool, device_ordinal: int) -> Plan:
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
                _check_tensor(call, arg, t)
                require_place(t, on_host, device_ordinal)
            except ArgumentError as error:
                if str(error).startswith(f"{spec.name}: "):
                    raise
                raise call.fail(str(error)) from None
        elif arg.kind == "input":
            raise call.fail(f"{arg.name}: missing (an input {python_dtype(arg.dtype)} tensor "
                            f"[{_dims_text(arg)}]: {arg.doc})")
    for where, extent, scalar, divisor, _ in call.deferred:
        if scalar in call.scalars and extent != call.scalars[scalar] // divisor:
            raise call.fail(f"{where} is {extent}, but {call.origin[scalar]} is {scalar} = {call.scalars[scalar]} "
                            f"and {scalar}/{divisor} = {call.scalars[scalar] // divisor}")
    for arg in spec.scalars:  # type: ignore[attr-defined]
        value = call.scalars.get(arg.name)
        if value is None:
            if arg.required:
                raise call.fail(f"{arg.name}: missing (an integer: {arg.doc}), and no array given names it")
        else:
            _check_scalar(call, arg, value)
    _column_major_outputs(call)
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


def _dim_value(call: Call, dim: Dim, depth: int = 0) -> int | None:
    """A dim's value from the sizes known: a number; a size (its fallback when left out; when 0
    and optional, what its zero_means says: a stride of 0 is the row's length) divided by the
    dim's divisor, which must divide it; None when no argument gives it."""
    if dim.number is not None:
        return dim.number
    value = call.scalars.get(dim.scalar)
    decl = call.spec.arg(dim.scalar)
    optional = decl is not None and not decl.required
    if value is None and optional:
        value = decl.fallback
    if value == 0 and optional:
        value = _dim_value(call, decl.zero_means, depth + 1) if decl.zero_means is not None and depth < 4 else None
    if value is None:
        return None
    if value % dim.divisor != 0:
        origin = call.origin.get(dim.scalar, "its default")
        raise call.fail(f"{dim.scalar} = {value} ({origin}) is not a multiple of {dim.divisor}: an extent "
                        f"{dim.text} needs it whole")
    return value // dim.divisor


def _allocation_shape(call: Call, arg: ArgSpec) -> tuple[int, ...]:
    """An output's shape from its dims; a named refusal when a dim is not known."""
    if not arg.dims:
        raise call.fail(f"{arg.name}: pass {arg.name}= (its declaration gives no shape to allocate it by)")
    shape = []
    for dim in arg.dims:
        value = _dim_value(call, dim)
        if value is None:
            raise call.fail(f"{arg.name}: pass {arg.name}= or {dim.scalar}= (its dims [{_dims_text(arg)}] need "
                            f"{dim.scalar}, which no argument gives)")
        shape.append(value)
    return tuple(shape)
