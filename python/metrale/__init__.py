"""metrale: run-time generated GPU kernels for LLM inference engines, from Python.

    rt = metrale.Runtime(backend="host")            # or "auto" / "cuda"
    gates = rt.ssm_ba_gates(x, w, a_log, dt_bias, vheads_per_group=2)
    q, scales = rt.fp8_act_quant(x)

bf16 arrays are uint16 (the bits) or ml_dtypes.bfloat16; q is uint8 holding e4m3fn bits.
NumPy arrays on the host backend; on a device, any __dlpack__ or __cuda_array_interface__
object (PyTorch, CuPy). Errors raise metrale.Error subclasses with the library's message.
"""

from ._errors import ArgumentError, BackendError, ConfigError, Error, InternalError, NoDeviceError, VersionError
from ._native import abi_version
from ._native import version as _version
from ._runtime import BuildResult, Explanation, Pick, Runtime

__version__: str = _version()

__all__ = [
    "ArgumentError",
    "BackendError",
    "BuildResult",
    "ConfigError",
    "Error",
    "Explanation",
    "InternalError",
    "NoDeviceError",
    "Pick",
    "Runtime",
    "VersionError",
    "abi_version",
]
