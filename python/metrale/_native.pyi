"""Types of metrale._native, the extension over the C ABI (metrale/metrale.h)."""

from typing import Any

def version() -> str: ...
def abi_version() -> int: ...
def dlpack_describe(
    array: Any,
) -> tuple[int, tuple[int, ...], tuple[int, ...], tuple[int, int, int], tuple[int, int]]: ...

class NativeRuntime:
    def __init__(
        self,
        backend: int,
        device_ordinal: int,
        target: str | None,
        cache_dir: str | None,
        ssm_ba_gates_hopper: int,
        fp8_act_quant_hopper: int,
        ssm_ba_gates_tensor_core: int,
        host_sm_count: int,
        host_worker_threads: int,
        bundle_dirs: str | None = None,
    ) -> None: ...
    def close(self) -> None: ...
    def describe(self) -> dict[str, Any]: ...
    def ssm_ba_gates(
        self,
        x: int,
        weight: int,
        a_log: int,
        dt_bias: int,
        gate_out: int,
        m: int,
        n: int,
        k: int,
        k_stride: int,
        gate_stride: int,
        nv: int,
        vheads_per_group: int,
        kernel: int = 0,
        stream: int = 0,
    ) -> dict[str, Any]: ...
    def fp8_act_quant(
        self,
        x: int,
        q: int,
        scales: int,
        m: int,
        k: int,
        x_row_stride: int,
        column_major: bool = False,
        m_aligned: int = 0,
        pow2_scales: bool = False,
        kernel: int = 0,
        stream: int = 0,
    ) -> dict[str, Any]: ...
    def explain_ssm_ba_gates(self, m: int, n: int, k: int, k_stride: int = 0) -> dict[str, Any]: ...
    def explain_fp8_act_quant(self, m: int, k: int) -> dict[str, Any]: ...
    def registry_add_source(self, name: str, text: str) -> None: ...
    def registry_declare(
        self, kernel: str, source: str, name_expression: str, block: int = 0, lanes: int = 0, groups: int = 0
    ) -> int: ...
    def registry_build(self) -> None: ...
    def registry_compile(self, id: int, arch: str | None = None) -> tuple[bool, str | None, str]: ...
    def registry_handle(self, id: int) -> tuple[int, str | None]: ...
    def launch(
        self,
        handle: int,
        grid: tuple[int, int, int],
        block: tuple[int, int, int],
        args: list[bytes],
        shared_bytes: int = 0,
        stream: int = 0,
    ) -> None: ...
    def synchronize(self, stream: int = 0) -> None: ...
