// host/builtin_kernels.hpp: the kernel variants the library ships, compiled for the host
// from the same templates/ NVRTC compiles; every HostBackend starts with them.
#pragma once

#include "host/host_kernel_table.hpp"

namespace metrale {

void register_builtin_host_kernels(HostKernelTable& table);

}  // namespace metrale
