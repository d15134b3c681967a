"""Shape hooks: what an op's declaration cannot yet say about its arrays, per op name, so that
``rt.run(name, ...)`` and ``rt.ops.name(...)`` still take plain NumPy or PyTorch arrays.

The declarations name each tensor's buffer extents ("m,k_stride": rows of k_stride elements),
which is what the C ABI passes; two things a Python caller needs are missing there:
- the width of a view with padded rows (x[:, :k] of a wider array: the op reads k columns of
  each row of k_stride), so that a view narrower than what the op reads or writes is refused;
- the shape of an output declared with no dims (the FP8 op's scales, row- or column-major).
Each hook checks those before anything is allocated and says how to allocate such an output.
Invariants: a hook only adds sizes and checks the binding layer cannot derive; the library's
own rules stay the authority (a hook repeats one only where an allocation depends on it).
An op without a hook is bound from its declaration alone.
"""

from __future__ import annotations

from typing import Any, Callable

from . import _alloc
from ._arrays import require_contiguous
from ._binding import Call

_GROUP = 128  # the FP8 quantisation's tokens-per-scale group


def _width(call: Call, tensor: str, columns: int | None, what: str) -> None:
    """The view's width equals what the op reads or writes of each row (else refused)."""
    t = call.tensors.get(tensor)
    if t is None or len(t.shape) != 2 or columns is None:
        return
    if t.shape[1] != columns:
        raise call.fail(f"{tensor}: expected {what} = {columns} columns, got shape {tuple(t.shape)}")


def _size(call: Call, name: str) -> tuple[int | None, str]:
    value = call.scalars.get(name)
    return value, f"{name} ({call.origin[name]})" if value is not None else name


def _ba_gates(call: Call) -> None:
    # x's width is the weight's K; gate_out holds [gate | beta]: 2 * nv columns.
    k, k_what = _size(call, "k")
    _width(call, "x", k, k_what)
    nv, nv_what = _size(call, "nv")
    if nv is None:
        return
    _width(call, "gate_out", 2 * nv, f"2 * {nv_what}")
    if "gate_out" not in call.tensors:
        call.default("gate_stride", 2 * nv, "2 * nv (a new gate_out)")


def _group_quant(inputs: tuple[str, ...]) -> Callable[[Call], None]:
    """Per-token-group FP8 quantisation's shapes: K from the inputs' width, and the scales
    ([M, K/128], row-major or column-major with M_aligned rows) checked or allocated."""

    def hook(call: Call) -> None:
        for name in inputs:
            t = call.tensors.get(name)
            if t is not None and len(t.shape) == 2:
                call.default("k", t.shape[1], f"{name}.shape[1]")
                k, k_what = _size(call, "k")
                _width(call, name, k, k_what)
        m, k = call.scalars.get("m"), call.scalars.get("k")
        if m is None or k is None:
            return
        groups = k // _GROUP
        scales = call.tensors.get("scales")
        if scales is not None:
            _check_scales(call, scales, m, groups)
            return
        if k % _GROUP != 0:
            raise call.fail(f"k = {k} ({call.origin['k']}) is not a multiple of {_GROUP}: the scales hold one per "
                            f"group of {_GROUP}")
        column_major = call.scalars.get("scale_layout", 0) == 1
        m_aligned = call.scalars.get("m_aligned", 0) or (m + 3) // 4 * 4
        if column_major:
            if m_aligned < m or m_aligned % 4 != 0:
                raise call.fail(f"m_aligned = {m_aligned}: column-major scales need a multiple of 4 >= m = {m}")
            call.known("m_aligned", m_aligned, "m rounded up to 4 (new scales)")

        def allocate(like: Any, on_host: bool) -> tuple[Any, Any]:
            if not column_major:
                base = _alloc.empty(like, on_host, (m, groups), "fp32", "scales")
                return base, base
            base = _alloc.empty(like, on_host, (groups, m_aligned), "fp32", "scales")
            return base.T[:m], base

        call.allocators["scales"] = allocate

    # The scales' layout is this hook's to judge: its declared dims [m, k/128] say the row-major
    # extents, but a column-major view of [k/128, m_aligned] is as valid.
    hook.owns_layout = frozenset({"scales"})  # type: ignore[attr-defined]
    return hook


def _check_scales(call: Call, t: Any, m: int, groups: int) -> None:
    if tuple(t.shape) != (m, groups):
        raise call.fail(f"scales: expected shape (m, k/{_GROUP}) = {(m, groups)}, got {tuple(t.shape)}")
    # Column-major scales are the [M, K/128] view of a [K/128, M_aligned] array: strides (4, 4 * M_aligned).
    column_major = call.scalars.get("scale_layout")
    if column_major is None:
        # One group or one row: both layouts are the same bytes, so row-major.
        column_major = int(m > 1 and groups > 1 and t.strides[0] == 4 and t.strides[1] != 4)
        call.default("scale_layout", column_major, "scales' strides")
    if not column_major:
        require_contiguous(t, 4)
        return
    if (m > 1 and t.strides[0] != 4) or (groups > 1 and t.strides[1] % 4 != 0):
        raise call.fail(f"scales: column-major scales need strides (4, 4 * m_aligned) bytes, got {t.strides}")
    if groups > 1:
        call.known("m_aligned", t.strides[1] // 4, "scales' column stride")


#: Hooks by op name (the declared name, not an alias).
HOOKS: dict[str, Callable[[Call], None]] = {
    "ssm_ba_gates": _ba_gates,
    "fp8_act_quant": _group_quant(("x",)),
    "silu_mul_fp8_quant": _group_quant(("gate", "up")),
}
