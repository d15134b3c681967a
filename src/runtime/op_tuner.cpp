// op_tuner.cpp: Runtime::tune (README "Tuning tables"): times each guarded role of an op against
// its parent over a ladder of M on this runtime's device, with the kernels it loaded, launched as
// the op launches them (the op's profile hook: its buffers, grids and arguments), and returns the
// table of measured thresholds with where they were measured.
// Invariants: a role is timed only where its guard declares a tunable threshold (GuardDecl::
// tuned_reason) and both it and its parent are loaded; the parent's time is every kernel of the
// op's parent side (roles without a lever, e.g. SiLU-mul's two launches); parent and role
// alternate within each repeat so a drifting clock charges both alike; each point is the median
// of `repeats` calls, each call ended by a synchronize (wall clock: on a GPU a call's launch
// overhead is in it, as it is in an engine's eager call).
#include <fmt/chrono.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>

#include "metrale/error.hpp"
#include "metrale/runtime.hpp"
#include "ops/op_profile_hook.hpp"
#include "runtime/runtime_tuning.hpp"

#ifndef METRALE_LIBRARY_VERSION
#define METRALE_LIBRARY_VERSION "unknown"
#endif

namespace metrale {
namespace {

// One kernel of a timed side with the handle and parameters this runtime loaded it at.
struct TimedKernel {
  ops::ProfiledKernel kernel;
  KernelHandle handle;
  KernelParams params;
};

double seconds_now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double median(std::vector<double> samples) {
  std::sort(samples.begin(), samples.end());
  const std::size_t mid = samples.size() / 2;
  return samples.size() % 2 == 1 ? samples[mid] : (samples[mid - 1] + samples[mid]) / 2;
}

// Median microseconds per call of the parent's kernels and of the role's, alternating.
ops::TuningTiming time_point(GpuBackend& gpu, ops::ProfiledLaunches& launches, std::uint32_t m,
                             const std::vector<TimedKernel>& parent, const std::vector<TimedKernel>& role,
                             std::uint32_t repeats) {
  const auto call = [&](const std::vector<TimedKernel>& side) {
    const double start = seconds_now();
    for (const TimedKernel& timed : side) {
      launches.launch(timed.kernel, timed.handle, timed.params);
    }
    gpu.synchronize(0);
    return (seconds_now() - start) * 1e6;
  };
  call(parent);  // warm: first-launch work (attributes, caches) is not what a threshold is about
  call(role);
  std::vector<double> parent_us;
  std::vector<double> role_us;
  for (std::uint32_t r = 0; r < repeats; ++r) {
    parent_us.push_back(call(parent));
    role_us.push_back(call(role));
  }
  // To the nanosecond: what a timing can say, and a table a person can read.
  const auto rounded = [](double us) { return std::round(us * 1000.0) / 1000.0; };
  return ops::TuningTiming{m, rounded(median(parent_us)), rounded(median(role_us))};
}

std::string utc_now() {
  const auto now = std::chrono::time_point_cast<std::chrono::seconds>(std::chrono::system_clock::now());
  return fmt::format("{:%Y-%m-%dT%H:%M:%SZ}", now);
}

void check_request(const TuneRequest& request) {
  const auto has_zero = [](const std::vector<std::uint32_t>& values) {
    return std::find(values.begin(), values.end(), 0U) != values.end();
  };
  if (has_zero(request.m) || has_zero(request.k) || request.k.empty() || request.repeats == 0) {
    throw ArgumentError(
        fmt::format("tune: every M of the ladder and every K must be at least 1, with at least one K "
                    "and one repeat (given {} M, {} K, {} repeats)",
                    request.m.size(), request.k.size(), request.repeats));
  }
}

}  // namespace

ops::TuningTable Runtime::tune(const TuneRequest& request) {
  const CallScope scope(*this);
  check_request(request);
  if (!backend_) {
    throw BackendError(fmt::format("tune needs a device: {}", no_device_reason_));
  }
  GpuBackend& gpu = *backend_;
  std::vector<std::uint32_t> ladder(request.m.begin(), request.m.end());
  if (ladder.empty()) {
    ladder.assign(kDefaultTuneLadder.begin(), kDefaultTuneLadder.end());
  }
  std::sort(ladder.begin(), ladder.end());
  ladder.erase(std::unique(ladder.begin(), ladder.end()), ladder.end());
  const auto say = [&](const std::string& line) {
    if (request.progress) {
      request.progress(line);
    }
  };
  ops::TuningTable table;
  ops::TuningProvenance& at = table.provenance;
  at.backend = tuning_backend_kind(gpu);
  at.target = target_.name;
  at.device_name = gpu.device_name();
  at.device_uuid = gpu.device_uuid();
  at.driver = gpu.driver_version();
  at.nvrtc = tuning_nvrtc_version(gpu);
  at.library = METRALE_LIBRARY_VERSION;
  at.date = utc_now();
  at.repeats = request.repeats;
  at.sm_count = tuning_sm_count(gpu, target_);
  for (const ResolvedOp& entry : resolved_) {
    const ops::OpDeclaration& op = *entry.op;
    const bool asked = request.ops.empty() || std::any_of(request.ops.begin(), request.ops.end(),
                                                          [&](const std::string& name) { return op.answers_to(name); });
    if (!asked || !op.profile) {
      continue;
    }
    const ops::OpContext context = context_of(entry);
    // The parent side and each role's kernels, in the hook's order.
    std::vector<TimedKernel> parent;
    std::vector<std::pair<std::size_t, std::vector<TimedKernel>>> roles;
    for (const ops::ProfiledKernel& kernel : op.profile->kernels) {
      const std::size_t r = *op.role_index(kernel.role);
      const ops::OpKernel& loaded = context.kernels[r];
      const TimedKernel timed{kernel, loaded.handle, loaded.params};
      if (op.roles[r].lever.empty()) {
        parent.push_back(timed);
        continue;
      }
      const ops::GuardDecl* guard = op.guard(op.roles[r].role);
      if (guard != nullptr && !guard->tuned_reason.empty()) {
        roles.push_back({r, {timed}});
      }
    }
    const bool parent_loaded =
        std::all_of(parent.begin(), parent.end(), [](const TimedKernel& t) { return t.handle.present(); });
    for (const auto& [r, side] : roles) {
      const std::string_view role = op.roles[r].role;
      if (!parent_loaded || !side.front().handle.present()) {
        say(fmt::format("{} {}: not timed: {} is not loaded on this device", op.name, role,
                        parent_loaded ? "its kernel" : "the parent"));
        continue;
      }
      for (const std::uint32_t k : request.k) {
        for (const std::uint32_t n : op.profile->has_n ? request.n : std::vector<std::uint32_t>{0}) {
          ops::TuningRow row{.op = op.name,
                             .role = std::string(role),
                             .n = n,
                             .k = k,
                             .min_m = std::nullopt,
                             .predicted_min_m = predicted_min_m(entry, role, n, k),
                             .role_kernel_key = kernel_key(entry, r),
                             .parent_kernel_keys = parent_kernel_keys(entry),
                             .timings = {}};
          for (const std::uint32_t m : ladder) {
            ops::ProfileShape shape{.m = m, .n = n, .k = k, .vheads_per_group = 0};
            if (op.profile->resolve_shape) {
              shape = op.profile->resolve_shape(shape);
            }
            const std::unique_ptr<ops::ProfiledLaunches> launches = op.profile->prepare(gpu, shape);
            row.timings.push_back(time_point(gpu, *launches, m, parent, side, request.repeats));
          }
          row.min_m = ops::measured_min_m(row.timings);
          say(fmt::format("{} {} n={} k={}: measured {}, predicted {}", op.name, role, n, k,
                          row.min_m ? fmt::format("M >= {}", *row.min_m) : "never",
                          row.predicted_min_m ? fmt::format("M >= {}", *row.predicted_min_m) : "never"));
          table.rows.push_back(std::move(row));
        }
      }
    }
  }
  return table;
}

std::optional<std::uint32_t> Runtime::predicted_min_m(const ResolvedOp& entry, std::string_view role, std::uint32_t n,
                                                      std::uint32_t k) const {
  ops::OpContext context = context_of(entry);
  context.tuning = nullptr;  // the guard's own prediction, whatever table this runtime reads
  std::vector<ops::NamedArg> shape;
  for (const auto& [name, value] : {std::pair{"n", n}, std::pair{"k", k}}) {
    if (entry.op->arg_index(name) && value != 0) {
      shape.push_back(ops::NamedArg{name, value});
    }
  }
  std::array<std::uint64_t, ops::kMaxArgs> values{};
  const std::span<std::uint64_t> bound(values.data(), entry.op->args.size());
  ops::bind_shape(*entry.op, shape, bound);
  const ops::Explanation explained =
      ops::explain_op(context, ops::ExplainQuery{bound, false, ops::given_mask(*entry.op, shape)});
  for (const ops::RoleExplanation& row : explained.roles) {
    if (row.role == role) {
      return row.min_m;
    }
  }
  return std::nullopt;
}

}  // namespace metrale
