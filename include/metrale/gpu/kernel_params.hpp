// metrale/gpu/kernel_params.hpp: the template parameters a kernel variant is built with.
// Invariant: 0 means "this template does not take the parameter"; tag() is the readable
// spelling used in cache file names and tables ("b256l64g8").
#pragma once

#include <compare>
#include <cstdint>
#include <string>

namespace metrale {

struct KernelParams {
  std::uint32_t block = 0;
  std::uint32_t lanes = 0;
  std::uint32_t groups = 0;

  friend constexpr auto operator<=>(const KernelParams&, const KernelParams&) = default;

  // "b256l64g8"; parameters that are 0 are left out ("l16g1").
  [[nodiscard]] std::string tag() const;
};

}  // namespace metrale
