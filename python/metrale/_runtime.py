"""metrale.Runtime: the library's runtime from Python, over the C ABI (metrale._native).

Arrays are checked here (dtype, rank, contiguity, where they live) and then by the library
(shapes, alignment), both before anything launches, so a refused call writes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from . import _alloc, _native
from ._arrays import Tensor, describe, require, require_contiguous, require_place, require_shape
from ._arrays import require_writable, row_stride
from ._errors import ArgumentError, NoDeviceError

_BACKENDS = {"auto": 0, "host": 1, "cuda": 2}
_LEVERS = {None: 0, True: 1, False: 2}
_KERNELS = {None: 0, "auto": 0, "twin": 1, "parent": 2, "shared": 2, "mma": 3}
_GROUP = 128


@dataclass(frozen=True)
class Pick:
    """Which kernel an op ran, and why the others did not.

    ``reason`` is the twin guard's (None: the twin or the tensor-core kernel ran);
    ``tensor_core_reason`` the tensor-core guard's, which comes first for BA gates (None: it ran,
    or the op has no tensor-core kernel).
    """

    kernel: str
    twin: bool
    reason: str | None
    tensor_core: bool
    tensor_core_reason: str | None


@dataclass(frozen=True)
class Explanation:
    """What an op would run for a shape on this runtime, and the smallest M the twin takes."""

    kernel: str
    twin: bool
    reason: str | None
    tensor_core: bool
    tensor_core_reason: str | None
    requested: bool
    lever_origin: str | None
    sm_count: int
    twin_present: bool
    parent_present: bool
    twin_min_m: int | None
    twin_min_reason: str | None
    tensor_core_requested: bool
    tensor_core_present: bool
    tensor_core_min_m: int | None
    tensor_core_min_reason: str | None


@dataclass(frozen=True)
class BuildResult:
    ok: bool
    reason: str | None
    log: str


def _kernel_choice(kernel: str | None) -> int:
    if kernel not in _KERNELS:
        raise ArgumentError(f"kernel={kernel!r}: expected None, 'auto', 'twin', 'parent', 'shared' or 'mma'")
    return _KERNELS[kernel]


class Runtime:
    """One device (or the host backend), its target, levers and kernels."""

    def __init__(
        self,
        backend: str = "auto",
        *,
        target: str | None = None,
        cache_dir: str | None = None,
        device: int = 0,
        ssm_ba_gates_hopper: bool | None = None,
        fp8_act_quant_hopper: bool | None = None,
        ssm_ba_gates_tensor_core: bool | None = None,
        host_sm_count: int = 0,
        host_worker_threads: int = 0,
        bundle_dirs: Sequence[str] | None = None,
    ) -> None:
        if backend not in _BACKENDS:
            raise ArgumentError(f"backend={backend!r}: expected 'auto', 'host' or 'cuda'")
        for name, lever in (
            ("ssm_ba_gates_hopper", ssm_ba_gates_hopper),
            ("fp8_act_quant_hopper", fp8_act_quant_hopper),
            ("ssm_ba_gates_tensor_core", ssm_ba_gates_tensor_core),
        ):
            if lever is not None and not isinstance(lever, bool):
                raise ArgumentError(f"{name}={lever!r}: expected None (the target's and environment's), True or False")
        if bundle_dirs is not None and (isinstance(bundle_dirs, str) or any(":" in d for d in bundle_dirs)):
            raise ArgumentError(f"bundle_dirs={bundle_dirs!r}: expected a list of directories, none with ':' in its name")
        #: The C ABI itself (pointers as ints), for engines that manage their own memory.
        self.raw = _native.NativeRuntime(
            _BACKENDS[backend],
            device,
            target,
            cache_dir,
            _LEVERS[ssm_ba_gates_hopper],
            _LEVERS[fp8_act_quant_hopper],
            _LEVERS[ssm_ba_gates_tensor_core],
            host_sm_count,
            host_worker_threads,
            ":".join(bundle_dirs) if bundle_dirs else None,
        )
        self._on_host = backend == "host"
        info = self.describe()
        self.has_device: bool = info["has_device"]
        self.no_device_reason: str = info["no_device_reason"]
        #: The kernel the last op call on this runtime ran, and why.
        self.last_pick: Pick | None = None

    def describe(self) -> dict[str, Any]:
        """Device, target, arch, SM count and the levers with their provenance."""
        return self.raw.describe()

    def close(self) -> None:
        self.raw.close()

    def __enter__(self) -> Runtime:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- the ops ---------------------------------------------------------------------

    def _prepare(self, tensors: list[Tensor]) -> None:
        if not self.has_device:
            raise NoDeviceError(f"no device: {self.no_device_reason}")
        require_place(tensors, self._on_host)

    def _stream(self, stream: int | None, like: Any, t: Tensor) -> int:
        if stream is not None:
            return stream
        return 0 if self._on_host else _alloc.current_stream(like, t.stream)

    def ssm_ba_gates(
        self,
        x: Any,
        weight: Any,
        a_log: Any,
        dt_bias: Any,
        *,
        vheads_per_group: int,
        kernel: str | None = None,
        out: Any = None,
        stream: int | None = None,
    ) -> Any:
        """Gated DeltaNet BA gates: x bf16 [M, K] (rows may be padded), weight bf16 [N, K],
        a_log and dt_bias float32 [N/2] -> float32 [M, N] (gate in [:, :N/2], beta after)."""
        choice = _kernel_choice(kernel)
        tx, tw, ta, td = (describe(v, n) for v, n in ((x, "x"), (weight, "weight"), (a_log, "a_log"), (dt_bias, "dt_bias")))
        require(tx, "bf16", 2)
        require(tw, "bf16", 2)
        require(ta, "f32", 1)
        require(td, "f32", 1)
        k_stride = row_stride(tx)
        m, k = tx.shape
        n = tw.shape[0]
        require_shape(tw, (n, k), "N rows of x's K")
        require_contiguous(tw)
        nv = ta.shape[0]
        require_shape(td, (nv,), "like a_log")
        require_contiguous(ta)
        require_contiguous(td)
        self._prepare([tx, tw, ta, td])
        if out is None:
            out = _alloc.empty(x, self._on_host, (m, 2 * nv), "f32", "out")
        to = describe(out, "out")
        require(to, "f32", 2)
        require_shape(to, (m, 2 * nv), "M rows of 2 * a_log's length")
        gate_stride = row_stride(to)
        require_writable(to)
        self._prepare([to])
        pick = self.raw.ssm_ba_gates(
            tx.ptr, tw.ptr, ta.ptr, td.ptr, to.ptr, m, n, k, k_stride, gate_stride, nv, vheads_per_group,
            choice, self._stream(stream, x, tx),
        )
        self.last_pick = Pick(**pick)
        return out

    def fp8_act_quant(
        self,
        x: Any,
        *,
        column_major_scales: bool = False,
        pow2_scales: bool = False,
        kernel: str | None = None,
        out: tuple[Any, Any] | None = None,
        stream: int | None = None,
    ) -> tuple[Any, Any]:
        """Per-token-group (128) FP8 quantisation: x bf16 [M, K] -> (q uint8 e4m3 bits [M, K],
        scales float32 [M, K/128]); column-major scales are a [M, K/128] view with strides
        (1, M_aligned) elements, M_aligned = M rounded up to 4."""
        choice = _kernel_choice(kernel)
        tx = describe(x, "x")
        require(tx, "bf16", 2)
        x_row_stride = row_stride(tx)
        m, k = tx.shape
        groups = k // _GROUP
        m_aligned = (m + 3) // 4 * 4 if column_major_scales else 0
        self._prepare([tx])
        if out is None:
            q = _alloc.empty(x, self._on_host, (m, k), "u8", "q")
            if column_major_scales:
                scales = _alloc.transposed(_alloc.empty(x, self._on_host, (groups, m_aligned), "f32", "scales"))[:m]
            else:
                scales = _alloc.empty(x, self._on_host, (m, groups), "f32", "scales")
        else:
            q, scales = out
        tq, ts = describe(q, "q"), describe(scales, "scales")
        require(tq, "u8", 2)
        require_shape(tq, (m, k), "x's shape")
        require_contiguous(tq)
        require(ts, "f32", 2)
        require_shape(ts, (m, groups), "M rows of K/128 groups")
        if column_major_scales:
            if (m > 1 and ts.strides[0] != 4) or (groups > 1 and ts.strides[1] % 4 != 0):
                raise ArgumentError(f"scales: column-major scales need strides (4, 4 * M_aligned) bytes, got {ts.strides}")
            if groups > 1:
                m_aligned = ts.strides[1] // 4  # the library checks M_aligned >= M and M_aligned % 4 == 0
        else:
            require_contiguous(ts)
        require_writable(tq)
        require_writable(ts)
        self._prepare([tq, ts])
        pick = self.raw.fp8_act_quant(
            tx.ptr, tq.ptr, ts.ptr, m, k, x_row_stride, column_major_scales, m_aligned, pow2_scales, choice,
            self._stream(stream, x, tx),
        )
        self.last_pick = Pick(**pick)
        return q, scales

    def explain(self, op: str, *, m: int, k: int, n: int | None = None, k_stride: int | None = None) -> Explanation:
        """What ``op`` ("ssm_ba_gates" or "fp8_act_quant") would run for this shape, and why."""
        if op in ("ssm_ba_gates", "ba-gates"):
            if n is None:
                raise ArgumentError("explain('ssm_ba_gates'): n= is required")
            return Explanation(**self.raw.explain_ssm_ba_gates(m, n, k, k_stride or 0))
        if op in ("fp8_act_quant", "fp8-quant"):
            return Explanation(**self.raw.explain_fp8_act_quant(m, k))
        raise ArgumentError(f"explain: op {op!r} is not 'ssm_ba_gates' or 'fp8_act_quant'")

    # ---- the registry: an engine's own kernels ----------------------------------------

    def add_source(self, name: str, text: str) -> None:
        self.raw.registry_add_source(name, text)

    def declare(self, kernel: str, source: str, name_expression: str, *, block: int = 0, lanes: int = 0,
                groups: int = 0) -> int:
        return self.raw.registry_declare(kernel, source, name_expression, block, lanes, groups)

    def build(self) -> None:
        """Builds and loads every declared variant for this runtime's device."""
        self.raw.registry_build()

    def compile(self, variant: int, arch: str | None = None) -> BuildResult:
        """Compiles one variant with NVRTC for ``arch`` (default: the target's), no device needed."""
        return BuildResult(*self.raw.registry_compile(variant, arch))

    def handle(self, variant: int) -> tuple[int, str | None]:
        """The variant's handle (0 when absent) and, when absent, why."""
        return self.raw.registry_handle(variant)

    def launch(self, handle: int, grid: Sequence[int], block: Sequence[int], args: Sequence[Any], *,
               shared_bytes: int = 0, stream: int = 0) -> None:
        """Launches ``handle``; each argument is bytes, a NumPy scalar, or an array (its address)."""
        packed = []
        for i, arg in enumerate(args):
            if isinstance(arg, bytes):
                packed.append(arg)
            elif isinstance(arg, np.generic):
                packed.append(arg.tobytes())
            else:
                try:
                    packed.append(np.uint64(describe(arg, f"args[{i}]").ptr).tobytes())
                except ArgumentError:
                    raise ArgumentError(f"args[{i}]: expected bytes, a NumPy scalar or an array, got "
                                        f"{type(arg).__name__}") from None
        dims = []
        for name, given in (("grid", tuple(grid)), ("block", tuple(block))):
            if not 1 <= len(given) <= 3:
                raise ArgumentError(f"{name}: expected 1 to 3 dimensions, got {given}")
            dims.append(given + (1,) * (3 - len(given)))
        self.raw.launch(handle, dims[0], dims[1], packed, shared_bytes, stream)

    def synchronize(self, stream: int = 0) -> None:
        self.raw.synchronize(stream)
