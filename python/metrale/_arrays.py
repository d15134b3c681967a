"""Arrays at the boundary: what a NumPy array, a DLPack producer (PyTorch, CuPy, JAX) or a
``__cuda_array_interface__`` object holds, reduced to an address, a shape, byte strides, an
element type and a place (host or CUDA device N), and the checks an op's declared arguments
need, each naming the argument and the rule.
Invariant: every check runs before anything is launched or allocated for the caller's outputs.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from . import _native
from ._errors import ArgumentError

# DLPack type codes and device types (dlpack.h).
_DL_INT, _DL_UINT, _DL_FLOAT, _DL_BFLOAT, _DL_FLOAT8_E4M3FN = 0, 1, 2, 4, 10
_DL_CPU, _DL_CUDA, _DL_CUDA_HOST, _DL_CUDA_MANAGED = 1, 2, 3, 13

#: Bytes per element of each declared dtype (metrale_arg_info.dtype).
ITEMSIZE = {"bf16": 2, "fp32": 4, "e4m3": 1, "u8": 1, "u16": 2, "i32": 4, "u32": 4}
#: The element types an array may hold for each declared dtype: bf16 and e4m3 travel as their
#: bits (uint16, uint8) where the array library has no such type.
ACCEPTS = {
    "bf16": ("bf16", "u16"),
    "fp32": ("fp32",),
    "e4m3": ("e4m3", "u8"),
    "u8": ("u8",),
    "u16": ("u16",),
    "i32": ("i32",),
    "u32": ("u32",),
}
EXPECTED = {
    "bf16": "bf16 (uint16 bits or ml_dtypes.bfloat16)",
    "fp32": "float32",
    "e4m3": "e4m3 (uint8 bits or ml_dtypes.float8_e4m3fn)",
    "u8": "uint8",
    "u16": "uint16",
    "i32": "int32",
    "u32": "uint32",
}
_NUMPY_KINDS = {
    "uint16": "u16",
    "bfloat16": "bf16",
    "float32": "fp32",
    "uint8": "u8",
    "float8_e4m3fn": "e4m3",
    "int32": "i32",
    "uint32": "u32",
    "int16": "i16",
}
# The built-in NumPy types by their one-letter code (dtype.char, cheaper than dtype.name).
_BY_CHAR = {"H": "u16", "f": "fp32", "B": "u8", "i": "i32", "I": "u32", "h": "i16"}
_CAI_KINDS = {"<u2": "u16", "<f4": "fp32", "|u1": "u8", "<u1": "u8", "<i4": "i32", "<u4": "u32", "<i2": "i16"}


class Tensor(NamedTuple):
    """One array argument as the C ABI sees it."""

    name: str
    ptr: int
    shape: tuple[int, ...]
    strides: tuple[int, ...]  # bytes
    kind: str  # "bf16", "fp32", "u16", ..., or the producer's spelling of another type
    device: bool  # True: CUDA memory
    device_id: int  # the CUDA device (DLPack device id); 0 for host memory and where unknown
    writable: bool
    stream: int | None  # a stream the producer named (__cuda_array_interface__), if any


def _dlpack_kind(code: int, bits: int, lanes: int) -> str:
    if lanes == 1 and bits == 16 and code == _DL_BFLOAT:
        return "bf16"
    if lanes == 1 and bits == 8 and code == _DL_FLOAT8_E4M3FN:
        return "e4m3"
    if lanes == 1:
        letter = {_DL_INT: "i", _DL_UINT: "u", _DL_FLOAT: "fp" if bits == 32 else "f"}.get(code)
        if letter is not None:
            return f"{letter}{bits}"
    return f"DLPack type code {code}, {bits} bits x {lanes}"


def _c_strides(shape: tuple[int, ...], itemsize: int) -> tuple[int, ...]:
    strides, step = [], itemsize
    for extent in reversed(shape):
        strides.append(step)
        step *= max(extent, 1)
    return tuple(reversed(strides))


# torch dtypes by their name (torch imported only where a tensor is met).
_TORCH_KINDS = {
    "bfloat16": "bf16",
    "float32": "fp32",
    "float8_e4m3fn": "e4m3",
    "uint8": "u8",
    "uint16": "u16",
    "int32": "i32",
    "uint32": "u32",
    "int16": "i16",
}


_TORCH_TENSOR: Any = None  # torch.Tensor, set when the first torch tensor is met


def _describe_torch(obj: Any, name: str) -> Tensor:
    """A torch.Tensor by its metadata (cheaper than a DLPack capsule, and it reads fake tensors:
    a custom op's fake implementation binds them with address 0, which every alignment meets)."""
    global _TORCH_TENSOR
    if _TORCH_TENSOR is None:
        import torch

        _TORCH_TENSOR = torch.Tensor
    device = obj.device
    if device.type not in ("cpu", "cuda"):
        raise ArgumentError(f"{name}: a torch tensor on {device} (expected the CPU or CUDA)")
    dtype = str(obj.dtype).rpartition(".")[2]
    itemsize = obj.element_size()
    on_device = device.type == "cuda"
    if type(obj) is _TORCH_TENSOR:
        ptr = obj.data_ptr()
    else:  # a subclass: a fake tensor (no storage) or a parameter, say
        from torch._subclasses.fake_tensor import is_fake

        ptr = 0 if is_fake(obj) else obj.data_ptr()
    return Tensor(name, ptr, tuple(obj.shape), tuple(s * itemsize for s in obj.stride()),
                  _TORCH_KINDS.get(dtype, f"torch.{dtype}"), on_device,
                  (device.index or 0) if on_device else 0, True, None)


def torch_call_key(given: dict[str, Any]) -> tuple[tuple[Any, ...], dict[str, int]] | None:
    """For a call whose arrays are all plain torch tensors (sizes ints, bools or None): what its
    Plan depends on (each tensor's dtype, shape, strides and device; each size) and the tensors'
    addresses; None otherwise (fake tensors, other arrays: the full checks every time)."""
    tensor_type = _TORCH_TENSOR
    if tensor_type is None:
        return None
    parts: list[tuple[Any, ...]] = []
    addresses: dict[str, int] = {}
    for name, value in given.items():
        kind = type(value)
        if kind is tensor_type:
            parts.append((name, value.dtype, value.shape, value.stride(), value.device))
            addresses[name] = value.data_ptr()
        elif value is None or kind is int or kind is bool:
            parts.append((name, value))
        else:
            return None
    return tuple(parts), addresses


def describe(obj: Any, name: str) -> Tensor:
    """The Tensor behind ``obj``; ArgumentError when it is not an array this package reads."""
    if isinstance(obj, np.ndarray):
        dtype = obj.dtype
        kind = _BY_CHAR.get(dtype.char) if dtype.num < 256 else None  # num >= 256: a user dtype (ml_dtypes)
        if kind is None:
            kind = _NUMPY_KINDS.get(dtype.name, dtype.name)
        ptr = _native.buffer_address(obj)
        if ptr is None:
            ptr = obj.__array_interface__["data"][0]
        return Tensor(name, ptr, obj.shape, obj.strides, kind, False, 0, obj.flags.writeable, None)
    if type(obj).__module__.startswith("torch") and hasattr(obj, "untyped_storage"):
        return _describe_torch(obj, name)
    if hasattr(obj, "__dlpack__") and hasattr(obj, "__dlpack_device__"):
        device_type, device_id = obj.__dlpack_device__()
        if device_type not in (_DL_CPU, _DL_CUDA, _DL_CUDA_HOST, _DL_CUDA_MANAGED):
            raise ArgumentError(f"{name}: DLPack device type {device_type} is neither the CPU nor CUDA")
        ptr, shape, strides, (code, bits, lanes), _ = _native.dlpack_describe(obj)
        kind = _dlpack_kind(code, bits, lanes)
        itemsize = max(bits * lanes // 8, 1)
        on_device = device_type != _DL_CPU
        return Tensor(name, ptr, shape, tuple(s * itemsize for s in strides), kind, on_device,
                      int(device_id) if on_device else 0, True, None)
    cai = getattr(obj, "__cuda_array_interface__", None)
    if cai is not None:
        typestr = cai["typestr"]
        kind = _CAI_KINDS.get(typestr, typestr)
        shape = tuple(cai["shape"])
        strides = cai.get("strides") or _c_strides(shape, int(typestr[2:]) if typestr[2:].isdigit() else 1)
        ptr, readonly = cai["data"]
        # The interface names no device: the pointer's context is the current one.
        return Tensor(name, ptr, shape, tuple(strides), kind, True, 0, not readonly, cai.get("stream"))
    raise ArgumentError(
        f"{name}: expected a NumPy array or an object with __dlpack__ or __cuda_array_interface__, "
        f"got {type(obj).__name__}"
    )


def address(obj: Any, name: str) -> int:
    """The address of an array ``describe`` accepted before (a NumPy array's in one C call)."""
    if type(obj) is np.ndarray:
        ptr = _native.buffer_address(obj)
        if ptr is not None:
            return ptr
    return describe(obj, name).ptr


def require_dtype(t: Tensor, dtype: str) -> None:
    if t.kind not in ACCEPTS[dtype]:
        raise ArgumentError(f"{t.name}: expected {EXPECTED[dtype]}, got {t.kind}")


def row_pitch(t: Tensor, itemsize: int) -> int:
    """Elements between the rows of a 2-D array whose rows are contiguous (padding allowed)."""
    rows, cols = t.shape
    if rows == 0 or cols == 0:
        return cols  # an empty array: its strides mean nothing (NumPy may report (0, 0))
    inner = t.strides[1] if cols > 1 else itemsize
    outer = t.strides[0] if rows > 1 else cols * itemsize
    if inner != itemsize or outer % itemsize != 0 or outer < cols * itemsize:
        raise ArgumentError(
            f"{t.name}: each row must be contiguous (element stride {itemsize} bytes, row stride a multiple of "
            f"it and >= the row), got strides {t.strides} for shape {t.shape}"
        )
    return outer // itemsize


def require_contiguous(t: Tensor, itemsize: int) -> None:
    expected = _c_strides(t.shape, itemsize)
    if any(extent > 1 and s != e for extent, s, e in zip(t.shape, t.strides, expected)):
        raise ArgumentError(f"{t.name}: must be C-contiguous (strides {expected}), got strides {t.strides}")


def require_writable(t: Tensor) -> None:
    if not t.writable:
        raise ArgumentError(f"{t.name}: the output array is read-only")


def require_place(t: Tensor, on_host: bool, device_ordinal: int) -> None:
    """The array in the runtime's memory: host memory on the host backend, the runtime's own
    CUDA device on CUDA (a tensor on another device names both)."""
    if t.device == on_host:
        where = "CUDA memory" if t.device else "host memory"
        backend = "the host backend" if on_host else f"CUDA device {device_ordinal}"
        raise ArgumentError(f"{t.name}: is in {where}, but this runtime runs on {backend}")
    if t.device and t.device_id != device_ordinal:
        raise ArgumentError(
            f"{t.name}: is on CUDA device {t.device_id} (cuda:{t.device_id}), but this runtime runs on "
            f"CUDA device {device_ordinal} (cuda:{device_ordinal})"
        )
