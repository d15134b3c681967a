// metrale/gpu/kernel_params.hpp: the template parameters a kernel variant is built with.
// Invariant: 0 means "this template does not take the parameter"; tag() is the readable
// spelling used in cache file names and tables ("b256l64g8"). `shape` is a shape constant's
// template argument (ssm_ba_gates_mma's output tiles for its N): 0 is the generic form, which
// takes any value; it is in the tag ("b256l128g6s6"), so keys, the disk cache and bundles carry it.
#pragma once

#include <compare>
#include <cstdint>
#include <string>

namespace metrale {

struct KernelParams {
  std::uint32_t block = 0;
  std::uint32_t lanes = 0;
  std::uint32_t groups = 0;
  std::uint32_t shape = 0;

  friend constexpr auto operator<=>(const KernelParams&, const KernelParams&) = default;

  // "b256l64g8"; parameters that are 0 are left out ("l16g1"); a shape constant last ("s6").
  [[nodiscard]] std::string tag() const;
};

}  // namespace metrale
