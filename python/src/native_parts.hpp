// native_parts.hpp: the pieces of metrale._native that hold no runtime: array descriptions and
// call keys (native_arrays.cpp), the log handler (native_log.cpp). native.cpp adds them to the module.
#pragma once

#include <nanobind/nanobind.h>

namespace metrale_python {

// dlpack_describe, buffer_address, call_key.
void add_array_functions(nanobind::module_& m);
// set_log_handler.
void add_log_functions(nanobind::module_& m);

}  // namespace metrale_python
