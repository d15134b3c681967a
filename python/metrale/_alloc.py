"""Outputs the caller did not pass: NumPy arrays on the host backend; on a device, arrays of
the input's own library (PyTorch or CuPy), and the stream that library is using now.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._errors import ArgumentError

_NUMPY = {"f32": np.float32, "u8": np.uint8}


def _library(like: Any) -> str:
    return type(like).__module__.split(".")[0]


def empty(like: Any, on_host: bool, shape: tuple[int, ...], kind: str, name: str) -> Any:
    """A new uninitialised array of ``shape`` where ``like`` lives."""
    if on_host:
        return np.empty(shape, dtype=_NUMPY[kind])
    library = _library(like)
    if library == "torch":
        import torch

        return torch.empty(shape, dtype={"f32": torch.float32, "u8": torch.uint8}[kind], device=like.device)
    if library == "cupy":
        import cupy

        with like.device:
            return cupy.empty(shape, dtype=_NUMPY[kind])
    raise ArgumentError(f"{name}: pass out= for device arrays from {library} (PyTorch and CuPy are allocated here)")


def transposed(array: Any) -> Any:
    """The transpose of a 2-D array of any of the supported libraries."""
    return array.T


def current_stream(like: Any, named: int | None) -> int:
    """The CUstream to launch on: the one the producer named, else its library's current one."""
    if named is not None and named > 2:
        return named
    library = _library(like)
    if library == "torch":
        import torch

        return int(torch.cuda.current_stream(like.device).cuda_stream)
    if library == "cupy":
        import cupy

        return int(cupy.cuda.get_current_stream().ptr)
    return 0
