"""Outputs the caller did not pass: NumPy arrays on the host backend; on a device, arrays of
the input's own library (PyTorch or CuPy), and the stream that library is using now.
Invariant: an output is allocated only after every check of the call passed.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._errors import ArgumentError

# Declared dtypes (metrale_arg_info.dtype) as NumPy stores them: bf16 and e4m3 as their bits.
_NUMPY = {
    "bf16": np.uint16,
    "fp32": np.float32,
    "e4m3": np.uint8,
    "u8": np.uint8,
    "u16": np.uint16,
    "i32": np.int32,
    "u32": np.uint32,
}
_TORCH = {"bf16": "bfloat16", "fp32": "float32", "e4m3": "float8_e4m3fn", "u8": "uint8", "u16": "uint16", "i32": "int32",
          "u32": "uint32"}


def _library(like: Any) -> str:
    return type(like).__module__.split(".")[0]


def empty(like: Any, on_host: bool, shape: tuple[int, ...], dtype: str, name: str) -> Any:
    """A new uninitialised array of ``shape`` and declared ``dtype`` where ``like`` lives: a torch
    tensor for torch inputs (on the host backend too: CPU tensors), else NumPy on the host."""
    library = _library(like) if like is not None else "numpy"
    if library == "torch":
        import torch

        torch_dtype = getattr(torch, _TORCH[dtype], None)
        if torch_dtype is None:
            raise ArgumentError(f"{name}: this PyTorch has no {_TORCH[dtype]}: pass {name}=")
        return torch.empty(shape, dtype=torch_dtype, device=like.device)
    if on_host:
        return np.empty(shape, dtype=_NUMPY[dtype])
    if library == "cupy":
        import cupy

        with like.device:
            return cupy.empty(shape, dtype=_NUMPY[dtype])
    raise ArgumentError(f"{name}: pass {name}= for device arrays from {library} (PyTorch and CuPy are allocated here)")


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
