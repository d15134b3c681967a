// metrale/host/host_kernel.hpp: one host-compiled kernel instantiation as the host backend runs
// it. make_host_kernel<&kernel<...>>() reads the parameter types off the function pointer, so a
// launch's arguments are checked (count, each size) against the kernel's own signature and then
// copied into parameters of exactly those types.
// Invariants: `invoke` runs the kernel body for the current fiber and is only called after
// check_kernel_args accepted the arguments; every parameter type is trivially copyable, as
// CUDA kernel parameters are.
#pragma once

#include <bit>
#include <cstddef>
#include <cstring>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "metrale/gpu/gpu_backend.hpp"
#include "metrale/gpu/kernel_params.hpp"

namespace metrale {

struct HostKernelInfo {
  std::string kernel;        // "ssm_ba_gates_hopper": the name the registry loads
  KernelParams params;       // {256, 64, 8}
  std::string display_name;  // "ssm_ba_gates_hopper<b256l64g8>": for error messages
  std::vector<std::size_t> parameter_sizes;
  void (*invoke)(const KernelArg* args) = nullptr;
};

// Throws BackendError naming the kernel when `args` differ from its parameters in count or in
// the size of any one of them.
void check_kernel_args(const HostKernelInfo& kernel, std::span<const KernelArg> args);

namespace host::detail {

template <typename Fn>
struct KernelSignature;

template <typename... Params>
struct KernelSignature<void (*)(Params...)> {
  template <auto Kernel, std::size_t... I>
  static void invoke(const KernelArg* args, std::index_sequence<I...> /*indices*/) {
    Kernel(read_arg<std::remove_cvref_t<Params>>(args[I])...);
  }

  template <typename T>
  static T read_arg(const KernelArg& arg) {
    static_assert(std::is_trivially_copyable_v<T>, "kernel parameters must be trivially copyable");
    // T is the parameter's own type, a pointer for pointer parameters: sizeof(T) is meant.
    alignas(T) unsigned char bytes[sizeof(T)];  // NOLINT(bugprone-sizeof-expression)
    std::memcpy(bytes, arg.value, sizeof(T));   // NOLINT(bugprone-sizeof-expression)
    return std::bit_cast<T>(bytes);
  }
  static std::vector<std::size_t> sizes() {
    return {sizeof(std::remove_cvref_t<Params>)...};  // NOLINT(bugprone-sizeof-expression)
  }
  static constexpr std::size_t count = sizeof...(Params);
};

template <typename... Params>
struct KernelSignature<void (*)(Params...) noexcept> : KernelSignature<void (*)(Params...)> {};

std::string default_display_name(const std::string& kernel, const KernelParams& params);

}  // namespace host::detail

// The host entry of one kernel instantiation, e.g.
//   make_host_kernel<&kernels::ba_gates_twin<256, 64, 8>>("ssm_ba_gates_hopper", {256, 64, 8});
template <auto Kernel>
HostKernelInfo make_host_kernel(std::string kernel, KernelParams params, std::string display_name = {}) {
  using Signature = host::detail::KernelSignature<decltype(Kernel)>;
  HostKernelInfo info;
  info.display_name =
      display_name.empty() ? host::detail::default_display_name(kernel, params) : std::move(display_name);
  info.kernel = std::move(kernel);
  info.params = params;
  info.parameter_sizes = Signature::sizes();
  info.invoke = [](const KernelArg* args) {
    Signature::template invoke<Kernel>(args, std::make_index_sequence<Signature::count>{});
  };
  return info;
}

}  // namespace metrale
