// tensor_files.cpp: reading an op's inputs from .npy by declared name and shape, and its outputs
// back, sized by the declaration's dims.
#include "tensor_files.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cstring>

#include "cli_support.hpp"
#include "metrale/error.hpp"
#include "npy_tensors.hpp"
#include "op_flags.hpp"

namespace metrale::cli {
namespace {

constexpr std::uint32_t kPoisonFloatBits = 0x7fc0dead;
constexpr std::uint8_t kPoisonByte = 0xAB;

NpyDtype npy_dtype(const ops::ArgDecl& arg) {
  switch (arg.dtype) {
    case ops::DType::kBf16:
    case ops::DType::kU16:
      return NpyDtype::kUint16;
    case ops::DType::kFp32:
      return NpyDtype::kFloat32;
    case ops::DType::kE4m3:
    case ops::DType::kU8:
      return NpyDtype::kUint8;
    case ops::DType::kI32:
    case ops::DType::kU32:
      break;
  }
  throw UsageError(fmt::format("run: tensor '{}' is {}, which .npy files here cannot carry (uint8, uint16, float32)",
                               arg.name, ops::to_string(arg.dtype)));
}

// "k/128" -> {"k", 128}; "k" -> {"k", 1}.
std::pair<std::string, std::uint64_t> split_dim(const std::string& dim) {
  const auto slash = dim.find('/');
  if (slash == std::string::npos) {
    return {dim, 1};
  }
  return {dim.substr(0, slash), std::stoull(dim.substr(slash + 1))};
}

bool is_number(const std::string& dim) {
  return !dim.empty() && std::all_of(dim.begin(), dim.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// A scalar's value for sizing: given or filled, else its fallback, and a 0 its zero_means.
std::uint64_t scalar_value(const ops::OpDeclaration& op, const std::map<std::string, std::uint64_t>& scalars,
                           const std::string& name, int depth = 0);

std::uint64_t dim_value(const ops::OpDeclaration& op, const std::map<std::string, std::uint64_t>& scalars,
                        const std::string& dim, int depth) {
  if (is_number(dim)) {
    return std::stoull(dim);
  }
  const auto [name, divisor] = split_dim(dim);
  return scalar_value(op, scalars, name, depth + 1) / divisor;
}

std::uint64_t scalar_value(const ops::OpDeclaration& op, const std::map<std::string, std::uint64_t>& scalars,
                           const std::string& name, int depth) {
  const ops::ArgDecl& arg = op.args[*op.arg_index(name)];
  const auto found = scalars.find(name);
  const std::uint64_t value = found != scalars.end() ? found->second : arg.fallback.value_or(0);
  if (value == 0 && !arg.zero_means.empty() && depth < 4) {
    return dim_value(op, scalars, arg.zero_means, depth);
  }
  return value;
}

bool inputs_name(const ops::OpDeclaration& op, std::string_view scalar) {
  return std::any_of(op.args.begin(), op.args.end(), [&](const ops::ArgDecl& t) {
    return t.kind == ops::ArgKind::kInput && std::any_of(t.dims.begin(), t.dims.end(), [&](const std::string& d) {
             return split_dim(d).first == scalar;
           });
  });
}

}  // namespace

void require_unsized_scalars(const ops::OpDeclaration& op, const std::map<std::string, std::uint64_t>& given) {
  for (const ops::ArgDecl& arg : op.args) {
    if (arg.tensor() || arg.fallback || given.contains(arg.name) || inputs_name(op, arg.name)) {
      continue;
    }
    // A dense size the shapes give through a stride whose 0 means it (x_row_stride -> k).
    const bool through_stride = std::any_of(op.args.begin(), op.args.end(), [&](const ops::ArgDecl& s) {
      return s.zero_means == arg.name && inputs_name(op, s.name);
    });
    if (!through_stride) {
      throw UsageError(fmt::format("run {}: {} is required ({})", op.name, flag_of(arg.name), arg.doc));
    }
  }
}

TensorFiles read_inputs(const ops::OpDeclaration& op, const std::filesystem::path& dir,
                        std::map<std::string, std::uint64_t>& scalars) {
  std::map<std::string, std::string> source;  // where each scalar's value came from
  for (const auto& [name, value] : scalars) {
    source[name] = flag_of(name);
  }
  TensorFiles files;
  for (const ops::ArgDecl& arg : op.args) {
    if (arg.kind != ops::ArgKind::kInput) {
      continue;
    }
    if (arg.dims.empty()) {
      throw UsageError(
          fmt::format("run {}: input '{}' declares no dims, so its file cannot be checked", op.name, arg.name));
    }
    const std::string file = arg.name + ".npy";
    if (arg.optional && !std::filesystem::exists(dir / file)) {
      continue;  // an optional input left out: the op does without
    }
    NpyArray array = read_tensor(dir, file, npy_dtype(arg), arg.dims.size());
    for (std::size_t axis = 0; axis < arg.dims.size(); ++axis) {
      const std::uint64_t extent = array.shape[axis];
      const std::string& dim = arg.dims[axis];
      if (is_number(dim)) {
        require_dim(array, (dir / file).string(), axis, std::stoull(dim), "the declaration");
        continue;
      }
      const auto [name, divisor] = split_dim(dim);
      if (const auto known = scalars.find(name); known != scalars.end()) {
        require_dim(array, (dir / file).string(), axis, known->second / divisor,
                    fmt::format("{} from {}", dim, source[name]));
        continue;
      }
      scalars[name] = extent * divisor;
      source[name] = file;
    }
    files.emplace(arg.name, std::move(array));
  }
  // A required size no shape names, given by a stride that stands for it when 0 (dense rows).
  for (const ops::ArgDecl& arg : op.args) {
    if (arg.tensor() || arg.fallback || scalars.contains(arg.name)) {
      continue;
    }
    for (const ops::ArgDecl& stride : op.args) {
      if (stride.zero_means == arg.name && scalars.contains(stride.name)) {
        scalars[arg.name] = scalars[stride.name];
        break;
      }
    }
  }
  return files;
}

DeviceTensors::DeviceTensors(GpuBackend& gpu, const ops::OpDeclaration& op, const TensorFiles& inputs,
                             const std::map<std::string, std::uint64_t>& scalars)
    : gpu_(gpu) {
  try {
    for (const ops::ArgDecl& arg : op.args) {
      if (!arg.tensor()) {
        continue;
      }
      if (arg.optional && (arg.kind == ops::ArgKind::kOutput || !inputs.contains(arg.name))) {
        continue;  // left out (0): an optional output is the op's own business (its scratch)
      }
      Tensor tensor{&arg, DevicePtr{}, {}, npy_dtype(arg)};
      if (arg.kind == ops::ArgKind::kInput) {
        const NpyArray& array = inputs.at(arg.name);
        tensor.shape = array.shape;
        tensor.ptr = gpu.alloc(std::max<std::size_t>(array.data.size(), 1));
        tensors_.push_back(tensor);
        gpu.copy_to_device(tensor.ptr, array.data.data(), array.data.size());
        continue;
      }
      if (arg.dims.empty()) {
        throw UsageError(fmt::format("run {}: output '{}' declares no dims, so it cannot be sized", op.name, arg.name));
      }
      std::uint64_t count = 1;
      for (const std::string& dim : arg.dims) {
        tensor.shape.push_back(dim_value(op, scalars, dim, 0));
        count *= tensor.shape.back();
      }
      const std::size_t bytes = count * dtype_bytes(tensor.dtype);
      std::vector<std::byte> poison(bytes, std::byte{kPoisonByte});
      if (tensor.dtype == NpyDtype::kFloat32) {
        for (std::size_t i = 0; i + 4 <= bytes; i += 4) {
          std::memcpy(&poison[i], &kPoisonFloatBits, 4);
        }
      }
      tensor.ptr = gpu.alloc(std::max<std::size_t>(bytes, 1));
      tensors_.push_back(tensor);
      gpu.copy_to_device(tensor.ptr, poison.data(), bytes);
    }
  } catch (...) {
    for (const Tensor& tensor : tensors_) {
      gpu_.free(tensor.ptr);
    }
    throw;
  }
}

DeviceTensors::~DeviceTensors() {
  for (const Tensor& tensor : tensors_) {
    try {
      gpu_.free(tensor.ptr);
    } catch (const std::exception&) {  // a failing free must not mask the error being reported
    }
  }
}

std::vector<ops::NamedArg> DeviceTensors::named_args(const std::map<std::string, std::uint64_t>& scalars) const {
  std::vector<ops::NamedArg> args;
  for (const Tensor& tensor : tensors_) {
    args.push_back({tensor.arg->name, tensor.ptr.address});
  }
  for (const auto& [name, value] : scalars) {
    args.push_back({name, value});
  }
  return args;
}

std::vector<std::filesystem::path> DeviceTensors::write_outputs(const std::filesystem::path& dir) const {
  std::vector<std::filesystem::path> written;
  for (const Tensor& tensor : tensors_) {
    if (tensor.arg->kind != ops::ArgKind::kOutput) {
      continue;
    }
    std::uint64_t count = 1;
    for (const std::uint64_t extent : tensor.shape) {
      count *= extent;
    }
    NpyArray array{tensor.dtype, tensor.shape, std::vector<std::byte>(count * dtype_bytes(tensor.dtype))};
    gpu_.copy_to_host(array.data.data(), tensor.ptr, array.data.size());
    written.push_back(dir / (tensor.arg->name + ".npy"));
    write_npy(written.back(), array);
  }
  return written;
}

}  // namespace metrale::cli
