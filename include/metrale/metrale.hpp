// metrale/metrale.hpp: the one header an engine includes: the runtime (open a device, run the
// ops), the registry and sources for the engine's own kernels, the backend and launch builder,
// the levers, the errors and the host prelude's kernel wrapper.
// Invariant: every header under include/metrale/ is reachable from here (except the host
// prelude, which a kernel source includes on its own, before its CUDA code); none of them
// includes anything from src/, so an installed package builds with this header alone.
#pragma once

#include "metrale/environment.hpp"
#include "metrale/error.hpp"
#include "metrale/gpu/compute_capability.hpp"
#include "metrale/gpu/device_handles.hpp"
#include "metrale/gpu/gpu_backend.hpp"
#include "metrale/gpu/kernel_launch.hpp"
#include "metrale/gpu/kernel_params.hpp"
#include "metrale/gpu/launch_config.hpp"
#include "metrale/host/host_kernel.hpp"
#include "metrale/jit/kernel_registry.hpp"
#include "metrale/jit/source_set.hpp"
#include "metrale/ops/fp8_act_quant.hpp"
#include "metrale/ops/ssm_ba_gates.hpp"
#include "metrale/runtime.hpp"
#include "metrale/target/hardware_target.hpp"
#include "metrale/target/levers.hpp"
