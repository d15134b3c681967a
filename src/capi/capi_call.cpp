// capi_call.cpp: the thread-local last error, the exception-to-status mapping, versions and
// status names.
#include "capi_call.hpp"

#include <mutex>
#include <new>
#include <set>

#include "metrale/error.hpp"

namespace metrale::capi {
namespace {

std::string& last_error() {
  thread_local std::string message;
  return message;
}

}  // namespace

metrale_status fail(metrale_status status, std::string_view message) {
  try {
    last_error().assign(message);
  } catch (...) {  // out of memory while recording the message: keep the status at least
    last_error().clear();
  }
  return status;
}

void clear_last_error() { last_error().clear(); }

const char* last_error_text() noexcept { return last_error().c_str(); }

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
  }
  return "unknown status";
}

const char* metrale_last_error(void) { return metrale::capi::last_error_text(); }

}  // extern "C"
