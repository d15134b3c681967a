// gpu/cuda_error.hpp: a CUDA driver failure as data: the CUresult code, its name, and whether it
// left the context unusable. A sticky error (an illegal address, a failed launch, a trap: the
// context is corrupt and every later call fails until the process makes a new one) is told from a
// refusal (an invalid value, too many resources, an image for another device: the call did not
// happen and the runtime stays usable), so an engine knows whether to retry, fall back or restart.
// Invariants: the kind is a pure function of the code; the header needs no cuda.h (the C ABI and
// the bindings read it); every DriverError's message names the call, the device and the code.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "metrale/error.hpp"

namespace metrale {

enum class CudaErrorKind : std::uint8_t {
  kRefusal,  // the call was refused; the context is fine
  kSticky,   // the context is corrupt: every later call on it fails
  kOther,    // neither is known (out of memory, not initialised, ...)
};

// "refusal", "sticky", "other".
std::string_view to_string(CudaErrorKind kind);

// The kind of a CUresult. Pure.
CudaErrorKind cuda_error_kind(int code);

class DriverError : public BackendError {
 public:
  // `name`: cuGetErrorName's ("CUDA_ERROR_ILLEGAL_ADDRESS"), or "CUresult <code>".
  DriverError(const std::string& message, int code, std::string name)
      : BackendError(message), code_(code), name_(std::move(name)), kind_(cuda_error_kind(code)) {}

  [[nodiscard]] int code() const { return code_; }
  [[nodiscard]] const std::string& name() const { return name_; }
  [[nodiscard]] CudaErrorKind kind() const { return kind_; }
  [[nodiscard]] bool sticky() const { return kind_ == CudaErrorKind::kSticky; }

 private:
  int code_;
  std::string name_;
  CudaErrorKind kind_;
};

}  // namespace metrale
