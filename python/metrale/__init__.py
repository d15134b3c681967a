"""metrale: run-time generated GPU kernels for LLM inference engines, from Python.

    import numpy as np, metrale
    x = np.random.default_rng(0).standard_normal((4, 256), dtype=np.float32)
    bits = (x.view(np.uint32) >> 16).astype(np.uint16)            # bf16 as its bits
    with metrale.Runtime("host") as rt:                            # or "auto" / "cuda"
        q, scales = result = rt.run("fp8_act_quant", x=bits)        # or rt.ops.fp8_act_quant(x=bits)
        print(result.pick.kernel)

Every op the runtime serves is listed in ``rt.ops`` and described by ``help(rt.ops.NAME)``.
bf16 arrays are uint16 (the bits) or ml_dtypes.bfloat16; e4m3 outputs are uint8 bits. NumPy
arrays on the host backend; on a device, any __dlpack__ or __cuda_array_interface__ object
(PyTorch, CuPy). Errors raise metrale.Error subclasses naming the argument and the rule
(Runtime.build() raises CompileError with the compiler's lines); the library's log lines go to
the ``logging`` logger "metrale".
"""

from . import _cuda_paths

_cuda_paths.export_site_dirs()  # before the extension loads: where NVRTC and CUDA's headers are

from . import _log  # noqa: E402
from ._declarations import ArgSpec, OpSpec, RoleSpec
from ._errors import (
    ArgumentError,
    BackendError,
    CaptureError,
    ClosedError,
    CompileError,
    ConfigError,
    Error,
    InternalError,
    NoDeviceError,
    VersionError,
)
from ._native import abi_version
from ._native import version as _version
from ._results import BuildResult, Explanation, Lever, Pick, Result, RoleExplanation, Verdict
from ._runtime import Backend, Runtime

__version__: str = _version()
_log.install()

__all__ = [
    "ArgSpec",
    "ArgumentError",
    "Backend",
    "BackendError",
    "BuildResult",
    "CaptureError",
    "ClosedError",
    "CompileError",
    "ConfigError",
    "Error",
    "Explanation",
    "InternalError",
    "Lever",
    "NoDeviceError",
    "OpSpec",
    "Pick",
    "Result",
    "RoleExplanation",
    "RoleSpec",
    "Runtime",
    "Verdict",
    "VersionError",
    "abi_version",
]
