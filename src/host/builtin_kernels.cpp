// host/builtin_kernels.cpp: the shipped kernel variants, instantiated for the host. Each entry
// includes its template after metrale/host/cuda_host_prelude.hpp and registers one
// make_host_kernel<...>() per (kernel, params) a target ships.
#include "metrale/host/builtin_kernels.hpp"

namespace metrale {

void register_builtin_host_kernels(HostKernelTable& /*table*/) {}

}  // namespace metrale
