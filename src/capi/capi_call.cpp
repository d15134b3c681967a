// capi_call.cpp: the thread-local last error, the exception-to-status mapping, versions and
// status names.
#include "capi_call.hpp"

#include <fmt/format.h>

#include <mutex>
#include <new>
#include <set>

#include "gpu/cuda_error.hpp"
#include "metrale/error.hpp"

namespace metrale::capi {
namespace {

// The thread's last failure: its message, status and, for a driver failure, the CUDA error.
struct LastError {
  std::string message;
  metrale_status status = METRALE_OK;
  int cuda_code = 0;
  std::string cuda_name;
  CudaErrorKind kind = CudaErrorKind::kOther;
};

LastError& last_error() {
  thread_local LastError error;
  return error;
}

}  // namespace

metrale_status fail(metrale_status status, std::string_view message) {
  LastError& error = last_error();
  error.status = status;
  error.cuda_code = 0;
  error.cuda_name.clear();
  try {
    error.message.assign(message);
  } catch (...) {  // out of memory while recording the message: keep the status at least
    error.message.clear();
  }
  return status;
}

void clear_last_error() {
  LastError& error = last_error();
  error.message.clear();
  error.status = METRALE_OK;
  error.cuda_code = 0;
  error.cuda_name.clear();
}

const char* last_error_text() noexcept { return last_error().message.c_str(); }

LastErrorView last_error_view() noexcept {
  const LastError& error = last_error();
  const bool cuda = error.cuda_code != 0;
  return LastErrorView{error.status,
                       error.cuda_code,
                       error.cuda_name.c_str(),
                       error.message.c_str(),
                       cuda && error.kind == CudaErrorKind::kSticky,
                       cuda && error.kind == CudaErrorKind::kRefusal};
}

metrale_status fail_with_current_exception(std::string_view function) noexcept {
  const auto named = [&](const char* message) {
    std::string text(function);
    text += ": ";
    text += message;
    return text;
  };
  try {
    throw;
  } catch (const CapiError& e) {
    return fail(e.status(), named(e.what()));
  } catch (const CaptureError& e) {
    return fail(METRALE_ERROR_CAPTURE, named(e.what()));
  } catch (const ClosedError& e) {
    return fail(METRALE_ERROR_CLOSED, named(e.what()));
  } catch (const DriverError& e) {
    const metrale_status status = fail(METRALE_ERROR_BACKEND, named(e.what()));
    LastError& error = last_error();
    error.cuda_code = e.code();
    error.kind = e.kind();
    try {
      error.cuda_name = e.name();
    } catch (...) {
      error.cuda_name.clear();
    }
    return status;
  } catch (const ArgumentError& e) {
    return fail(METRALE_ERROR_ARGUMENT, named(e.what()));
  } catch (const ConfigError& e) {
    return fail(METRALE_ERROR_CONFIG, named(e.what()));
  } catch (const BackendError& e) {
    return fail(METRALE_ERROR_BACKEND, named(e.what()));
  } catch (const std::bad_alloc&) {
    return fail(METRALE_ERROR_INTERNAL, "out of memory");
  } catch (const std::exception& e) {
    return fail(METRALE_ERROR_INTERNAL, named(e.what()));
  } catch (...) {
    return fail(METRALE_ERROR_INTERNAL, named("an exception that is not a std::exception"));
  }
}

void require_non_null(const void* pointer, std::string_view what) {
  if (pointer == nullptr) {
    throw CapiError(METRALE_ERROR_ARGUMENT, std::string(what) + " is NULL");
  }
}

void require_index(std::size_t index, std::size_t count, std::string_view owner, std::string_view items) {
  if (index >= count) {
    throw CapiError(METRALE_ERROR_ARGUMENT, fmt::format("index {} is outside {}'s {} {}", index, owner, count, items));
  }
}

const char* intern(std::string_view text) {
  static std::mutex mutex;
  static std::set<std::string, std::less<>> strings;
  std::lock_guard lock(mutex);
  auto found = strings.find(text);
  if (found == strings.end()) {
    found = strings.emplace(text).first;
  }
  return found->c_str();
}

}  // namespace metrale::capi

extern "C" {

const char* metrale_version(void) { return METRALE_VERSION_STRING; }

uint32_t metrale_abi_version(void) { return METRALE_ABI_VERSION; }

const char* metrale_status_name(metrale_status status) {
  switch (status) {
    case METRALE_OK:
      return "ok";
    case METRALE_ERROR_ARGUMENT:
      return "argument";
    case METRALE_ERROR_CONFIG:
      return "config";
    case METRALE_ERROR_BACKEND:
      return "backend";
    case METRALE_ERROR_NO_DEVICE:
      return "no device";
    case METRALE_ERROR_VERSION:
      return "version";
    case METRALE_ERROR_INTERNAL:
      return "internal";
    case METRALE_ERROR_CLOSED:
      return "closed";
    case METRALE_ERROR_CAPTURE:
      return "capture";
  }
  return "unknown status";
}

const char* metrale_last_error(void) { return metrale::capi::last_error_text(); }

void metrale_error_info_init(metrale_error_info* info) { metrale::capi::init_struct(info); }

metrale_status metrale_last_error_info(metrale_error_info* info) {
  // Not through capi_call: reading the last error must not clear it.
  if (info == nullptr || info->struct_size < sizeof(metrale_error_info)) {
    return info == nullptr ? METRALE_ERROR_ARGUMENT : METRALE_ERROR_VERSION;
  }
  const metrale::capi::LastErrorView error = metrale::capi::last_error_view();
  info->status = error.status;
  info->cuda_code = error.cuda_code;
  info->cuda_name = error.cuda_name;
  info->sticky = error.sticky ? 1 : 0;
  info->refusal = error.refusal ? 1 : 0;
  info->message = error.message;
  return METRALE_OK;
}

}  // extern "C"
