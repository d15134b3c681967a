// native_convert.cpp: the C ABI's statuses and structs in Python's terms (native_convert.hpp).
#include "native_convert.hpp"

#include <nanobind/stl/string.h>

#include <algorithm>
#include <string>

namespace nb = nanobind;

namespace metrale_python {

[[noreturn]] void raise_error(metrale_status status, const std::string& message) {
  const nb::object from_status = nb::module_::import_("metrale._errors").attr("from_status");
  const nb::object error = from_status(static_cast<int>(status), message);
  PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(error.ptr())), error.ptr());
  throw nb::python_error();
}

// Raises the Python exception of a failed status (a no-op for METRALE_OK).
void check(metrale_status status) {
  if (status != METRALE_OK) {
    raise_error(status, metrale_last_error());
  }
}

nb::object text_or_none(const char* text) { return text == nullptr ? nb::none() : nb::cast(std::string(text)); }
std::string text(const char* value) { return value == nullptr ? std::string() : std::string(value); }

// A comma-separated list of the C ABI ("a,b") as a Python list of its non-empty items.
nb::list split_list(const char* list) {
  nb::list out;
  const std::string all = text(list);
  std::size_t begin = 0;
  while (begin <= all.size()) {
    const std::size_t end = std::min(all.find(',', begin), all.size());
    if (end > begin) {
      out.append(all.substr(begin, end - begin));
    }
    begin = end + 1;
  }
  return out;
}

const char* utf8(nb::handle str, const char* what) {
  if (!PyUnicode_Check(str.ptr())) {
    raise_error(METRALE_ERROR_ARGUMENT, std::string(what) + ": expected a str");
  }
  const char* out = PyUnicode_AsUTF8(str.ptr());
  if (out == nullptr) {
    throw nb::python_error();
  }
  return out;
}

nb::tuple pick_tuple(const metrale_op_pick& pick) {
  nb::list verdicts;
  for (std::uint32_t i = 0; i < pick.verdict_count && i < METRALE_MAX_VERDICTS; ++i) {
    verdicts.append(nb::make_tuple(text(pick.verdicts[i].role), text_or_none(pick.verdicts[i].reason)));
  }
  return nb::make_tuple(text(pick.op), text(pick.role), text(pick.kernel), pick.forced != 0, nb::tuple(verdicts),
                        pick.shape);
}

nb::dict role_explanation_dict(const metrale_role_explanation& r) {
  nb::dict out;
  out["role"] = text(r.role);
  out["kernel"] = text(r.kernel);
  out["present"] = r.present != 0;
  out["runs"] = r.runs != 0;
  out["reject"] = text_or_none(r.reject);
  out["lever"] = text(r.lever);
  out["requested"] = r.requested != 0;
  out["lever_origin"] = text(r.lever_origin);
  out["min_m"] = r.has_min_m != 0 ? nb::cast(r.min_m) : nb::none();
  out["min_reason"] = text_or_none(r.min_reason);
  nb::dict details;
  for (std::uint32_t i = 0; i < r.detail_count && i < METRALE_MAX_EXPLAIN_DETAILS; ++i) {
    details[r.details[i].name] = r.details[i].value;
  }
  out["details"] = details;
  return out;
}

nb::dict lever_dict(const metrale_lever_info& lever) {
  nb::dict one;
  one["name"] = text(lever.name);
  one["value"] = lever.value != 0;
  one["provenance"] = text(lever.provenance);
  one["origin"] = text(lever.origin);
  one["env_var"] = text(lever.env_var);
  return one;
}

nb::dict role_dict(const metrale_role_info& role) {
  nb::dict one;
  one["role"] = text(role.role);
  one["kernel"] = text(role.kernel);
  one["aliases"] = split_list(role.aliases);
  one["lever"] = text(role.lever);
  one["shipped"] = role.shipped != 0;
  one["present"] = role.present != 0;
  return one;
}

nb::dict arg_dict(const metrale_arg_info& arg) {
  nb::dict one;
  one["name"] = text(arg.name);
  one["kind"] = arg.kind == METRALE_ARG_INPUT ? "input" : (arg.kind == METRALE_ARG_OUTPUT ? "output" : "scalar");
  one["dtype"] = text(arg.dtype);
  one["alignment"] = arg.alignment;
  one["dims"] = split_list(arg.dims);
  one["min"] = arg.min;
  one["max"] = arg.max;
  one["required"] = arg.required != 0;
  one["fallback"] = arg.fallback;
  one["doc"] = text(arg.doc);
  one["zero_means"] = text(arg.zero_means);
  one["in_place_of"] = text(arg.in_place_of);
  one["multiple_of"] = arg.multiple_of;
  one["layout_by"] = text(arg.layout_by);
  one["column_stride"] = text(arg.column_stride);
  return one;
}

}  // namespace metrale_python
