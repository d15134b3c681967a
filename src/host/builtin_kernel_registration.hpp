// host/builtin_kernel_registration.hpp: how the shipped kernel variants reach the host backend
// without a list that names the ops. Each op's template (src/ops/<op>/<op>.cuh) ends with its
// shipped (kernel, params) as METRALE_HOST_KERNEL lines under #ifdef METRALE_HOST_KERNEL, so NVRTC
// and the host JIT never see them; this header defines the macro, and the two units that
// instantiate the templates for the host (builtin_kernels.cpp, plainly, and
// profiled_builtin_kernels.cpp, inside namespace metrale_profiled) include every op's templates
// through the generated builtin_kernel_templates.inc (CMake writes one #include per
// src/ops/*/*.cuh), so a new op's folder is picked up with no edit here.
// Invariants: every (kernel, params) any HARDWARE.toml ships has a line in its op's template (the
// unit test "every shipped kernel variant has a builtin host instantiation" names a missing one).
// A line is an explicit specialisation BuiltinKernelSlot<__COUNTER__>, of the primary template
// the including unit declares in the namespace it includes the templates into; the unit adds the
// slots numbered between two __COUNTER__ readings taken around its includes (numbers used by
// anything else stay the primary's no-op). Nothing runs before main: the profiled unit's kernel
// AddressSanitizer has no dynamic-initialisation hooks to call.
#pragma once

#include <string>
#include <utility>

#include "host/host_kernel_table.hpp"
#include "metrale/gpu/kernel_params.hpp"
#include "metrale/host/host_kernel.hpp"

namespace metrale::host_builtin {

// Adds Slot<First + 1> ... Slot<Last - 1> to `table`, in line order.
template <template <int> class Slot, int First, int Last>
void add_slots(HostKernelTable& table) {
  static_assert(Last > First, "the closing __COUNTER__ reading must follow the opening one");
  [&table]<int... I>(std::integer_sequence<int, I...>) { (Slot<First + 1 + I>::add(table), ...); }
  (std::make_integer_sequence<int, Last - First - 1>{});
}

}  // namespace metrale::host_builtin

// METRALE_HOST_KERNEL("kernel", block, lanes, groups, shape, function<template args>): the
// catalog's kernel name, its KernelParams, and the instantiation that runs it.
#define METRALE_HOST_KERNEL(kernel, block, lanes, groups, shape, ...)                                             \
  template <>                                                                                                     \
  struct BuiltinKernelSlot<__COUNTER__> {                                                                         \
    static void add(::metrale::HostKernelTable& table) {                                                          \
      table.add(::metrale::make_host_kernel<&__VA_ARGS__>(std::string(kernel),                                    \
                                                          ::metrale::KernelParams{block, lanes, groups, shape})); \
    }                                                                                                             \
  };
