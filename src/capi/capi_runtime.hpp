// capi_runtime.hpp (private): what a metrale_runtime handle holds: the C++ runtime and every
// string the describing functions hand out (the runtime's, its levers', its ops'), which live
// as long as the handle.
// Invariants: the strings are written once, at open, and never change, so describing needs no
// lock; ops[i] describes runtime->ops().ops()[i], levers[i] runtime->levers().entries()[i].
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "metrale/metrale.h"
#include "metrale/runtime.hpp"

struct metrale_runtime {
  // One lever as the C caller sees it.
  struct Lever {
    std::string name;
    bool value = false;
    std::string provenance;
    std::string origin;
    std::string env_var;
  };
  // The strings of one op that its declaration does not hold as C strings: lists joined with
  // commas (its aliases, each role's aliases, each tensor's dims) and the dtypes' names.
  struct OpText {
    std::string aliases;
    std::vector<std::string> role_aliases;  // by role index
    std::vector<std::string> arg_dims;      // by argument index
    std::vector<std::string> arg_dtypes;    // by argument index
  };

  std::unique_ptr<metrale::Runtime> runtime;
  std::string device;
  std::string no_device_reason;
  std::string target;
  std::string target_source;
  std::string arch;
  std::uint32_t sm_count = 0;
  std::string tuning_status;  // Runtime::tuning_status(): "" when no tuning table was given
  std::vector<Lever> levers;
  std::vector<OpText> ops;
};

namespace metrale::capi {

// The runtime behind a handle, held open for one C call (Runtime::CallScope): a concurrent
// metrale_runtime_shutdown waits for the call. CapiError (argument, "runtime is NULL") for a NULL
// handle; ClosedError (METRALE_ERROR_CLOSED) once it is shut down. Every entry point that takes
// a handle makes one first, so what it reaches through the handle is never freed under it.
class HeldRuntime {
 public:
  explicit HeldRuntime(const metrale_runtime* handle);

 private:
  static const Runtime& checked(const metrale_runtime* handle);
  Runtime::CallScope scope_;
};

// The runtime behind a handle; a CapiError (argument, "runtime is NULL") when the handle is NULL
// or holds no runtime.
Runtime& runtime_of(metrale_runtime* handle);
const Runtime& runtime_of(const metrale_runtime* handle);
// The backend, or a CapiError (no device) naming why there is none.
GpuBackend& device_of(metrale_runtime* handle);

// The op of that name or alias and its index in the runtime's op set; a CapiError (argument)
// for a NULL name, a KernelChoiceError (argument) naming the known ops for an unknown one.
struct FoundOp {
  const ops::OpDeclaration* op = nullptr;
  std::size_t index = 0;
};
FoundOp find_op(const metrale_runtime* handle, const char* name);

// `name` (a C string) as a view; a CapiError (argument) naming `what` when it is NULL.
std::string_view c_text(const char* name, std::string_view what);

}  // namespace metrale::capi
