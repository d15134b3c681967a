// metrale/host/cuda_include/metrale_toolkit_host.hpp: the toolkit headers a kernel engines write may include that
// have a host-side form (<cuda_runtime.h>, <cuda_fp16.h>, <cuda_bf16.h>), read by a host-JIT unit
// first, as the host compiler's pass of nvcc reads them: before the prelude's macros (gridDim,
// __device__, ...), which their declarations would otherwise collide with (cuda_runtime.h's
// `dim3 gridDim` parameters), and before the device-pass macros the unit defines over the
// engine's source (__CUDA_ARCH__, __CUDACC__, __CUDACC_RTC__: host/host_jit.cpp), which would
// send them down their inline-PTX branches. The engine's own include of one of them is then a
// no-op (its include guard).
// Invariants: every header here is optional (a wheel without the toolkit's headers has none of
// them); nothing here defines anything of its own; a toolkit header not listed here that the
// engine includes is read under the device-pass macros, so its device-only branch fails the
// host compile by name (inline PTX is refused), never compiles to an empty kernel.
#pragma once

#if __has_include(<cuda_runtime.h>)
#include <cuda_runtime.h>
#endif
#if __has_include(<cuda_fp16.h>)
#include <cuda_fp16.h>
#endif
#if __has_include(<cuda_bf16.h>)
#include <cuda_bf16.h>
#endif
