"""The exceptions metrale raises: one per status of the C ABI (metrale/metrale.h).

The extension raises them through from_status with the library's own message, so a Python
caller sees exactly what a C caller reads from metrale_last_error().
"""

from __future__ import annotations


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


def from_status(status: int, message: str) -> Error:
    """The exception for a failed C ABI call (an unknown status becomes InternalError)."""
    return _BY_STATUS.get(status, InternalError)(message)
