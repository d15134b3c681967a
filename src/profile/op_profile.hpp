// profile/op_profile.hpp: the library call behind `metrale-jit profile`: runs an op's
// kernels on a profiled host backend at a shape and returns, per kernel, its traffic, the
// roofline prediction on a target, the op's floor and the ratio between them.
// Invariants: each kernel runs exactly as the op launches it (its declaration's profile hook: the
// op's own launchers, grids and arguments), at the parameters the target gives it (a variant without a profiled
// built-in instantiation is compiled by the host JIT as a profiled object), on inputs from the library's seeded
// generator; large grids are sampled in whole waves (sampled_blocks < total_blocks says so); rows are in the op's
// kernel order, a kernel's shape-specialised variant (when asked for and its rule accepts the shape) right after its
// generic row.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "host/launch_traffic.hpp"
#include "jit/compile_report.hpp"
#include "metrale/gpu/kernel_params.hpp"
#include "metrale/ops/op_declaration.hpp"
#include "metrale/target/hardware_target.hpp"
#include "ops/op_profile_hook.hpp"
#include "profile/cost_model.hpp"

namespace metrale {

// The ops the profile prices are those whose declaration has a profile hook
// (OpDeclaration::profile, src/ops/op_profile_hook.hpp): the op's kernels in row order, its
// compulsory bytes, its buffers and launches at a shape. The profile names no op.
using ops::ProfileShape;

// The op's hook; ArgumentError "the profile cannot price op X (its declaration has no profile
// hook)" when it has none.
const ops::OpProfile& op_profile(const ops::OpDeclaration& op);
// The kernels the op may run, in its row order ("ssm_ba_gates", "ssm_ba_gates_hopper", ...).
std::vector<std::string_view> profiled_op_kernels(const ops::OpDeclaration& op);

// One shape constant of the op (ops::ShapeConstantDecl) at the profiled shape: the kernel of its
// role, the argument and its value, and the template argument the declaration's rule gives it
// (KernelParams::shape), or 0 and the rule's reason the value stays on the generic form
// (profile/shape_variants.hpp makes them).
struct ProfiledShapeConstant {
  std::string role;    // the declaration's role ("tensor_core")
  std::string kernel;  // its kernel ("ssm_ba_gates_mma")
  std::string arg;     // "n"
  std::uint64_t value = 0;
  std::uint32_t shape = 0;  // 0: refused
  std::string reason;       // empty when shape != 0
};

struct ProfileRequest {
  const ops::OpDeclaration* op = nullptr;  // required; it must have a profile hook
  ProfileShape shape;
  // Roles ("parent", "twin", "shared", "quant") or kernel names; empty: every kernel the target ships.
  std::vector<std::string> kernels;
  // Blocks a launch may run before it is sampled: 0 = two waves; a full run when the grid fits.
  std::uint64_t budget_blocks = 0;
  bool full_grid = false;  // never sample
  // Blocks per wave: 0 = sm_count x the kernel's blocks per SM (the size samples round up to).
  std::uint64_t wave_blocks = 0;
  // Registers and shared memory per kernel name, from the target arch's ptxas report (optional).
  std::map<std::string, KernelResources, std::less<>> resources;
  // The op's shape constants at this shape: each one the rule accepts adds a row after its
  // kernel's generic one, the same kernel at the target's parameters with `shape` set; a refused
  // one adds none (its generic row carries the reason). Empty: the generic rows alone.
  std::vector<ProfiledShapeConstant> shape_constants;
  // Registers and shared memory of those specialised variants, per kernel name (each compiles in
  // an NVRTC program of its own, so its report is not the generic's).
  std::map<std::string, KernelResources, std::less<>> shape_resources;
  // Where variants without a profiled built-in instantiation are compiled to (the host JIT);
  // nullopt: the host backend's default ("host" in the disk cache's folder).
  std::optional<std::filesystem::path> jit_cache_dir;
  unsigned worker_threads = 0;                     // 0: the host's
  std::function<void(std::string_view)> progress;  // one line per kernel, when set
  // When set, a specialised variant the backend cannot load (no profiled instantiation, and the
  // host JIT cannot build one: no compiler) is left out with one line saying so, the generic rows
  // kept; unset, that failure throws BackendError as any other kernel's does.
  std::function<void(std::string_view)> unpriced;
};

struct KernelProfile {
  std::string op;       // "ba-gates"
  std::string op_name;  // "ssm_ba_gates": the declared op (the bench's key)
  bool has_n = false;   // the op's shape has an N
  std::string kernel;   // "ssm_ba_gates_hopper"
  std::string role;     // "parent", "twin", "shared" or "quant" (the SiLU-mul parent's second launch)
  KernelParams params;  // params.shape != 0: the shape-specialised variant
  ProfileShape shape;
  // The kernel's shape constant at this shape, on its generic and its specialised row alike
  // (nullopt: the kernel has none, or none was asked for).
  std::optional<ProfiledShapeConstant> shape_constant;
  LaunchTraffic traffic;
  Prediction prediction;
  std::optional<int> registers;
  std::uint32_t blocks_per_sm = 0;
  std::optional<double> occupancy;  // nullopt without registers
  double compulsory_bytes = 0;      // the op's, whichever kernel runs it
  double floor_us = 0;
  [[nodiscard]] bool specialised() const { return params.shape != 0; }
  [[nodiscard]] double ratio_to_floor() const { return floor_us > 0 ? prediction.predicted_us / floor_us : 0.0; }
};

// Throws ArgumentError for a shape the op refuses, an unknown --kernel, or a target without
// [roofline]; ConfigError never (the target is already loaded).
std::vector<KernelProfile> profile_op(const HardwareTarget& target, const ProfileRequest& request);

// The op's compulsory DRAM bytes at a shape: every input read once, every output written once.
double compulsory_bytes(const ops::OpDeclaration& op, const ProfileShape& shape);

}  // namespace metrale
