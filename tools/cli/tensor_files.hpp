// tensor_files.hpp: an op's tensor arguments as .npy files, for `run`, from its declaration alone:
// DIR/<arg>.npy per input (dtype from the declared DType, rank from its dims), the scalars its
// dims name filled from the shapes (or checked against what the user gave), the outputs sized
// from the same dims (a scalar left 0 takes its zero_means), uploaded and poisoned on the device.
// Invariants: every refusal names the file, the dimension and where the expected value came from
// (ArgumentError: exit 1); device buffers are freed on every path; an output is poisoned (NaN
// with a payload, or 0xAB bytes) before the launch, so an element no kernel writes shows.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "ground/npy.hpp"
#include "metrale/gpu/gpu_backend.hpp"
#include "metrale/ops/op_declaration.hpp"

namespace metrale::cli {

// UsageError naming the flag for a required scalar that no input's shape gives.
void require_unsized_scalars(const ops::OpDeclaration& op, const std::map<std::string, std::uint64_t>& given);

// The input files, by argument name; `scalars` gains the sizes their shapes give.
using TensorFiles = std::map<std::string, NpyArray>;
TensorFiles read_inputs(const ops::OpDeclaration& op, const std::filesystem::path& dir,
                        std::map<std::string, std::uint64_t>& scalars);

// The op's tensors on a device: inputs uploaded, outputs poisoned; freed with this object.
class DeviceTensors {
 public:
  DeviceTensors(GpuBackend& gpu, const ops::OpDeclaration& op, const TensorFiles& inputs,
                const std::map<std::string, std::uint64_t>& scalars);
  DeviceTensors(const DeviceTensors&) = delete;
  DeviceTensors& operator=(const DeviceTensors&) = delete;
  ~DeviceTensors();
  // Every tensor's address and every scalar in `scalars`, by declared name.
  [[nodiscard]] std::vector<ops::NamedArg> named_args(const std::map<std::string, std::uint64_t>& scalars) const;
  // OUT/<arg>.npy for each output; returns the paths written.
  [[nodiscard]] std::vector<std::filesystem::path> write_outputs(const std::filesystem::path& dir) const;

 private:
  struct Tensor {
    const ops::ArgDecl* arg = nullptr;
    DevicePtr ptr;
    std::vector<std::uint64_t> shape;
    NpyDtype dtype = NpyDtype::kUint8;
  };
  GpuBackend& gpu_;
  std::vector<Tensor> tensors_;
};

}  // namespace metrale::cli
