// native_convert.hpp: the C ABI's statuses and structs in Python's terms, for metrale._native.
// Invariants: a failed status raises the metrale exception of that status with the library's
// message (metrale._errors.from_status), never a bare RuntimeError; a C string that is NULL reads
// as "" (or None where the C ABI means "none").
#pragma once

#include <nanobind/nanobind.h>

#include <string>

#include "metrale/metrale.h"

namespace metrale_python {

// Raises metrale._errors.from_status(status, message).
[[noreturn]] void raise_error(metrale_status status, const std::string& message);
// Raises the Python exception of a failed status (a no-op for METRALE_OK).
void check(metrale_status status);
nanobind::object text_or_none(const char* text);
std::string text(const char* value);
// A comma-separated list of the C ABI ("a,b") as a Python list of its non-empty items.
nanobind::list split_list(const char* list);
// The UTF-8 of a Python str, or an ArgumentError naming `what` for anything else.
const char* utf8(nanobind::handle str, const char* what);

// (op, role, kernel, forced, ((role, reason or None), ...), shape).
nanobind::tuple pick_tuple(const metrale_op_pick& pick);
nanobind::dict role_explanation_dict(const metrale_role_explanation& r);
nanobind::dict lever_dict(const metrale_lever_info& lever);
nanobind::dict role_dict(const metrale_role_info& role);
nanobind::dict arg_dict(const metrale_arg_info& arg);

}  // namespace metrale_python
