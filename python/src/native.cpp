// native.cpp: metrale._native, the nanobind extension: a thin layer over the C ABI
// (metrale/metrale.h), pointers as Python ints. The pure-Python package (metrale/) reads the op
// declarations through it, checks arrays and turns them into these calls.
// Why the C ABI and not the C++ classes: one error-mapping path (the C layer's statuses and
// messages) for C, Rust and Python alike; the extension links libmetrale.so, whose exports are
// only metrale_*, so no C++ of the library leaks into the interpreter; and it compiles in
// seconds, with no library header but metrale.h.
// Invariants:
// - it knows no op: ops, their roles and arguments come from the declarations (metrale_op_*);
// - every failed C call raises the metrale exception of its status with the library's message
//   (metrale._errors.from_status);
// - the runtime pointer is taken (and a closed runtime refused) while the GIL is held, before
//   it is released for the C call: raising needs the GIL; close() shuts the runtime down but
//   keeps the handle until the object dies, so a call racing close gets METRALE_ERROR_CLOSED;
// - the GIL is released around every C call on a runtime, so a library thread that logs (and
//   so takes the GIL in the log callback) never waits on a thread that holds the GIL and waits
//   on the library.
// Past ~400 lines: one binding per C ABI call the package makes, each a few lines over the two
// rules above (the runtime pointer, the GIL); split, the rules would be stated twice.
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
#include <utility>
#include <vector>

#include "metrale/metrale.h"
#include "native_convert.hpp"
#include "native_parts.hpp"

namespace nb = nanobind;
using metrale_python::arg_dict;
using metrale_python::check;
using metrale_python::lever_dict;
using metrale_python::pick_tuple;
using metrale_python::raise_error;
using metrale_python::role_dict;
using metrale_python::role_explanation_dict;
using metrale_python::split_list;
using metrale_python::text;
using metrale_python::text_or_none;
using metrale_python::utf8;

namespace {

// The most arguments one op call passes (the library's own limit per declaration).
constexpr std::size_t kMaxOpArgs = 64;

// Named arguments from parallel sequences of names (str) and values (non-negative int), into a
// fixed array: an op call allocates nothing here. The strings stay owned by the Python objects,
// which the caller's tuples keep alive across the call.
struct NamedArgs {
  std::array<metrale_op_arg, kMaxOpArgs> args{};
  std::size_t count = 0;

  NamedArgs(nb::handle names, nb::handle values) {
    if (!PyTuple_Check(names.ptr()) || !PyTuple_Check(values.ptr()) ||
        PyTuple_GET_SIZE(values.ptr()) != PyTuple_GET_SIZE(names.ptr())) {
      raise_error(METRALE_ERROR_ARGUMENT, "names and values: expected two tuples of the same length");
    }
    const Py_ssize_t n = PyTuple_GET_SIZE(names.ptr());
    if (static_cast<std::size_t>(n) > args.size()) {
      raise_error(METRALE_ERROR_ARGUMENT, "more than 64 arguments in one op call");
    }
    for (Py_ssize_t i = 0; i < n; ++i) {
      const char* name = utf8(PyTuple_GET_ITEM(names.ptr(), i), "an argument's name");
      const unsigned long long value = PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(values.ptr(), i));
      if (value == static_cast<unsigned long long>(-1) && PyErr_Occurred() != nullptr) {
        PyErr_Clear();
        raise_error(METRALE_ERROR_ARGUMENT, std::string(name) + ": expected an integer in [0, 2^64), got " +
                                                nb::cast<std::string>(nb::repr(PyTuple_GET_ITEM(values.ptr(), i))));
      }
      args[i] = metrale_op_arg{name, static_cast<std::uint64_t>(value)};
    }
    count = static_cast<std::size_t>(n);
  }
};

class NativeRuntime {
 public:
  NativeRuntime(int backend, int device_ordinal, std::optional<std::string> target,
                std::optional<std::string> cache_dir, const std::vector<std::pair<std::string, bool>>& levers,
                std::uint32_t host_sm_count, std::uint32_t host_worker_threads, std::optional<std::string> bundle_dirs,
                int verify, std::optional<std::string> shapes, std::optional<std::string> bundle_pubkey,
                std::optional<std::string> remote_cache, double compile_timeout_s,
                const std::vector<std::string>& op_specs, std::optional<std::string> tuning_table) {
    std::vector<metrale_lever_override> overrides;
    for (const auto& [name, value] : levers) {
      overrides.push_back(metrale_lever_override{name.c_str(), value ? 1 : 0});
    }
    metrale_runtime_options options;
    metrale_runtime_options_init(&options);
    options.backend = static_cast<metrale_backend>(backend);
    options.device_ordinal = device_ordinal;
    options.target = target ? target->c_str() : nullptr;
    options.cache_dir = cache_dir ? cache_dir->c_str() : nullptr;
    options.levers = overrides.empty() ? nullptr : overrides.data();
    options.lever_count = overrides.size();
    options.host_sm_count = host_sm_count;
    options.host_worker_threads = host_worker_threads;
    options.bundle_dirs = bundle_dirs ? bundle_dirs->c_str() : nullptr;
    options.verify = verify;  // -1: METRALE_VERIFY decides
    options.shapes = shapes ? shapes->c_str() : nullptr;
    options.bundle_pubkey = bundle_pubkey ? bundle_pubkey->c_str() : nullptr;
    options.remote_cache = remote_cache ? remote_cache->c_str() : nullptr;  // None: METRALE_REMOTE_CACHE
    options.compile_timeout_s = compile_timeout_s;                          // 0: METRALE_COMPILE_TIMEOUT_S
    std::vector<const char*> spec_texts;  // TOML or JSON texts (ops declared as data), alive past the open
    for (const std::string& text : op_specs) {
      spec_texts.push_back(text.c_str());
    }
    options.op_specs = spec_texts.empty() ? nullptr : spec_texts.data();
    options.op_spec_count = spec_texts.size();
    options.tuning_table = tuning_table ? tuning_table->c_str() : nullptr;  // None: METRALE_TUNING_TABLE
    metrale_status status = METRALE_OK;
    {
      nb::gil_scoped_release unlocked;
      status = metrale_runtime_open(&options, &runtime_);
    }
    check(status);
  }
  NativeRuntime(const NativeRuntime&) = delete;
  NativeRuntime& operator=(const NativeRuntime&) = delete;
  // Frees the handle: no thread can be inside a call then (each call holds a reference to this).
  ~NativeRuntime() {
    nb::gil_scoped_release unlocked;
    metrale_runtime_close(runtime_);
  }

  // Shuts the library's runtime down and keeps the handle until the destructor, so a thread that
  // took the pointer before the close and calls after it gets METRALE_ERROR_CLOSED, never a freed
  // handle. Waits for the calls in flight and the background builds (which may log): the GIL is
  // released. A second close waits for the first; from a log callback it returns at once.
  void close() {
    closed_ = true;
    if (runtime_ == nullptr) {
      return;
    }
    nb::gil_scoped_release unlocked;
    (void)metrale_runtime_shutdown(runtime_);
  }

  [[nodiscard]] bool closed() const { return closed_; }

  // The open runtime, or metrale.ClosedError "this Runtime is closed". Call with the GIL held.
  [[nodiscard]] metrale_runtime* get() const {
    if (closed_) {
      raise_error(METRALE_ERROR_CLOSED, "this Runtime is closed");
    }
    return runtime_;
  }

  // Runs `call(runtime)` with the GIL released, after the closed check; raises on failure.
  template <typename Call>
  void call(Call&& body) const {
    metrale_runtime* runtime = get();
    metrale_status status = METRALE_OK;
    {
      nb::gil_scoped_release unlocked;
      status = body(runtime);
    }
    check(status);
  }

  nb::dict describe() const {
    metrale_runtime_info info;
    metrale_runtime_info_init(&info);
    call([&](metrale_runtime* rt) { return metrale_runtime_describe(rt, &info); });
    nb::dict out;
    out["has_device"] = info.has_device != 0;
    out["device"] = text(info.device);
    out["no_device_reason"] = text(info.no_device_reason);
    out["target"] = text(info.target);
    out["target_source"] = text(info.target_source);
    out["arch"] = text(info.arch);
    out["sm_count"] = info.sm_count;
    out["verify"] = info.verify != 0;
    out["lever_count"] = info.lever_count;
    out["op_count"] = info.op_count;
    return out;
  }

  nb::list levers() const {
    const std::size_t count = nb::cast<std::size_t>(describe()["lever_count"]);
    nb::list out;
    for (std::size_t i = 0; i < count; ++i) {
      metrale_lever_info lever;
      metrale_lever_info_init(&lever);
      call([&](metrale_runtime* rt) { return metrale_lever_get(rt, i, &lever); });
      out.append(lever_dict(lever));
    }
    return out;
  }

  nb::dict lever(const std::string& name) const {
    metrale_lever_info lever;
    metrale_lever_info_init(&lever);
    call([&](metrale_runtime* rt) { return metrale_lever_find(rt, name.c_str(), &lever); });
    return lever_dict(lever);
  }

  // One op's declaration as data: name, aliases, summary, roles and arguments.
  nb::dict op_dict(const metrale_op_info& info) const {
    nb::dict out;
    out["name"] = text(info.name);
    out["aliases"] = split_list(info.aliases);
    out["summary"] = text(info.summary);
    nb::list roles;
    for (std::size_t i = 0; i < info.role_count; ++i) {
      metrale_role_info role;
      metrale_role_info_init(&role);
      call([&](metrale_runtime* rt) { return metrale_op_role(rt, info.name, i, &role); });
      roles.append(role_dict(role));
    }
    out["roles"] = roles;
    nb::list args;
    for (std::size_t i = 0; i < info.arg_count; ++i) {
      metrale_arg_info arg;
      metrale_arg_info_init(&arg);
      call([&](metrale_runtime* rt) { return metrale_op_arg_get(rt, info.name, i, &arg); });
      args.append(arg_dict(arg));
    }
    out["args"] = args;
    return out;
  }

  nb::list ops() const {
    const std::size_t count = nb::cast<std::size_t>(describe()["op_count"]);
    nb::list out;
    for (std::size_t i = 0; i < count; ++i) {
      metrale_op_info info;
      metrale_op_info_init(&info);
      call([&](metrale_runtime* rt) { return metrale_op_get(rt, i, &info); });
      out.append(op_dict(info));
    }
    return out;
  }

  nb::dict op(const std::string& name) const {
    metrale_op_info info;
    metrale_op_info_init(&info);
    call([&](metrale_runtime* rt) { return metrale_op_find(rt, name.c_str(), &info); });
    return op_dict(info);
  }

  // One op call by name: names and values are tuples of the same length; role None or "" lets
  // the guards pick. Returns (op, role, kernel, forced, ((role, reason or None), ...)).
  nb::tuple run(nb::handle op, nb::handle role, nb::handle names, nb::handle values, std::uint64_t stream) const {
    const char* op_name = utf8(op, "op");
    const char* role_name = role.is_none() ? nullptr : utf8(role, "role");
    const NamedArgs named(names, values);
    metrale_op_pick pick;
    metrale_op_pick_init(&pick);
    call([&](metrale_runtime* rt) {
      return metrale_op_run_role(rt, op_name, role_name, named.args.data(), named.count, stream, &pick);
    });
    return pick_tuple(pick);
  }

  // The pick for a shape (scalars by name), as data; m_given false asks each role's smallest M.
  nb::dict explain(const std::string& op, nb::handle names, nb::handle values, bool m_given) const {
    const NamedArgs named(names, values);
    metrale_op_explanation e;
    metrale_op_explanation_init(&e);
    call([&](metrale_runtime* rt) {
      return metrale_op_explain(rt, op.c_str(), named.args.data(), named.count, m_given ? 1 : 0, &e);
    });
    nb::dict out;
    out["op"] = text(e.op);
    out["kernel"] = text(e.kernel);
    out["role"] = text(e.role);
    out["sm_count"] = e.sm_count;
    nb::list roles;
    for (std::uint32_t i = 0; i < e.role_count && i < METRALE_MAX_EXPLAIN_ROLES; ++i) {
      nb::dict role = role_explanation_dict(e.roles[i]);
      role["threshold_origin"] = text(e.threshold_origins[i]);  // ABI 8: "" for a role with none
      roles.append(role);
    }
    out["roles"] = roles;
    return out;
  }

  // metrale_runtime_tuning_status: the tuning table's line ("" when none was given).
  std::string tuning_status() const { return text(metrale_runtime_tuning_status(get())); }

  // metrale_runtime_tune: times the guarded roles of `ops` (comma-separated; None: every op with
  // a tunable guard) and writes the table to out_path, whole or not at all. Empty lists and a
  // repeats of 0 take the library's defaults.
  void tune(std::optional<std::string> ops, const std::vector<std::uint32_t>& m, const std::vector<std::uint32_t>& n,
            const std::vector<std::uint32_t>& k, std::uint32_t repeats, const std::string& out_path) {
    call([&](metrale_runtime* rt) {
      return metrale_runtime_tune(rt, ops ? ops->c_str() : nullptr, m.data(), m.size(), n.data(), n.size(), k.data(),
                                  k.size(), repeats, out_path.c_str());
    });
  }

  // metrale_op_prepare: the number of kernel choices made ready.
  std::size_t prepare(const std::string& op, std::optional<std::string> role, nb::handle names,
                      nb::handle values) const {
    const NamedArgs named(names, values);
    std::size_t prepared = 0;
    call([&](metrale_runtime* rt) {
      return metrale_op_prepare(rt, op.c_str(), role ? role->c_str() : nullptr, named.args.data(), named.count,
                                &prepared);
    });
    return prepared;
  }

  void registry_add_source(const std::string& name, const std::string& source) {
    call([&](metrale_runtime* rt) { return metrale_registry_add_source(rt, name.c_str(), source.c_str()); });
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
    call([&](metrale_runtime* rt) { return metrale_registry_declare(rt, &variant, &id); });
    return id;
  }

  void registry_build() {
    call([](metrale_runtime* rt) { return metrale_registry_build(rt); });
  }

  std::tuple<bool, std::optional<std::string>, std::string> registry_compile(std::uint32_t id,
                                                                             std::optional<std::string> arch) {
    metrale_build_result result;
    metrale_build_result_init(&result);
    call(
        [&](metrale_runtime* rt) { return metrale_registry_compile(rt, id, arch ? arch->c_str() : nullptr, &result); });
    return {result.ok != 0, result.reason ? std::optional<std::string>(result.reason) : std::nullopt, text(result.log)};
  }

  std::pair<std::uint64_t, std::optional<std::string>> registry_handle(std::uint32_t id) const {
    std::uint64_t handle = 0;
    const char* reason = nullptr;
    call([&](metrale_runtime* rt) { return metrale_registry_handle(rt, id, &handle, &reason); });
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
    call(
        [&](metrale_runtime* rt) { return metrale_launch(rt, handle, &config, c_args.data(), c_args.size(), stream); });
  }

  void synchronize(std::uint64_t stream) {
    call([&](metrale_runtime* rt) { return metrale_synchronize(rt, stream); });
  }

 private:
  metrale_runtime* runtime_ = nullptr;
  bool closed_ = false;  // read and written with the GIL held
};

}  // namespace

NB_MODULE(_native, m) {
  m.doc() = "metrale-jit's C ABI (metrale/metrale.h), pointers as ints; use the metrale package instead";
  m.def("version", [] { return std::string(metrale_version()); });
  m.def("abi_version", [] { return metrale_abi_version(); });
  metrale_python::add_array_functions(m);
  metrale_python::add_log_functions(m);
  nb::class_<NativeRuntime>(m, "NativeRuntime")
      .def(nb::init<int, int, std::optional<std::string>, std::optional<std::string>,
                    const std::vector<std::pair<std::string, bool>>&, std::uint32_t, std::uint32_t,
                    std::optional<std::string>, int, std::optional<std::string>, std::optional<std::string>,
                    std::optional<std::string>, double, const std::vector<std::string>&, std::optional<std::string>>(),
           nb::arg("backend"), nb::arg("device_ordinal"), nb::arg("target").none(), nb::arg("cache_dir").none(),
           nb::arg("levers"), nb::arg("host_sm_count"), nb::arg("host_worker_threads"),
           nb::arg("bundle_dirs").none() = nb::none(), nb::arg("verify") = -1, nb::arg("shapes").none() = nb::none(),
           nb::arg("bundle_pubkey").none() = nb::none(), nb::arg("remote_cache").none() = nb::none(),
           nb::arg("compile_timeout_s") = 0.0, nb::arg("op_specs") = std::vector<std::string>{},
           nb::arg("tuning_table").none() = nb::none())
      .def("close", &NativeRuntime::close)
      .def_prop_ro("closed", &NativeRuntime::closed)
      .def("describe", &NativeRuntime::describe)
      .def("levers", &NativeRuntime::levers)
      .def("lever", &NativeRuntime::lever, nb::arg("name"))
      .def("ops", &NativeRuntime::ops)
      .def("op", &NativeRuntime::op, nb::arg("name"))
      .def("run", &NativeRuntime::run, nb::arg("op"), nb::arg("role").none(), nb::arg("names"), nb::arg("values"),
           nb::arg("stream") = 0)
      .def("explain", &NativeRuntime::explain, nb::arg("op"), nb::arg("names"), nb::arg("values"), nb::arg("m_given"))
      .def("tuning_status", &NativeRuntime::tuning_status)
      .def("tune", &NativeRuntime::tune, nb::arg("ops").none(), nb::arg("m"), nb::arg("n"), nb::arg("k"),
           nb::arg("repeats"), nb::arg("out_path"))
      .def("prepare", &NativeRuntime::prepare, nb::arg("op"), nb::arg("role").none(), nb::arg("names"),
           nb::arg("values"))
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
