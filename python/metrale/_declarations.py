"""The ops a runtime serves, as the C ABI declares them (metrale_op_get, metrale_op_role,
metrale_op_arg_get): their roles and arguments, read once when the runtime opens, and what
Python makes of them: a docstring and a signature for each op's function under ``rt.ops``.
Invariant: nothing here names an op; every op, the library's and an engine's, is read the same way.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any

from ._arrays import python_dtype


@dataclass(frozen=True)
class Dim:
    """One declared extent of a tensor: a scalar's value (``scalar``), that value divided by
    ``divisor`` ("k/128"), or a fixed ``number``."""

    text: str
    scalar: str | None
    divisor: int
    number: int | None

    @staticmethod
    def parse(text: str) -> Dim:
        if text.isdigit():
            return Dim(text, None, 1, int(text))
        scalar, _, divisor = text.partition("/")
        return Dim(text, scalar, int(divisor) if divisor else 1, None)


@dataclass(frozen=True)
class ArgSpec:
    """One declared argument: a tensor the op reads (``input``) or writes (``output``), or an
    unsigned integer (``scalar``) in ``[min, max]``, required or with a ``fallback``; a scalar's
    ``zero_means`` (the dim its 0 stands for) and ``multiple_of``; an output's ``in_place_of``;
    a 2-D tensor's ``layout_by`` (a 0/1 scalar: 1 column-major) and ``column_stride``."""

    name: str
    kind: str
    dtype: str
    alignment: int
    dims: tuple[Dim, ...]
    min: int
    max: int
    required: bool
    fallback: int
    doc: str
    zero_means: Dim | None = None
    in_place_of: str = ""
    multiple_of: int = 0
    layout_by: str = ""
    column_stride: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "tensor", self.kind != "scalar")  # read on every call: a field, not a property



@dataclass(frozen=True)
class RoleSpec:
    """One kernel the op may run: its role, kernel, the other names it may be forced by, the
    lever that asks for it, and whether the target ships it and it was built at open."""

    role: str
    kernel: str
    aliases: tuple[str, ...]
    lever: str
    shipped: bool
    present: bool


@dataclass(frozen=True)
class OpSpec:
    """One op as declared: name, aliases, summary, roles and arguments in the op's order."""

    name: str
    aliases: tuple[str, ...]
    summary: str
    roles: tuple[RoleSpec, ...]
    args: tuple[ArgSpec, ...]

    @staticmethod
    def from_native(d: dict[str, Any]) -> OpSpec:
        """The spec of one op as metrale._native.NativeRuntime.ops() lists it."""
        roles = tuple(
            RoleSpec(r["role"], r["kernel"], tuple(r["aliases"]), r["lever"], r["shipped"], r["present"])
            for r in d["roles"]
        )
        args = tuple(
            ArgSpec(a["name"], a["kind"], a["dtype"], a["alignment"], tuple(Dim.parse(x) for x in a["dims"]),
                    a["min"], a["max"], a["required"], a["fallback"], a["doc"],
                    Dim.parse(a["zero_means"]) if a["zero_means"] else None, a["in_place_of"], a["multiple_of"],
                    a["layout_by"], a["column_stride"])
            for a in d["args"]
        )
        return OpSpec(d["name"], tuple(d["aliases"]), d["summary"], roles, args)

    def __post_init__(self) -> None:
        by_name = {a.name: a for a in self.args}
        object.__setattr__(self, "by_name", by_name)
        object.__setattr__(self, "outputs", tuple(a for a in self.args if a.kind == "output"))
        object.__setattr__(self, "scalars", tuple(a for a in self.args if not a.tensor))
        names = {}
        for r in self.roles:
            names[r.role] = r.role
            for alias in r.aliases:
                names[alias] = r.role
        object.__setattr__(self, "role_names", names)
        # A 2-D tensor whose innermost dim names an optional scalar: that scalar is its row stride
        # (k_stride, 0: the row's length), so the tensor may be a view with padded rows; one
        # naming a required scalar or a number is a plain extent, and its rows must be dense.
        # When the stride's 0 stands for a dim (zero_means "k"), that dim is the view's width:
        # what the op reads or writes of each row.
        pitch, width = {}, {}
        for a in self.args:
            if a.tensor and len(a.dims) == 2 and a.dims[1].scalar is not None and a.dims[1].divisor == 1:
                scalar = by_name.get(a.dims[1].scalar)
                if scalar is not None and not scalar.required:
                    pitch[a.name] = scalar.name
                    if scalar.zero_means is not None:
                        width[a.name] = scalar.zero_means
        object.__setattr__(self, "pitch", pitch)
        object.__setattr__(self, "width", width)

    def arg(self, name: str) -> ArgSpec | None:
        """The argument of that name, or None."""
        return self.by_name.get(name)  # type: ignore[attr-defined]

    def role_list(self) -> str:
        """"parent, twin, tensor_core (mma)": the roles and their aliases, as errors name them."""
        return ", ".join(r.role + "".join(f" ({a})" for a in r.aliases) for r in self.roles)

    def arg_list(self) -> str:
        """"x, weight, ...": the argument names in the op's order, as errors name them."""
        return ", ".join(a.name for a in self.args)

    @property
    def python_names(self) -> tuple[str, ...]:
        """The attribute names under ``rt.ops``: the name and aliases with '-' as '_'."""
        out = []
        for name in (self.name, *self.aliases):
            attr = name.replace("-", "_")
            if attr.isidentifier() and attr not in out:
                out.append(attr)
        return tuple(out)


def _describe_arg(a: ArgSpec) -> str:
    if a.tensor:
        dims = "[" + ", ".join(d.text for d in a.dims) + "]" if a.dims else "(any shape)"
        layout = f", column-major when {a.layout_by} = 1 (column stride {a.column_stride})" if a.layout_by else ""
        return f"{a.name}: {a.kind} {python_dtype(a.dtype)} {dims}{layout}, {a.alignment}-byte aligned. {a.doc}"
    default = "required" if a.required else f"default {a.fallback}"
    if a.zero_means is not None:
        default += f" (0: {a.zero_means.text})"
    if a.multiple_of > 1:
        default += f", a multiple of {a.multiple_of}"
    return f"{a.name}: integer in [{a.min}, {a.max}], {default}. {a.doc}"


def docstring(spec: OpSpec) -> str:
    """help(rt.ops.NAME): what the declaration says, and how Python fills and returns it."""
    lines = [spec.summary, ""]
    if spec.aliases:
        lines += [f"Also called: {', '.join(spec.aliases)}.", ""]
    lines.append("Arguments (keywords):")
    lines += [f"    {_describe_arg(a)}" for a in spec.args]
    lines += [
        "",
        f"Roles (role=): {spec.role_list()}; None lets the guards pick.",
        "",
        "Sizes a tensor's shape gives may be left out; outputs not passed are allocated where the",
        "inputs live. Returns a metrale.Result: the outputs by name and in order, and the pick.",
    ]
    return "\n".join(lines)


def signature(spec: OpSpec) -> inspect.Signature:
    """The inputs first, by position or keyword; then the other arguments keyword-only, in the
    op's order (None: not given), then role and stream."""
    params = [inspect.Parameter(a.name, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=None)
              for a in spec.args if a.kind == "input"]
    params += [inspect.Parameter(a.name, inspect.Parameter.KEYWORD_ONLY, default=None)
               for a in spec.args if a.kind != "input"]
    for extra in ("role", "stream"):
        if extra not in spec.by_name:  # type: ignore[attr-defined]
            params.append(inspect.Parameter(extra, inspect.Parameter.KEYWORD_ONLY, default=None))
    return inspect.Signature(params)
