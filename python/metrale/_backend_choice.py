"""Which backend a Runtime ends on, from the one asked for and what the C ABI's open found.

The C ABI opens "auto" and "cuda" without a device as a runtime whose ops all fail with
NO_DEVICE (a C caller may still explain and compile). A Python caller asked otherwise: "auto"
means "the GPU when there is one, else the CPU", so it reopens on the host backend and says so
(Runtime.backend_reason and one warning on the "metrale" logger); "cuda" means the GPU, so no
device is a NoDeviceError at open, not at the first call.
Invariant: a pure decision; Runtime.__init__ does what it says.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class BackendChoice:
    """``backend`` the runtime runs on ("host" or "cuda"); ``reopen_on_host``: close the C
    runtime and open the host backend instead; ``refusal``: the NoDeviceError's message (the
    runtime is closed); ``reason``: why the backend differs from the one asked for, else None."""

    backend: str
    reopen_on_host: bool = False
    refusal: str | None = None
    reason: str | None = None


def choose_backend(asked: str, has_device: bool, no_device_reason: str) -> BackendChoice:
    """The choice for ``asked`` ("auto", "host", "cuda") once the C ABI opened it."""
    if asked == "host":
        return BackendChoice("host")
    if has_device:
        return BackendChoice("cuda")
    why = no_device_reason or "the CUDA backend did not open"
    if asked == "cuda":
        return BackendChoice("cuda", refusal=f"Runtime('cuda'): no CUDA device: {why} (Runtime('host') runs on the "
                                              "CPU; Runtime('auto') takes the GPU when there is one)")
    return BackendChoice("host", reopen_on_host=True, reason=f"no CUDA device: {why}")


def fallback_line(choice: BackendChoice) -> str:
    """The one log line of an "auto" runtime that opened on the host backend."""
    return f"Runtime('auto') runs on the host backend (the CPU): {choice.reason}"
