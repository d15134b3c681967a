"""Arrays at the boundary: what a NumPy array, a DLPack producer (PyTorch, CuPy, JAX) or a
``__cuda_array_interface__`` object holds, reduced to an address, a shape and byte strides,
and the checks the ops need, each naming the argument and what is wrong.
Invariant: every check runs before anything is launched or allocated for the caller's ``out``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ._errors import ArgumentError

# DLPack type codes and device types (dlpack.h).
_DL_INT, _DL_UINT, _DL_FLOAT, _DL_BFLOAT = 0, 1, 2, 4
_DL_CPU, _DL_CUDA, _DL_CUDA_HOST, _DL_CUDA_MANAGED = 1, 2, 3, 13

_ITEMSIZE = {"bf16": 2, "f32": 4, "u8": 1}
_EXPECTED = {
    "bf16": "bf16 (uint16 bits or ml_dtypes.bfloat16)",
    "f32": "float32",
    "u8": "uint8 (e4m3 bits)",
}


@dataclass(frozen=True)
class Tensor:
    """One array argument as the C ABI sees it."""

    name: str
    ptr: int
    shape: tuple[int, ...]
    strides: tuple[int, ...]  # bytes
    kind: str  # "bf16", "f32", "u8", or the producer's spelling of another dtype
    device: bool  # True: CUDA memory
    writable: bool
    stream: int | None  # a stream the producer named (__cuda_array_interface__), if any


def _numpy_kind(dtype: np.dtype) -> str:
    if dtype == np.uint16 or dtype.name == "bfloat16":
        return "bf16"
    if dtype == np.float32:
        return "f32"
    if dtype == np.uint8:
        return "u8"
    return str(dtype)


def _dlpack_kind(code: int, bits: int, lanes: int) -> str:
    if lanes == 1 and bits == 16 and code in (_DL_UINT, _DL_BFLOAT):
        return "bf16"
    if lanes == 1 and bits == 32 and code == _DL_FLOAT:
        return "f32"
    if lanes == 1 and bits == 8 and code == _DL_UINT:
        return "u8"
    return f"DLPack type code {code}, {bits} bits x {lanes}"


def _c_strides(shape: tuple[int, ...], itemsize: int) -> tuple[int, ...]:
    strides, step = [], itemsize
    for extent in reversed(shape):
        strides.append(step)
        step *= max(extent, 1)
    return tuple(reversed(strides))


def describe(obj: Any, name: str) -> Tensor:
    """The Tensor behind ``obj``; ArgumentError when it is not an array this package reads."""
    if isinstance(obj, np.ndarray):
        data = obj.__array_interface__["data"][0]
        return Tensor(name, data, obj.shape, obj.strides, _numpy_kind(obj.dtype), False, obj.flags.writeable, None)
    if hasattr(obj, "__dlpack__") and hasattr(obj, "__dlpack_device__"):
        from . import _native

        device_type, _ = obj.__dlpack_device__()
        if device_type not in (_DL_CPU, _DL_CUDA, _DL_CUDA_HOST, _DL_CUDA_MANAGED):
            raise ArgumentError(f"{name}: DLPack device type {device_type} is neither the CPU nor CUDA")
        ptr, shape, strides, (code, bits, lanes), _ = _native.dlpack_describe(obj)
        kind = _dlpack_kind(code, bits, lanes)
        itemsize = max(bits * lanes // 8, 1)
        return Tensor(name, ptr, shape, tuple(s * itemsize for s in strides), kind, device_type != _DL_CPU, True, None)
    cai = getattr(obj, "__cuda_array_interface__", None)
    if cai is not None:
        typestr = cai["typestr"]
        kind = {"<u2": "bf16", "<f4": "f32", "|u1": "u8", "<u1": "u8"}.get(typestr, typestr)
        shape = tuple(cai["shape"])
        strides = cai.get("strides") or _c_strides(shape, _ITEMSIZE.get(kind, 1))
        ptr, readonly = cai["data"]
        stream = cai.get("stream")
        return Tensor(name, ptr, shape, tuple(strides), kind, True, not readonly, stream)
    raise ArgumentError(
        f"{name}: expected a NumPy array or an object with __dlpack__ or __cuda_array_interface__, "
        f"got {type(obj).__name__}"
    )


def require(t: Tensor, kind: str, ndim: int) -> None:
    """dtype and rank, each named in the message."""
    if t.kind != kind:
        raise ArgumentError(f"{t.name}: expected {_EXPECTED[kind]}, got {t.kind}")
    if len(t.shape) != ndim:
        raise ArgumentError(f"{t.name}: expected {ndim} dimension(s), got shape {t.shape}")


def row_stride(t: Tensor) -> int:
    """Elements between rows of a 2-D array whose rows are contiguous (padding allowed)."""
    itemsize = _ITEMSIZE[t.kind]
    rows, cols = t.shape
    inner = t.strides[1] if cols > 1 else itemsize
    outer = t.strides[0] if rows > 1 else cols * itemsize
    if inner != itemsize or outer % itemsize != 0 or outer < cols * itemsize:
        raise ArgumentError(
            f"{t.name}: each row must be contiguous (element stride {itemsize} bytes, row stride a multiple of "
            f"it and >= the row), got strides {t.strides} for shape {t.shape}"
        )
    return outer // itemsize


def require_contiguous(t: Tensor) -> None:
    expected = _c_strides(t.shape, _ITEMSIZE[t.kind])
    if any(extent > 1 and s != e for extent, s, e in zip(t.shape, t.strides, expected)):
        raise ArgumentError(f"{t.name}: must be C-contiguous (strides {expected}), got strides {t.strides}")


def require_shape(t: Tensor, shape: tuple[int, ...], why: str) -> None:
    if tuple(t.shape) != shape:
        raise ArgumentError(f"{t.name}: expected shape {shape} ({why}), got {tuple(t.shape)}")


def require_writable(t: Tensor) -> None:
    if not t.writable:
        raise ArgumentError(f"{t.name}: the output array is read-only")


def require_place(tensors: list[Tensor], on_host: bool) -> None:
    """Every array in the runtime's memory: host arrays on the host backend, CUDA ones on CUDA."""
    for t in tensors:
        if t.device == on_host:
            where = "CUDA memory" if t.device else "host memory"
            backend = "the host backend" if on_host else "a CUDA device"
            raise ArgumentError(f"{t.name}: is in {where}, but this runtime runs on {backend}")
