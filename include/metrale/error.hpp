// metrale/error.hpp: the library's exception types.
// Invariant: every message names what is wrong (file, key, shape, constraint), so a
// caller can act on it without reading the source.
#pragma once

#include <stdexcept>
#include <string>

namespace metrale {

// Base of every exception the library throws on purpose.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A HARDWARE.toml file, an environment variable or another configuration input is malformed.
class ConfigError : public Error {
 public:
  using Error::Error;
};

// An op was called with arguments no kernel can take (shape, stride, null pointer).
class ArgumentError : public Error {
 public:
  using Error::Error;
};

// The caller forced a kernel (Runtime's KernelChoice) that the target did not build, or that
// the op does not have; nothing was launched.
class KernelChoiceError : public ArgumentError {
 public:
  using ArgumentError::ArgumentError;
};

// A backend (CUDA driver or host emulation) refused or failed an operation.
class BackendError : public Error {
 public:
  using Error::Error;
};

// An op call on a stream capturing into a CUDA graph found no kernel prepared for it
// (Runtime::prepare): nothing was compiled, loaded, queried or launched, so the capture is intact.
class CaptureError : public BackendError {
 public:
  using BackendError::BackendError;
};

// A call on a runtime that Runtime::close() closed (or is closing): nothing ran. Every public
// call of a closed runtime throws it, on any thread, and so do those of its OpRefs.
class ClosedError : public Error {
 public:
  using Error::Error;
};

}  // namespace metrale
