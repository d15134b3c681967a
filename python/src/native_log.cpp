// native_log.cpp: the library's log lines into a Python callable (metrale's logging handler).
// Invariants: the handler is a strong reference owned here, released when replaced; the library's
// callback is changed with the GIL released (a thread logging meanwhile waits on the GIL).
#include <nanobind/nanobind.h>

#include <cstdint>

#include "metrale/metrale.h"
#include "native_parts.hpp"

namespace nb = nanobind;

namespace metrale_python {
namespace {

// The Python callable (level, line) the library's log lines go to; owned here (a strong
// reference), released when replaced.
PyObject* g_log_handler = nullptr;

// Called on whichever thread logs (background builds included): takes the GIL, hands the line
// over, and never lets a Python exception escape into the library.
void log_trampoline(void* /*user*/, int32_t level, const char* line) {
  if (Py_IsInitialized() == 0) {
    return;
  }
  const nb::gil_scoped_acquire locked;
  PyObject* handler = g_log_handler;
  if (handler == nullptr) {
    return;
  }
  PyObject* result = PyObject_CallFunction(handler, "is", static_cast<int>(level), line == nullptr ? "" : line);
  if (result == nullptr) {
    PyErr_WriteUnraisable(handler);
  } else {
    Py_DECREF(result);
  }
}

// Sends the library's log lines to `handler(level, line)`; None gives them back to stderr.
void set_log_handler(nb::handle handler) {
  PyObject* previous = g_log_handler;
  if (handler.is_none()) {
    {
      nb::gil_scoped_release unlocked;
      metrale_set_log_callback(nullptr, nullptr);
    }
    g_log_handler = nullptr;
  } else {
    Py_INCREF(handler.ptr());
    g_log_handler = handler.ptr();
    nb::gil_scoped_release unlocked;
    metrale_set_log_callback(&log_trampoline, nullptr);
  }
  Py_XDECREF(previous);
}

}  // namespace

void add_log_functions(nb::module_& m) { m.def("set_log_handler", &set_log_handler, nb::arg("handler").none()); }

}  // namespace metrale_python
