// native_arrays.cpp: what metrale._native tells Python about arrays without a runtime: a DLPack
// producer's description, a buffer's address, and the key a checked op call's plan is reused by.
// Invariant: each is one C call from Python and raises nothing for an object it cannot read
// (None instead: the pure-Python path then checks the call in full).
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <string>
#include <vector>

#include "native_parts.hpp"

namespace nb = nanobind;

namespace metrale_python {
namespace {

// What a DLPack producer (PyTorch, CuPy, JAX, NumPy) exports: (address, shape, strides in
// elements, (type code, bits, lanes), (device type, device id)).
nb::tuple dlpack_describe(nb::ndarray<nb::ro> array) {
  std::vector<std::int64_t> shape;
  std::vector<std::int64_t> strides;
  for (std::size_t i = 0; i < array.ndim(); ++i) {
    shape.push_back(static_cast<std::int64_t>(array.shape(i)));
    strides.push_back(array.stride(i));
  }
  const nb::dlpack::dtype dtype = array.dtype();
  return nb::make_tuple(reinterpret_cast<std::uintptr_t>(array.data()), nb::tuple(nb::cast(shape)),
                        nb::tuple(nb::cast(strides)), nb::make_tuple(dtype.code, dtype.bits, dtype.lanes),
                        nb::make_tuple(array.device_type(), array.device_id()));
}

// The address of an object's buffer (the buffer protocol: NumPy arrays), or None when it
// exports none (a dtype the protocol cannot spell, such as ml_dtypes.bfloat16): one C call
// instead of __array_interface__, which builds a dict per call.
nb::object buffer_address(nb::handle obj) {
  Py_buffer view;
  if (PyObject_GetBuffer(obj.ptr(), &view, PyBUF_STRIDES) != 0) {
    PyErr_Clear();
    return nb::none();
  }
  const auto address = reinterpret_cast<std::uintptr_t>(view.buf);
  PyBuffer_Release(&view);
  return nb::int_(address);
}

// What a checked op call's plan depends on, for keyword arguments that are all buffer-protocol
// arrays (NumPy), ints, bools or None: (key, addresses) with key the bytes of every name, array
// format, shape, strides and writability and every size, and addresses the arrays' by name; None
// for any other value (metrale/_binding.py then checks the call in full). One C call per op call.
nb::object call_key(nb::handle kwargs) {
  if (!PyDict_Check(kwargs.ptr())) {
    return nb::none();
  }
  std::string key;
  nb::dict addresses;
  PyObject* name = nullptr;
  PyObject* value = nullptr;
  Py_ssize_t position = 0;
  const auto put = [&key](const void* data, std::size_t size) { key.append(static_cast<const char*>(data), size); };
  while (PyDict_Next(kwargs.ptr(), &position, &name, &value) != 0) {
    Py_ssize_t length = 0;
    const char* text = PyUnicode_AsUTF8AndSize(name, &length);
    if (text == nullptr) {
      PyErr_Clear();
      return nb::none();
    }
    put(text, static_cast<std::size_t>(length) + 1);
    if (value == Py_None || PyBool_Check(value) != 0) {
      const char tag = value == Py_None ? 'n' : (value == Py_True ? 't' : 'f');
      put(&tag, 1);
    } else if (PyLong_CheckExact(value) != 0) {
      const long long number = PyLong_AsLongLong(value);
      if (number == -1 && PyErr_Occurred() != nullptr) {
        PyErr_Clear();
        return nb::none();
      }
      put("i", 1);
      put(&number, sizeof number);
    } else {
      // An array with a dtype (NumPy): its type, dtype number and byte order, writability, shape
      // and strides (the buffer is asked for no format string: that costs more than the rest).
      static PyObject* const kDtype = PyUnicode_InternFromString("dtype");
      static PyObject* const kNum = PyUnicode_InternFromString("num");
      static PyObject* const kIsNative = PyUnicode_InternFromString("isnative");
      nb::object dtype = nb::steal(PyObject_GetAttr(value, kDtype));
      nb::object number = dtype.is_valid() ? nb::steal(PyObject_GetAttr(dtype.ptr(), kNum)) : nb::object();
      nb::object native = dtype.is_valid() ? nb::steal(PyObject_GetAttr(dtype.ptr(), kIsNative)) : nb::object();
      Py_buffer view;
      if (!number.is_valid() || !PyLong_Check(number.ptr()) || !native.is_valid() ||
          PyObject_GetBuffer(value, &view, PyBUF_STRIDES) != 0) {
        PyErr_Clear();
        return nb::none();
      }
      // The type number tells every dtype apart, user dtypes of one size too (ml_dtypes' float8
      // kinds); byte order is not in it.
      const long type_number = PyLong_AsLong(number.ptr());
      put(&type_number, sizeof type_number);
      const char byte_order = native.ptr() == Py_True ? '=' : 'x';
      put(&byte_order, 1);
      const PyTypeObject* type = Py_TYPE(value);
      put(&type, sizeof type);
      const char readonly = view.readonly != 0 ? 'r' : 'w';
      put(&readonly, 1);
      put(&view.ndim, sizeof view.ndim);
      put(view.shape, sizeof(Py_ssize_t) * static_cast<std::size_t>(view.ndim));
      put(view.strides, sizeof(Py_ssize_t) * static_cast<std::size_t>(view.ndim));
      addresses[name] = nb::int_(reinterpret_cast<std::uintptr_t>(view.buf));
      PyBuffer_Release(&view);
    }
  }
  return nb::make_tuple(nb::bytes(key.data(), key.size()), addresses);
}

}  // namespace

void add_array_functions(nb::module_& m) {
  m.def("dlpack_describe", &dlpack_describe, nb::arg("array"));
  m.def("buffer_address", &buffer_address, nb::arg("obj"));
  m.def("call_key", &call_key, nb::arg("kwargs"));
}

}  // namespace metrale_python
