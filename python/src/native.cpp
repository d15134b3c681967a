// native.cpp: metrale._native, the nanobind extension: a thin layer over the C ABI
// (metrale/metrale.h), pointers as Python ints. The pure-Python package (metrale/) checks
// arrays and turns them into these calls.
// Why the C ABI and not the C++ classes: one error-mapping path (the C layer's statuses and
// messages) for C, Rust and Python alike; the extension links libmetrale.so, whose exports are
// only metrale_*, so no C++ of the library leaks into the interpreter; and it compiles in
// seconds, with no library header but metrale.h.
// Invariants: every failed C call raises the metrale exception of its status with the
// library's message (metrale._errors.from_status); the GIL is released while a C call runs.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/array.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "metrale/metrale.h"

namespace nb = nanobind;

namespace {

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

nb::dict pick_dict(const metrale_pick& pick) {
  nb::dict out;
  out["kernel"] = std::string(pick.kernel);
  out["twin"] = pick.twin != 0;
  out["reason"] = text_or_none(pick.reason);
  out["tensor_core"] = pick.tensor_core != 0;
  out["tensor_core_reason"] = text_or_none(pick.tensor_core_reason);
  return out;
}

nb::dict explanation_dict(const metrale_explanation& e) {
  nb::dict out = pick_dict(e.pick);
  out["requested"] = e.requested != 0;
  out["lever_origin"] = text_or_none(e.lever_origin);
  out["sm_count"] = e.sm_count;
  out["twin_present"] = e.twin_present != 0;
  out["parent_present"] = e.parent_present != 0;
  out["twin_min_m"] = e.twin_min_reason == nullptr ? nb::cast(e.twin_min_m) : nb::none();
  out["twin_min_reason"] = text_or_none(e.twin_min_reason);
  out["tensor_core_requested"] = e.tensor_core_requested != 0;
  out["tensor_core_present"] = e.tensor_core_present != 0;
  out["tensor_core_min_m"] = e.tensor_core_min_reason == nullptr ? nb::cast(e.tensor_core_min_m) : nb::none();
  out["tensor_core_min_reason"] = text_or_none(e.tensor_core_min_reason);
  return out;
}

class NativeRuntime {
 public:
  NativeRuntime(int backend, int device_ordinal, std::optional<std::string> target,
                std::optional<std::string> cache_dir, int ssm_ba_gates_hopper, int fp8_act_quant_hopper,
                int ssm_ba_gates_tensor_core, std::uint32_t host_sm_count, std::uint32_t host_worker_threads,
                std::optional<std::string> bundle_dirs) {
    metrale_runtime_options options;
    metrale_runtime_options_init(&options);
    options.backend = static_cast<metrale_backend>(backend);
    options.device_ordinal = device_ordinal;
    options.target = target ? target->c_str() : nullptr;
    options.cache_dir = cache_dir ? cache_dir->c_str() : nullptr;
    options.ssm_ba_gates_hopper = static_cast<metrale_lever_setting>(ssm_ba_gates_hopper);
    options.fp8_act_quant_hopper = static_cast<metrale_lever_setting>(fp8_act_quant_hopper);
    options.ssm_ba_gates_tensor_core = static_cast<metrale_lever_setting>(ssm_ba_gates_tensor_core);
    options.host_sm_count = host_sm_count;
    options.host_worker_threads = host_worker_threads;
    options.bundle_dirs = bundle_dirs ? bundle_dirs->c_str() : nullptr;
    metrale_status status = METRALE_OK;
    {
      nb::gil_scoped_release unlocked;
      status = metrale_runtime_open(&options, &runtime_);
    }
    check(status);
  }
  NativeRuntime(const NativeRuntime&) = delete;
  NativeRuntime& operator=(const NativeRuntime&) = delete;
  ~NativeRuntime() { close(); }

  void close() {
    metrale_runtime_close(runtime_);
    runtime_ = nullptr;
  }

  // One op call through the C ABI with the GIL released (the launch may take a while on the host
  // backend); a failure raises, else the pick.
  template <typename Args>
  nb::dict run_op(metrale_status (*op)(metrale_runtime*, const Args*, uint64_t, metrale_pick*), const Args& args,
                  std::uint64_t stream) const {
    metrale_pick pick{};
    metrale_status status = METRALE_OK;
    {
      nb::gil_scoped_release unlocked;
      status = op(get(), &args, stream, &pick);
    }
    check(status);
    return pick_dict(pick);
  }

  [[nodiscard]] metrale_runtime* get() const {
    if (runtime_ == nullptr) {
      raise_error(METRALE_ERROR_ARGUMENT, "this Runtime is closed");
    }
    return runtime_;
  }

  nb::dict describe() const {
    metrale_runtime_info info;
    metrale_runtime_info_init(&info);
    check(metrale_runtime_describe(get(), &info));
    nb::dict out;
    out["has_device"] = info.has_device != 0;
    out["device"] = std::string(info.device);
    out["no_device_reason"] = std::string(info.no_device_reason);
    out["target"] = std::string(info.target);
    out["target_source"] = std::string(info.target_source);
    out["arch"] = std::string(info.arch);
    out["sm_count"] = info.sm_count;
    nb::dict levers;
    for (const metrale_lever_info& lever : info.levers) {
      nb::dict one;
      one["value"] = lever.value != 0;
      one["provenance"] = std::string(lever.provenance);
      one["origin"] = std::string(lever.origin);
      levers[lever.name] = one;
    }
    out["levers"] = levers;
    return out;
  }

  nb::dict ssm_ba_gates(std::uint64_t x, std::uint64_t weight, std::uint64_t a_log, std::uint64_t dt_bias,
                        std::uint64_t gate_out, std::uint32_t m, std::uint32_t n, std::uint32_t k,
                        std::uint32_t k_stride, std::uint32_t gate_stride, std::uint32_t nv,
                        std::uint32_t vheads_per_group, int kernel, std::uint64_t stream) {
    metrale_ba_gates_args args;
    metrale_ba_gates_args_init(&args);
    args.x = x, args.weight = weight, args.a_log = a_log, args.dt_bias = dt_bias, args.gate_out = gate_out;
    args.m = m, args.n = n, args.k = k, args.k_stride = k_stride, args.gate_stride = gate_stride;
    args.nv = nv, args.vheads_per_group = vheads_per_group;
    args.kernel = static_cast<metrale_kernel_choice>(kernel);
    return run_op(metrale_ssm_ba_gates, args, stream);
  }

  nb::dict fp8_act_quant(std::uint64_t x, std::uint64_t q, std::uint64_t scales, std::uint32_t m, std::uint32_t k,
                         std::uint32_t x_row_stride, bool column_major, std::uint32_t m_aligned, bool pow2_scales,
                         int kernel, std::uint64_t stream) {
    metrale_fp8_quant_args args;
    metrale_fp8_quant_args_init(&args);
    args.x = x, args.q = q, args.scales = scales, args.m = m, args.k = k, args.x_row_stride = x_row_stride;
    args.scale_layout = column_major ? METRALE_SCALES_COLUMN_MAJOR : METRALE_SCALES_ROW_MAJOR;
    args.m_aligned = m_aligned;
    args.pow2_scales = pow2_scales ? 1 : 0;
    args.kernel = static_cast<metrale_kernel_choice>(kernel);
    return run_op(metrale_fp8_act_quant, args, stream);
  }

  nb::dict explain_ssm_ba_gates(std::uint32_t m, std::uint32_t n, std::uint32_t k, std::uint32_t k_stride) const {
    metrale_explanation e;
    metrale_explanation_init(&e);
    check(metrale_explain_ssm_ba_gates(get(), m, n, k, k_stride, &e));
    return explanation_dict(e);
  }

  nb::dict explain_fp8_act_quant(std::uint32_t m, std::uint32_t k) const {
    metrale_explanation e;
    metrale_explanation_init(&e);
    check(metrale_explain_fp8_act_quant(get(), m, k, &e));
    return explanation_dict(e);
  }

  void registry_add_source(const std::string& name, const std::string& text) {
    check(metrale_registry_add_source(get(), name.c_str(), text.c_str()));
  }

  std::uint32_t registry_declare(const std::string& kernel, const std::string& source,
                                 const std::string& name_expression, std::uint32_t block, std::uint32_t lanes,
                                 std::uint32_t groups) {
    metrale_variant variant;
    metrale_variant_init(&variant);
    variant.kernel = kernel.c_str(), variant.source = source.c_str();
    variant.name_expression = name_expression.c_str();
    variant.block = block, variant.lanes = lanes, variant.groups = groups;
    std::uint32_t id = 0;
    check(metrale_registry_declare(get(), &variant, &id));
    return id;
  }

  void registry_build() {
    metrale_status status = METRALE_OK;
    {
      nb::gil_scoped_release unlocked;
      status = metrale_registry_build(get());
    }
    check(status);
  }

  std::tuple<bool, std::optional<std::string>, std::string> registry_compile(std::uint32_t id,
                                                                             std::optional<std::string> arch) {
    metrale_build_result result;
    metrale_build_result_init(&result);
    metrale_status status = METRALE_OK;
    {
      nb::gil_scoped_release unlocked;
      status = metrale_registry_compile(get(), id, arch ? arch->c_str() : nullptr, &result);
    }
    check(status);
    return {result.ok != 0, result.reason ? std::optional<std::string>(result.reason) : std::nullopt,
            std::string(result.log)};
  }

  std::pair<std::uint64_t, std::optional<std::string>> registry_handle(std::uint32_t id) const {
    std::uint64_t handle = 0;
    const char* reason = nullptr;
    check(metrale_registry_handle(get(), id, &handle, &reason));
    return {handle, reason ? std::optional<std::string>(reason) : std::nullopt};
  }

  void launch(std::uint64_t handle, std::array<std::uint32_t, 3> grid, std::array<std::uint32_t, 3> block,
              const std::vector<nb::bytes>& args, std::uint32_t shared_bytes, std::uint64_t stream) {
    metrale_launch_config config;
    metrale_launch_config_init(&config);
    for (int i = 0; i < 3; ++i) {
      config.grid[i] = grid[i];
      config.block[i] = block[i];
    }
    config.dynamic_shared_bytes = shared_bytes;
    std::vector<metrale_kernel_arg> c_args;
    for (const nb::bytes& arg : args) {
      c_args.push_back(metrale_kernel_arg{arg.c_str(), arg.size()});
    }
    metrale_status status = METRALE_OK;
    {
      nb::gil_scoped_release unlocked;
      status = metrale_launch(get(), handle, &config, c_args.data(), c_args.size(), stream);
    }
    check(status);
  }

  void synchronize(std::uint64_t stream) {
    metrale_status status = METRALE_OK;
    {
      nb::gil_scoped_release unlocked;
      status = metrale_synchronize(get(), stream);
    }
    check(status);
  }

 private:
  metrale_runtime* runtime_ = nullptr;
};

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

}  // namespace

NB_MODULE(_native, m) {
  m.doc() = "metrale-jit's C ABI (metrale/metrale.h), pointers as ints; use the metrale package instead";
  m.def("version", [] { return std::string(metrale_version()); });
  m.def("abi_version", [] { return metrale_abi_version(); });
  m.def("dlpack_describe", &dlpack_describe, nb::arg("array"));
  nb::class_<NativeRuntime>(m, "NativeRuntime")
      .def(nb::init<int, int, std::optional<std::string>, std::optional<std::string>, int, int, int, std::uint32_t,
                    std::uint32_t, std::optional<std::string>>(),
           nb::arg("backend"), nb::arg("device_ordinal"), nb::arg("target").none(), nb::arg("cache_dir").none(),
           nb::arg("ssm_ba_gates_hopper"), nb::arg("fp8_act_quant_hopper"), nb::arg("ssm_ba_gates_tensor_core"),
           nb::arg("host_sm_count"), nb::arg("host_worker_threads"), nb::arg("bundle_dirs").none() = nb::none())
      .def("close", &NativeRuntime::close)
      .def("describe", &NativeRuntime::describe)
      .def("ssm_ba_gates", &NativeRuntime::ssm_ba_gates, nb::arg("x"), nb::arg("weight"), nb::arg("a_log"),
           nb::arg("dt_bias"), nb::arg("gate_out"), nb::arg("m"), nb::arg("n"), nb::arg("k"), nb::arg("k_stride"),
           nb::arg("gate_stride"), nb::arg("nv"), nb::arg("vheads_per_group"), nb::arg("kernel") = 0,
           nb::arg("stream") = 0)
      .def("fp8_act_quant", &NativeRuntime::fp8_act_quant, nb::arg("x"), nb::arg("q"), nb::arg("scales"), nb::arg("m"),
           nb::arg("k"), nb::arg("x_row_stride"), nb::arg("column_major") = false, nb::arg("m_aligned") = 0,
           nb::arg("pow2_scales") = false, nb::arg("kernel") = 0, nb::arg("stream") = 0)
      .def("explain_ssm_ba_gates", &NativeRuntime::explain_ssm_ba_gates, nb::arg("m"), nb::arg("n"), nb::arg("k"),
           nb::arg("k_stride") = 0)
      .def("explain_fp8_act_quant", &NativeRuntime::explain_fp8_act_quant, nb::arg("m"), nb::arg("k"))
      .def("registry_add_source", &NativeRuntime::registry_add_source, nb::arg("name"), nb::arg("text"))
      .def("registry_declare", &NativeRuntime::registry_declare, nb::arg("kernel"), nb::arg("source"),
           nb::arg("name_expression"), nb::arg("block") = 0, nb::arg("lanes") = 0, nb::arg("groups") = 0)
      .def("registry_build", &NativeRuntime::registry_build)
      .def("registry_compile", &NativeRuntime::registry_compile, nb::arg("id"), nb::arg("arch").none() = nb::none())
      .def("registry_handle", &NativeRuntime::registry_handle, nb::arg("id"))
      .def("launch", &NativeRuntime::launch, nb::arg("handle"), nb::arg("grid"), nb::arg("block"), nb::arg("args"),
           nb::arg("shared_bytes") = 0, nb::arg("stream") = 0)
      .def("synchronize", &NativeRuntime::synchronize, nb::arg("stream") = 0);
}
