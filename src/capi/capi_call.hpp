// capi_call.hpp (private): how every C entry point runs its C++ body: exceptions become a
// status and the calling thread's last-error message, structs are checked by their size.
// Invariants: nothing thrown escapes capi_call; a successful call clears the last error; a
// body writes its out-parameters only after everything that can throw has run.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>

#include "metrale/metrale.h"

namespace metrale::capi {

// An error the C layer raises itself, with the status it maps to.
class CapiError : public std::exception {
 public:
  CapiError(metrale_status status, std::string message) : status_(status), message_(std::move(message)) {}
  [[nodiscard]] const char* what() const noexcept override { return message_.c_str(); }
  [[nodiscard]] metrale_status status() const { return status_; }

 private:
  metrale_status status_;
  std::string message_;
};

// Records `message` as the thread's last error and returns `status`.
metrale_status fail(metrale_status status, std::string_view message);
// The thread's last error becomes "" (a successful call).
void clear_last_error();
// The thread's last error ("" after a success); valid until the thread's next C call.
const char* last_error_text() noexcept;
// The thread's last failure as metrale_error_info reports it (strings valid until its next C call).
struct LastErrorView {
  metrale_status status;
  int cuda_code;
  const char* cuda_name;
  const char* message;
  bool sticky;
  bool refusal;
};
LastErrorView last_error_view() noexcept;
// Maps the exception being handled (call inside a catch block only) to a status and message.
metrale_status fail_with_current_exception(std::string_view function) noexcept;

// Runs `body` (returning void); maps any exception to a status naming `function`.
template <typename Body>
metrale_status capi_call(std::string_view function, Body&& body) noexcept {
  try {
    std::forward<Body>(body)();
    clear_last_error();
    return METRALE_OK;
  } catch (...) {
    return fail_with_current_exception(function);
  }
}

// Throws METRALE_ERROR_ARGUMENT when `pointer` is null, naming `what`.
void require_non_null(const void* pointer, std::string_view what);

// Throws METRALE_ERROR_ARGUMENT "index I is outside <owner>'s N <items>" unless index < count.
void require_index(std::size_t index, std::size_t count, std::string_view owner, std::string_view items);

// Throws METRALE_ERROR_VERSION when a caller's struct is smaller than this version's `Struct`.
// A *_init function's body: the struct zeroed and its struct_size this library's; NULL ignored.
// Returns whether there was a struct to fill (the caller then sets its non-zero defaults).
template <typename Struct>
bool init_struct(Struct* value) {
  if (value == nullptr) {
    return false;
  }
  *value = Struct{};
  value->struct_size = sizeof(Struct);
  return true;
}

template <typename Struct>
void require_struct(const Struct* value, std::string_view what) {
  require_non_null(value, what);
  if (value->struct_size < sizeof(Struct)) {
    throw CapiError(METRALE_ERROR_VERSION, std::string(what) + ".struct_size is " + std::to_string(value->struct_size) +
                                               ", smaller than this library's " + std::to_string(sizeof(Struct)) +
                                               " (initialise it with its *_init function)");
  }
}

// As require_struct, for a struct that grew: sizes from `first_size` (its first version's) up
// are accepted, and the caller reads a later field only when has_field says the struct holds it.
template <typename Struct>
void require_struct_since(const Struct* value, std::string_view what, std::size_t first_size) {
  require_non_null(value, what);
  if (value->struct_size < first_size) {
    throw CapiError(METRALE_ERROR_VERSION, std::string(what) + ".struct_size is " + std::to_string(value->struct_size) +
                                               ", smaller than any version's (" + std::to_string(first_size) +
                                               "; initialise it with its *_init function)");
  }
}

// Whether a caller's struct of `struct_size` bytes holds the field at [offset, offset + size).
constexpr bool has_field(std::size_t struct_size, std::size_t offset, std::size_t size) {
  return struct_size >= offset + size;
}

// A stable, NUL-terminated copy of `text` that lives until the process ends (kernel names and
// guard reasons: a small, fixed set).
const char* intern(std::string_view text);

}  // namespace metrale::capi
