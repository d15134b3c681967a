// kernel_params.cpp: the readable tag of a parameter set.
#include "metrale/gpu/kernel_params.hpp"

#include <fmt/format.h>

namespace metrale {

std::string KernelParams::tag() const {
  std::string out;
  if (block != 0) {
    out += fmt::format("b{}", block);
  }
  if (lanes != 0) {
    out += fmt::format("l{}", lanes);
  }
  if (groups != 0) {
    out += fmt::format("g{}", groups);
  }
  if (shape != 0) {
    out += fmt::format("s{}", shape);
  }
  return out.empty() ? std::string("default") : out;
}

}  // namespace metrale
