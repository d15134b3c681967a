"""The exceptions metrale raises: one per status of the C ABI (metrale/metrale.h), and
CompileError (build() found variants that failed).

The extension raises them through from_status with the library's message in Python's terms
(python_terms): what a C caller reads from metrale_last_error(), less the C function it came
from and with the C and C++ names of the things Python spells otherwise.
"""

from __future__ import annotations

import re


class Error(Exception):
    """Base of every metrale error; ``status`` is the C ABI's status code."""

    status = 6


class ArgumentError(Error, ValueError):
    """A shape, stride, dtype, pointer or name no kernel can take (nothing was written)."""

    status = 1


class ConfigError(Error, ValueError):
    """A HARDWARE.toml, target name or environment value is malformed."""

    status = 2


class BackendError(Error, RuntimeError):
    """The CUDA driver or the host backend refused or failed an operation."""

    status = 3


class NoDeviceError(BackendError):
    """The runtime has no device; the message says why."""

    status = 4


class CaptureError(BackendError):
    """An op call on a stream capturing into a CUDA graph found nothing prepared for it
    (Runtime.prepare); nothing was launched and the capture is intact."""

    status = 7


class ClosedError(Error):
    """A call on a Runtime that close() closed, on any thread: nothing ran. A call already in
    flight when close() began finishes first; every call that starts later raises this."""

    status = 8


class CompileError(Error, RuntimeError):
    """Runtime.build() found variants declared through this Runtime that failed to compile (or
    load): ``failures`` lists each one's id, kernel, name expression and the compiler's reason and
    log lines. No C call failed (``status`` 0): the variants that did build are loaded and usable."""

    status = 0

    def __init__(self, message: str, failures: tuple = ()) -> None:
        super().__init__(message)
        #: One VariantFailure (metrale._registry) per variant that failed, in declaration order.
        self.failures = failures


class VersionError(Error):
    """The extension and libmetrale disagree on a struct's size."""

    status = 5


class InternalError(Error, RuntimeError):
    """Anything else (out of memory, a bug in metrale)."""

    status = 6


_BY_STATUS = {
    cls.status: cls
    for cls in (ArgumentError, ConfigError, BackendError, NoDeviceError, VersionError, CaptureError, ClosedError)
}


# "metrale_op_run_role: ": the C function a failed call names first (C callers want it; a
# Python caller called a method, which the traceback names).
_C_FUNCTION_PREFIX = re.compile(r"^metrale_[a-z0-9_]+: ")
# C and C++ names inside the library's messages, as Python spells what they name. Only these
# exact phrases: a compiler log may hold identifiers that merely start with "metrale_".
_PYTHON_TERMS = (
    ("(Runtime::prepare, metrale_op_prepare, rt.prepare)", "(Runtime.prepare)"),
    ("call metrale_registry_build", "call Runtime.build()"),
    ("(BackendChoice::kNone)", "(the runtime explains and compiles only)"),
)
# "RuntimeOptions::shapes[...]": a C++ option is the Runtime keyword of the same name (levers=, shapes=).
_CPP_OPTION = re.compile(r"\bRuntimeOptions::(?=[a-z_])")


def python_terms(message: str) -> str:
    """The library's message as a Python caller reads it: no leading C function name, and the
    C/C++ names of options and functions as the Python package names them."""
    message = _C_FUNCTION_PREFIX.sub("", message, count=1)
    for c_name, python_name in _PYTHON_TERMS:
        message = message.replace(c_name, python_name)
    return _CPP_OPTION.sub("", message)


def from_status(status: int, message: str) -> Error:
    """The exception for a failed C ABI call (an unknown status becomes InternalError), its
    message in Python's terms."""
    return _BY_STATUS.get(status, InternalError)(python_terms(message))
