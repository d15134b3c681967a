// ops/op_profile_hook.hpp (private): how `metrale-jit profile` runs an op's kernels, declared by
// the op itself (OpDeclaration::profile), so the profile (src/profile) prices any op that has one
// and names none. An op's hook says its kernels in row order with their roles, its compulsory
// DRAM bytes at a shape, and makes its buffers on a backend at a shape, then launches one kernel
// at a time exactly as the op's own call path launches it.
// Invariants: `kernels` holds every kernel the op may launch, each (name, role) once, in the order
// rows are printed; `prepare` checks the shape with the op's own argument rules (ArgumentError
// otherwise) and frees whatever it allocated, on every path; `launch` launches exactly once.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string_view>
#include <utility>
#include <vector>

#include "metrale/gpu/device_handles.hpp"
#include "metrale/gpu/gpu_backend.hpp"
#include "metrale/gpu/kernel_params.hpp"
#include "metrale/gpu/launch_config.hpp"

namespace metrale::ops {

// The sizes the profile is asked for (`--m --n --k --vheads-per-group`); an op reads the ones it has.
struct ProfileShape {
  std::uint32_t m = 0;
  std::uint32_t n = 96;  // ops whose OpProfile::has_n
  std::uint32_t k = 5120;
  std::uint32_t vheads_per_group = 0;  // 0: the op's own choice (OpProfile::resolve_shape)
};

// One kernel the op launches, by catalog name, and the role its row is labelled with.
struct ProfiledKernel {
  std::string_view name;
  std::string_view role;
};

// An op's buffers at one shape on one backend, and its launches over them.
class ProfiledLaunches {
 public:
  virtual ~ProfiledLaunches() = default;
  // The block `kernel` launches with at `params` (before the launch: the occupancy needs it).
  [[nodiscard]] virtual Dim3 block(const ProfiledKernel& kernel, const KernelParams& params) const = 0;
  // One launch of `handle` (the kernel loaded at `params`) as the op launches it.
  virtual void launch(const ProfiledKernel& kernel, KernelHandle handle, const KernelParams& params) = 0;
};

struct OpProfile {
  std::string_view label;  // "ba-gates": what rows and messages call it
  bool has_n = false;      // its shape has an N
  std::vector<ProfiledKernel> kernels;
  // The shape with the op's defaults filled in (a vheads_per_group of 0); empty: as given.
  std::function<ProfileShape(ProfileShape)> resolve_shape;
  // Every input read once, every output written once, in bytes.
  std::function<double(const ProfileShape&)> compulsory_bytes;
  std::function<std::unique_ptr<ProfiledLaunches>(GpuBackend&, const ProfileShape&)> prepare;
};

// A hook whose `prepare` makes a `Launches` (constructed from the backend and the shape); an op
// with an N or a shape to resolve sets has_n and resolve_shape on it.
template <class Launches>
std::shared_ptr<OpProfile> make_op_profile(std::string_view label, std::vector<ProfiledKernel> kernels,
                                           std::function<double(const ProfileShape&)> compulsory_bytes) {
  auto profile = std::make_shared<OpProfile>();
  profile->label = label;
  profile->kernels = std::move(kernels);
  profile->compulsory_bytes = std::move(compulsory_bytes);
  profile->prepare = [](GpuBackend& gpu, const ProfileShape& shape) -> std::unique_ptr<ProfiledLaunches> {
    return std::make_unique<Launches>(gpu, shape);
  };
  return profile;
}

// Device buffers for a profile run, each filled with a seeded pattern repeated (the kernels'
// traffic does not depend on the values, and filling gigabytes with fresh numbers would cost more
// than the profile); every buffer is freed with the object.
class ProfileBuffers {
 public:
  explicit ProfileBuffers(GpuBackend& gpu) : gpu_(gpu) {}
  ProfileBuffers(const ProfileBuffers&) = delete;
  ProfileBuffers& operator=(const ProfileBuffers&) = delete;
  ~ProfileBuffers();
  DevicePtr bf16(std::size_t count);    // random bf16 values
  DevicePtr floats(std::size_t count);  // random floats in [-1, 1)
  DevicePtr bytes(std::size_t count);   // 0xA5
  [[nodiscard]] GpuBackend& gpu() const { return gpu_; }

 private:
  DevicePtr filled(std::size_t count, const void* pattern, std::size_t pattern_count, std::size_t element_bytes);
  GpuBackend& gpu_;
  std::vector<DevicePtr> owned_;
};

// The launches of an op whose kernels all take its typed arguments `Args`: the subclass fills
// args_ from buffers_ at the shape (and checks them with the op's own rules) and launches each
// role through the op's launcher; a block is the parameters' BLOCK unless the subclass says
// otherwise.
template <typename Args>
class ArgsLaunches : public ProfiledLaunches {
 public:
  explicit ArgsLaunches(GpuBackend& gpu) : buffers_(gpu) {}
  [[nodiscard]] Dim3 block(const ProfiledKernel& /*kernel*/, const KernelParams& params) const override {
    return Dim3{params.block, 1, 1};
  }

 protected:
  ProfileBuffers buffers_;
  Args args_{};
};

}  // namespace metrale::ops
