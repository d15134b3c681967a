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

from . import _alloc
from ._arrays import ITEMSIZE, Tensor, describe, require_contiguous, require_dtype, require_place, require_writable
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


def _check_tensor(call: Call, arg: ArgSpec, t: Tensor) -> None:
    """dtype, rank, layout and alignment; then the sizes its extents give."""
    require_dtype(t, arg.dtype)
    if arg.kind == "output":
        require_writable(t)
    if arg.alignment > 1 and t.ptr % arg.alignment != 0:
        raise call.fail(f"{t.name}: its address must be {arg.alignment}-byte aligned, got {t.ptr:#x}")
    if not arg.dims:
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
         hook: Callable[[Call], None] | None) -> tuple[tuple[str, ...], tuple[int, ...], dict[str, Any], Any]:
    """The call's (names, values) for metrale_op_run, its outputs by name in declaration order,
    and the first input array (where outputs are allocated and whose stream a device call uses)."""
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
            raise call.fail(f"{arg.name}: missing (an input {arg.dtype} tensor [{_dims_text(arg)}]: {arg.doc})")
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
    # Every check passed: allocate what the caller left out, then the named arguments.
    like = next((call.arrays[a.name] for a in spec.args if a.kind == "input" and a.name in call.arrays), None)
    plans: list[tuple[ArgSpec, Any]] = []  # every output's shape or allocator, before any allocation
    for arg in spec.outputs:  # type: ignore[attr-defined]
        if arg.name not in call.arrays:
            plans.append((arg, call.allocators.get(arg.name) or _allocation_shape(call, arg)))
    outputs: dict[str, Any] = {}
    passed: dict[str, int] = {}
    for arg, plan in plans:
        if callable(plan):
            returned, base = plan(like, on_host)
        else:
            returned = base = _alloc.empty(like, on_host, plan, arg.dtype, arg.name)
        outputs[arg.name] = returned
        passed[arg.name] = describe(base, arg.name).ptr
    outputs = {a.name: call.arrays[a.name] if a.name in call.arrays else outputs[a.name]
               for a in spec.outputs}  # type: ignore[attr-defined]
    names = []
    values = []
    for arg in spec.args:
        if arg.tensor:
            t = call.tensors.get(arg.name)
            value = t.ptr if t is not None else passed[arg.name]
        else:
            value = call.scalars.get(arg.name)
            if value is None:
                continue  # the declaration's fallback
        names.append(arg.name)
        values.append(value)
    return tuple(names), tuple(values), outputs, like


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
