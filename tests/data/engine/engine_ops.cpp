// tests/data/engine/engine_ops.cpp: the test engine's own op as a plug-in for `metrale-jit --ops`
// (built as a shared library by tests/cmake/engine.cmake), on metrale's public headers only.
// Op "engine_mirror_scale": y[r][t] = s * x[r][127 - t] over M rows of 128 floats
// (templates/engine_mirror.cuh). Parent engine_mirror (one row per block); twin engine_mirror_twin
// (GROUPS rows per block, the same bytes), asked for by the lever engine_mirror_twin; its guard is
// the test engine's (test_engine.hpp: too few rows, ragged rows). The check runs each role forced
// against a CPU reference (parent) and the parent's bytes (twin), outputs poisoned first.
// Invariants: the plug-in exports one function, metrale_declare_ops; a shape the kernels cannot take
// is an ArgumentError naming the argument before anything launches.
#include <fmt/format.h>

#include <bit>
#include <chrono>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "data/engine/test_engine.hpp"
#include "engine_source.hpp"  // kEngineMirrorSource, generated from templates/engine_mirror.cuh
#include "metrale/error.hpp"
#include "metrale/gpu/kernel_launch.hpp"
#include "metrale/ops/op_declaration.hpp"
#include "metrale/runtime.hpp"
#include "metrale/target/levers.hpp"

namespace {

namespace ops = metrale::ops;

constexpr std::string_view kOp = "engine_mirror_scale";
constexpr std::string_view kLever = "engine_mirror_twin";
constexpr std::uint32_t kRow = 128;  // the block the shapes are written for ([m][128])

enum Arg : std::size_t { kX, kY, kM, kScale };

// The guard's table, in order: the lever, the twin's handle, then these (test_engine.hpp's reasons).
metrale::GuardPick guard(metrale::KernelGuard* logged, metrale::KernelHandle twin, bool lever, std::uint32_t m,
                         std::uint32_t groups) {
  const std::initializer_list<metrale::GuardCondition> conditions = {{test_engine::kTooFewChunks, m >= 2 * groups},
                                                                     {test_engine::kRaggedChunks, m % groups == 0}};
  return logged != nullptr ? logged->pick(twin, lever, conditions) : metrale::guard_pick(twin, lever, conditions);
}

std::uint32_t twin_groups(const ops::OpContext& context) {
  const ops::OpKernel& twin = context.kernel("twin");
  return twin.shipped ? std::max<std::uint32_t>(twin.params.groups, 1) : 1;
}

void validate(const ops::OpContext& context, ops::OpArgValues v) {
  const auto error = [](const std::string& rule) { throw metrale::ArgumentError(fmt::format("{}: {}", kOp, rule)); };
  for (const auto& [index, name] : {std::pair{kX, "x"}, std::pair{kY, "y"}}) {
    if (v[index] == 0 || v[index] % 4 != 0) {
      error(fmt::format("{} is null or not 4-byte aligned", name));
    }
  }
  if (v[kM] == 0) {
    error("m = 0: no rows");
  }
  const ops::OpKernel& parent = context.kernel("parent");
  if (parent.shipped && parent.params.block != kRow) {
    error(fmt::format("the target ships engine_mirror with block {}; the op's rows are {}", parent.params.block, kRow));
  }
}

ops::Pick run(const ops::OpContext& context, const ops::OpCall& call, metrale::KernelGuard& logged) {
  validate(context, call.args);
  const auto m = static_cast<std::uint32_t>(call.args[kM]);
  const std::uint32_t groups = twin_groups(context);
  ops::Pick pick;
  pick.op = kOp;
  pick.forced = !call.forced_role.empty();
  bool twin = false;
  if (pick.forced) {
    twin = call.forced_role == "twin";
    pick.add_verdict(call.forced_role, twin ? std::nullopt : std::optional(ops::kForcedKernelReason));
  } else {
    const metrale::GuardPick verdict = guard(&logged, context.kernel("twin").handle, context.lever(kLever), m, groups);
    twin = verdict.twin;
    pick.add_verdict("twin", twin ? std::nullopt : std::optional(verdict.reason));
  }
  if (twin && (m % groups != 0)) {
    throw metrale::ArgumentError(fmt::format("{}: m = {} is not a multiple of the twin's {} rows", kOp, m, groups));
  }
  const ops::OpKernel& kernel = context.kernel(twin ? "twin" : "parent");
  if (!kernel.handle.present()) {
    throw metrale::KernelChoiceError(
        fmt::format("target {} does not ship {} (or it failed to build)", context.target, kernel.kernel));
  }
  pick.role = kernel.role;
  pick.kernel = kernel.kernel;
  pick.handle = kernel.handle;
  metrale::KernelLaunch(context.device(), kernel.handle)
      .grid({twin ? m / groups : m, 1, 1})
      .block({kRow, 1, 1})
      .arg_ptr(metrale::DevicePtr{call.args[kX]})
      .arg_ptr(metrale::DevicePtr{call.args[kY]})
      .arg_f32(std::bit_cast<float>(static_cast<std::uint32_t>(call.args[kScale])))
      .arg_i32(static_cast<std::int32_t>(m))
      .launch(call.stream);
  return pick;
}

ops::Explanation explain(const ops::OpContext& context, const ops::ExplainQuery& query) {
  const auto m = static_cast<std::uint32_t>(query.args[kM]);
  const std::uint32_t groups = twin_groups(context);
  ops::RoleExplanation twin = ops::explain_role(context, "twin", kLever);
  const metrale::KernelHandle twin_handle = context.handle_or_shipped(context.kernel("twin"));
  ops::Explanation out;
  out.op = std::string(kOp);
  out.target = std::string(context.target);
  out.sm_count = context.sm_count();
  const metrale::GuardPick at_min = guard(nullptr, twin_handle, twin.requested, 2 * groups, groups);
  if (at_min.twin) {
    twin.min_m = 2 * groups;
  } else {
    twin.min_reason = std::string(at_min.reason);
  }
  if (query.m_given) {
    const metrale::GuardPick verdict = guard(nullptr, twin_handle, twin.requested, m, groups);
    out.m = m;
    twin.runs = verdict.twin;
    if (!verdict.twin) {
      twin.reject = std::string(verdict.reason);
    }
    out.role = verdict.twin ? "twin" : "parent";
    out.kernel = std::string(context.kernel(out.role).kernel);
  }
  out.roles = {std::move(twin)};
  return out;
}

// Seeded floats in [-4, 4], never zero (a zero would hide a wrong mirror index).
std::vector<float> random_rows(std::size_t count, std::uint64_t seed) {
  std::vector<float> out(count);
  std::uint64_t state = seed * 0x9e3779b97f4a7c15ULL + 1;
  for (float& value : out) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    value = (static_cast<float>(state >> 40) / static_cast<float>(1ULL << 24) - 0.5F) * 8.0F;
    value = value == 0.0F ? 0.25F : value;
  }
  return out;
}

std::vector<float> run_role(const ops::OpContext& context, std::string_view role, const std::vector<float>& x,
                            std::uint32_t m, float scale, double& ms) {
  metrale::GpuBackend& gpu = context.device();
  const std::size_t bytes = x.size() * sizeof(float);
  const metrale::DevicePtr in = gpu.alloc(bytes);
  const metrale::DevicePtr out = gpu.alloc(bytes);
  std::vector<float> got(x.size(), std::numeric_limits<float>::quiet_NaN());
  try {
    gpu.copy_to_device(in, x.data(), bytes);
    gpu.copy_to_device(out, got.data(), bytes);  // poisoned: an unwritten element stays NaN
    const std::uint64_t values[] = {in.address, out.address, m, std::bit_cast<std::uint32_t>(scale)};
    const auto start = std::chrono::steady_clock::now();
    ops::run_op(context, ops::OpCall{values, 0, role});
    gpu.synchronize(0);
    ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    gpu.copy_to_host(got.data(), out, bytes);
  } catch (...) {
    gpu.free(in);
    gpu.free(out);
    throw;
  }
  gpu.free(in);
  gpu.free(out);
  return got;
}

// The first element of `got` whose bytes differ from `want`'s, as the result's verdict.
void compare(ops::CheckResult& row, const std::vector<float>& got, const std::vector<float>& want,
             std::string_view against) {
  for (std::size_t i = 0; i < want.size(); ++i) {
    if (std::memcmp(&got[i], &want[i], sizeof(float)) != 0) {
      row.verdict = ops::CheckVerdict::kFailed;
      row.worst = fmt::format("y[{}][{}] = {}, {} {}", i / kRow, i % kRow, got[i], against, want[i]);
      return;
    }
  }
  row.verdict = ops::CheckVerdict::kPassed;
  row.worst = fmt::format("all {} elements equal {}'s bytes", want.size(), against);
}

std::vector<ops::CheckResult> check(const ops::OpContext& context, const ops::CheckOptions& options) {
  std::vector<ops::CheckResult> results;
  for (const std::uint32_t m :
       options.full_shapes ? std::vector<std::uint32_t>{64, 4096} : std::vector<std::uint32_t>{8, 37}) {
    const std::vector<float> x = random_rows(std::size_t{m} * kRow, options.seed + m);
    const float scale = -1.75F;
    std::vector<float> reference(x.size());
    for (std::size_t r = 0; r < m; ++r) {
      for (std::size_t t = 0; t < kRow; ++t) {
        reference[r * kRow + t] = scale * x[r * kRow + kRow - 1 - t];
      }
    }
    std::vector<float> parent;
    for (const std::string_view role : {std::string_view("parent"), std::string_view("twin")}) {
      ops::CheckResult row;
      row.role = std::string(role);
      row.kernel = std::string(context.kernel(role).kernel);
      row.shape = fmt::format("M={}", m);
      row.check = role == "twin" ? "bytes == parent" : "bytes == CPU reference";
      const bool wanted = options.role.empty() || options.role == role || (options.role == "twin" && role == "parent");
      if (!wanted) {
        continue;
      }
      if (context.gpu == nullptr || !context.kernel(role).handle.present()) {
        row.worst = context.gpu == nullptr ? "no device" : "kernel absent (not shipped or failed to build)";
      } else if (role == "twin" && m % twin_groups(context) != 0) {
        row.worst = fmt::format("M={} is not a multiple of the twin's rows per block", m);
      } else {
        const std::vector<float> got = run_role(context, role, x, m, scale, row.ms);
        compare(row, got, role == "twin" && !parent.empty() ? parent : reference,
                role == "twin" && !parent.empty() ? "the parent" : "the reference");
        if (role == "parent") {
          parent = got;
        }
      }
      if (options.role.empty() || options.role == role) {
        results.push_back(std::move(row));
      }
    }
  }
  return results;
}

ops::OpDeclaration declaration() {
  ops::OpDeclaration op;
  op.name = std::string(kOp);
  op.aliases = {"mirror"};
  op.summary = "the test engine's mirror-and-scale of 128-float rows";
  op.roles = {
      ops::RoleDecl{"parent", test_engine::kParent, {}, "one row per block", ""},
      ops::RoleDecl{
          "twin", test_engine::kTwin, {"grouped"}, "GROUPS rows per block, the same bytes", std::string(kLever)}};
  op.levers = {metrale::LeverSpec{std::string(kLever), "METRALE_ENGINE_MIRROR_TWIN", false, "the engine's twin"}};
  ops::ArgDecl scale = ops::scalar_arg("scale", std::bit_cast<std::uint32_t>(1.0F), UINT32_MAX, "s (fp32)");
  scale.dtype = ops::DType::kFp32;
  op.args = {ops::tensor_arg("x", ops::ArgKind::kInput, ops::DType::kFp32, 4, {"m", "128"}, "rows to mirror"),
             ops::tensor_arg("y", ops::ArgKind::kOutput, ops::DType::kFp32, 4, {"m", "128"}, "s x the mirrored rows"),
             ops::scalar_arg("m", std::nullopt, INT32_MAX, "rows"), std::move(scale)};
  // One guard per op: its once-per-slot log lives as long as the declaration.
  auto logged = std::make_shared<metrale::KernelGuard>(std::string(kLever), 2);
  op.run = [logged](const ops::OpContext& context, const ops::OpCall& call) { return run(context, call, *logged); };
  op.explain = explain;
  op.check = check;
  return op;
}

}  // namespace

// The plug-in's one export: the engine's source, kernels and op.
extern "C" __attribute__((visibility("default"))) void metrale_declare_ops(metrale::RuntimeOptions& options) {
  test_engine::add_kernels(options, std::string(kEngineMirrorSource));
  options.ops.push_back(declaration());
}
