"""``rt.ops``: one Python function per op the runtime serves, generated from its declaration
(name, aliases with '-' as '_', a docstring and a signature: the inputs by position or keyword,
everything else by keyword), each a call of ``rt.run(name, ...)``.
Invariant: generated at open from what the C ABI lists; nothing here names an op.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Iterator

from ._declarations import OpSpec, docstring, signature
from ._errors import ArgumentError

if TYPE_CHECKING:
    from ._results import Result
    from ._runtime import Runtime


def _function(runtime: Runtime, spec: OpSpec) -> Callable[..., Result]:
    name = spec.name
    inputs = tuple(a.name for a in spec.args if a.kind == "input")

    def op_function(*tensors: Any, **args: Any) -> Result:
        if tensors:
            # The inputs may come by position, in the op's order (as torch.ops.<ns>.<op> takes them).
            if len(tensors) > len(inputs):
                raise ArgumentError(f"{name}: {len(tensors)} positional arguments for {len(inputs)} inputs "
                                    f"({', '.join(inputs)}); the rest go by keyword")
            for input_name, tensor in zip(inputs, tensors):
                if input_name in args:
                    raise ArgumentError(f"{name}: {input_name} is given by position and by keyword")
                args[input_name] = tensor
        return runtime.run(name, **args)

    op_function.__name__ = op_function.__qualname__ = spec.python_names[0] if spec.python_names else name
    op_function.__doc__ = docstring(spec)
    op_function.__signature__ = signature(spec)  # type: ignore[attr-defined]
    op_function.spec = spec  # type: ignore[attr-defined]
    return op_function


class Ops:
    """The runtime's ops as functions: ``rt.ops.ssm_ba_gates(x=..., ...)``, an alias with '-'
    as '_' (``rt.ops.ba_gates``), or by any name or alias (``rt.ops["ba-gates"]``). Iterating
    gives the op names; ``help(rt.ops.NAME)`` shows the declaration."""

    def __init__(self, runtime: Runtime, specs: list[OpSpec]) -> None:
        self._names = tuple(s.name for s in specs)
        self._functions: dict[str, Callable[..., Result]] = {}
        for spec in specs:
            function = _function(runtime, spec)
            for key in (spec.name, *spec.aliases, *spec.python_names):
                self._functions.setdefault(key, function)

    def __getattr__(self, name: str) -> Callable[..., Result]:
        functions = object.__getattribute__(self, "_functions")
        if name in functions and name.isidentifier():
            return functions[name]
        raise AttributeError(f"no op named {name!r} (ops: {', '.join(self._names)})")

    def __getitem__(self, name: str) -> Callable[..., Result]:
        try:
            return self._functions[name]
        except KeyError:
            raise KeyError(f"no op named {name!r} (ops: {', '.join(self._names)})") from None

    def __contains__(self, name: object) -> bool:
        return name in self._functions

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)

    def __dir__(self) -> list[str]:
        return sorted(k for k in self._functions if k.isidentifier())

    def __repr__(self) -> str:
        return f"Ops({', '.join(self._names)})"
