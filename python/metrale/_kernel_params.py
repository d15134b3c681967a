"""A kernel's parameter types from its lowered (Itanium-mangled) name, so that Runtime.launch can
take Python ints and floats as CuPy's RawKernel does: each packed as the C type of its parameter.

NVRTC names the entry it compiled in its ptxas lines ("Compiling entry function '_Z7py_fillIL
i32EEvPffi' for 'sm_90'"); parameter_types reads the parameter list of such a name: a builtin
arithmetic type by its mangled letter, a pointer, or "other" (a struct, a reference, anything
this reader does not take apart). Python values are packed only for builtin parameters.
Invariant: pure; a name it cannot read is a ValueError (the caller then asks for NumPy scalars),
never a guess.
"""

from __future__ import annotations

import re

import numpy as np

# The builtin types a Python int or float may become, by their mangled letter.
_BUILTIN = {
    "b": np.uint8,  # bool: one byte
    "c": np.int8, "a": np.int8, "h": np.uint8,
    "s": np.int16, "t": np.uint16,
    "i": np.int32, "j": np.uint32,
    "l": np.int64, "m": np.uint64, "x": np.int64, "y": np.uint64,
    "f": np.float32, "d": np.float64,
}
_OTHER_BUILTIN = set("vwenoDzu")  # void, wchar_t, long double, __int128, ...: never packed
_ENTRY = re.compile(r"Compiling entry function '([^']+)'")


class _Reader:
    def __init__(self, text: str) -> None:
        self.text, self.at = text, 0

    def peek(self) -> str:
        return self.text[self.at] if self.at < len(self.text) else ""

    def take(self, n: int = 1) -> str:
        if self.at + n > len(self.text):
            raise ValueError(f"{self.text!r}: ends early")
        out = self.text[self.at:self.at + n]
        self.at += n
        return out

    def source_name(self) -> str:
        digits = ""
        while self.peek().isdigit():
            digits += self.take()
        if not digits:
            raise ValueError(f"{self.text!r}: expected a name at {self.at}")
        return self.take(int(digits))

    def skip_until_e(self) -> None:
        """Skips a bracketed run (template arguments, a nested name, a literal) up to its E."""
        while True:
            c = self.peek()
            if c == "":
                raise ValueError(f"{self.text!r}: an unclosed bracket")
            if c == "E":
                self.take()
                return
            if c.isdigit():
                self.source_name()
            elif c in "INJX":
                self.take()
                self.skip_until_e()
            elif c == "L":  # a literal: L <type> <value> E
                self.take()
                _type(self)
                while self.peek() not in ("E", ""):
                    self.take()
                self.take()
            elif c in "ST":
                self.substitution()
            else:
                self.take()

    def substitution(self) -> None:
        self.take()  # S or T
        if self.peek().islower() and self.text[self.at - 1] == "S":  # St, Sa, Ss, ...
            self.take()
            return
        while self.peek() not in ("_", ""):
            self.take()
        self.take()


def _function_name(r: _Reader) -> bool:
    """Reads the function's name (nested or not); True when it ends in template arguments (a
    template function: its return type is mangled before the parameters)."""
    if r.peek() == "N":
        r.take()
        last_template = False
        while r.peek() != "E":
            c = r.peek()
            if c == "":
                raise ValueError(f"{r.text!r}: an unclosed nested name")
            if c.isdigit():
                r.source_name()
                last_template = False
            elif c == "I":
                r.take()
                r.skip_until_e()
                last_template = True
            elif c in "ST":
                r.substitution()
                last_template = False
            else:  # cv-qualifiers of a member, constructors: not a kernel's, read past
                r.take()
                last_template = False
        r.take()
        return last_template
    if r.peek().isdigit():
        r.source_name()
        if r.peek() == "I":
            r.take()
            r.skip_until_e()
            return True
        return False
    raise ValueError(f"{r.text!r}: a function name this reader does not take apart")


def _type(r: _Reader) -> str:
    """One parameter type: a builtin's letter, "ptr", or "other"."""
    c = r.peek()
    if c in "KVr":  # cv-qualifiers of a parameter type (top-level ones are not mangled)
        r.take()
        return _type(r)
    if c == "P":
        r.take()
        _type(r)
        return "ptr"
    if c in _BUILTIN or c in _OTHER_BUILTIN:
        r.take()
        return c  # pack() takes only the _BUILTIN ones
    if c in "RO":  # references: not packable from a Python value
        r.take()
        _type(r)
        return "other"
    if c in "ST":  # a substitution or template parameter: an earlier non-builtin type or name
        r.substitution()
        if r.peek() == "I":
            r.take()
            r.skip_until_e()
        return "other"
    if c.isdigit():  # a class by name (float4, a struct)
        r.source_name()
        if r.peek() == "I":
            r.take()
            r.skip_until_e()
        return "other"
    if c == "N":
        r.take()
        r.skip_until_e()
        return "other"
    raise ValueError(f"{r.text!r}: a type this reader does not take apart at {r.at} ({c!r})")


def parameter_types(lowered: str) -> tuple[str, ...]:
    """The parameter types of a mangled kernel name: ("ptr", "f", "i") for ``k(float*, float,
    int)``; a template function's leading return type is left out. ValueError when unreadable."""
    if not lowered.startswith("_Z"):
        raise ValueError(f"{lowered!r}: not a mangled name")
    r = _Reader(lowered)
    r.take(2)
    if _function_name(r):
        _type(r)  # a template function mangles its return type (void) first
    types = []
    while r.peek():
        types.append(_type(r))
    return () if types == ["v"] else tuple(types)


def lowered_name(log: str, expression: str) -> str:
    """The entry a compile log names for ``expression`` ("ns::k<32>": the entry whose name holds
    "1k"); ValueError when the log names none or several."""
    base = expression.split("<", 1)[0].rsplit("::", 1)[-1].strip()
    entries = [e for e in dict.fromkeys(_ENTRY.findall(log)) if f"{len(base)}{base}" in e]
    if len(entries) != 1:
        raise ValueError(f"{expression}: the compiler's log names {len(entries)} entries for it")
    return entries[0]


def pack(value: int | float, kind: str, where: str) -> bytes:
    """A Python int or float as the parameter's C type; ValueError naming the rule otherwise."""
    numpy_type = _BUILTIN.get(kind)
    if numpy_type is None:
        what = "a pointer" if kind == "ptr" else "no arithmetic type"
        raise ValueError(f"{where}: the kernel's parameter is {what}, so a Python {type(value).__name__} cannot be "
                         "packed for it")
    if isinstance(value, float) and np.dtype(numpy_type).kind != "f":
        raise ValueError(f"{where}: a float for the kernel's {np.dtype(numpy_type).name} parameter")
    if np.dtype(numpy_type).kind in "iu":
        info = np.iinfo(numpy_type)
        if not info.min <= value <= info.max:
            raise ValueError(f"{where}: {value} does not fit the kernel's {np.dtype(numpy_type).name} parameter")
    return numpy_type(value).tobytes()
