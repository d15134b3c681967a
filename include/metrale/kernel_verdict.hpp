// metrale/kernel_verdict.hpp: one kernel's verification verdict on one device, as the runtime keeps
// it (Runtime::verdicts), explain shows it and `metrale-jit verify` prints it (ARCHITECTURE.md,
// glossary: verdict). A failed verdict's refusal is the reason the guards report for the kernel.
#pragma once

#include <string>

#include "metrale/ops/op_declaration.hpp"

namespace metrale {

struct KernelVerdict {
  std::string kernel;
  std::string params;  // KernelParams::tag()
  ops::CheckVerdict verdict = ops::CheckVerdict::kSkipped;
  std::string check;  // the checks run with their shapes, "; "-joined
  std::string worst;  // the worst element of the failing (else the last) row, or why skipped
  double ms = 0;
  bool cached = false;     // read from the verdict cache: no check ran
  bool cacheable = false;  // a result of the kernel's code (not a time limit, a fault, a skip)
  std::string refusal;     // failed: "failed its check on NVIDIA H200, driver ...: ..."; else empty
};

}  // namespace metrale
