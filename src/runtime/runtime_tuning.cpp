// runtime_tuning.cpp: a runtime and its tuning table (README "Tuning tables"): reading the one
// RuntimeOptions::tuning_table or METRALE_TUNING_TABLE names, accepting it for this device or
// refusing it by name, the kernel keys a row is matched on, writing one whole, and explain's word
// on where each guarded role's threshold came from.
// Invariants: a table is accepted whole or not at all (every rank given the same file makes the
// same choice, or all keep the prediction); what makes it fit is the kind of device (its name, not
// its UUID: the ranks of a node have one table), the SM count, the driver, NVRTC and each row's
// kernel keys; a refusal is one warning and tuning_status(), never an error; a file that cannot be
// read or parsed, or was edited, is a ConfigError (the caller asked for it by name).
#include "runtime/runtime_tuning.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>

#include "ground/log.hpp"
#include "jit/cache_file_io.hpp"
#include "jit/entry_key.hpp"
#include "jit/nvrtc_library.hpp"
#include "metrale/error.hpp"
#include "metrale/runtime.hpp"
#include "ops/op_verdict.hpp"

namespace metrale {

std::uint32_t tuning_sm_count(const GpuBackend& gpu, const HardwareTarget& target) {
  return ops::device_sm_count(gpu, target.sm_count.value_or(kFallbackSmCount));
}

std::string tuning_backend_kind(const GpuBackend& gpu) { return gpu.needs_compiled_image() ? "cuda" : "host"; }

std::string tuning_nvrtc_version(const GpuBackend& gpu) {
  if (!gpu.needs_compiled_image()) {
    return "none";  // the host backend compiles with the host compiler
  }
  const NvrtcLibrary& nvrtc = nvrtc_library();
  return nvrtc.available() ? nvrtc.version : "none";
}

TuningShape tuning_shape_of(const ops::OpDeclaration& op, ops::OpArgValues values) {
  const auto value_of = [&](std::string_view name) -> std::uint32_t {
    const std::optional<std::size_t> index = op.arg_index(name);
    return index && *index < values.size() ? static_cast<std::uint32_t>(values[*index]) : 0;
  };
  return TuningShape{value_of("n"), value_of("k")};
}

std::string Runtime::kernel_key(const ResolvedOp& entry, std::size_t role) const {
  if (!entry.ids[role] || !backend_) {
    return "absent";
  }
  const std::string arch = KernelRegistry::arch_for(*backend_).value_or("host");
  return registry_->bundle_key(*entry.ids[role], arch).bundle_digest();
}

std::optional<std::string> Runtime::tuning_mismatch(const ops::TuningTable& table) const {
  if (!backend_) {
    return fmt::format("this runtime has no device ({}): a table is for the device it was measured on",
                       no_device_reason_);
  }
  const ops::TuningProvenance& at = table.provenance;
  const auto differs = [](std::string_view what, const std::string& theirs, const std::string& ours) {
    return fmt::format("it was measured with {} {}, this runtime has {}", what, theirs, ours);
  };
  if (at.backend != tuning_backend_kind(*backend_)) {
    return differs("the backend", at.backend, tuning_backend_kind(*backend_));
  }
  if (at.device_name != backend_->device_name()) {
    return differs("the device", fmt::format("'{}'", at.device_name), fmt::format("'{}'", backend_->device_name()));
  }
  const std::uint32_t sm_count = tuning_sm_count(*backend_, target_);
  if (at.sm_count != sm_count) {
    return differs("SM count", std::to_string(at.sm_count), std::to_string(sm_count));
  }
  if (at.driver != backend_->driver_version()) {
    return differs("driver", at.driver, backend_->driver_version());
  }
  if (at.nvrtc != tuning_nvrtc_version(*backend_)) {
    return differs("NVRTC", at.nvrtc, tuning_nvrtc_version(*backend_));
  }
  for (std::size_t i = 0; i < table.rows.size(); ++i) {
    const ops::TuningRow& row = table.rows[i];
    const auto named = std::find_if(resolved_.begin(), resolved_.end(),
                                    [&](const ResolvedOp& candidate) { return candidate.op->name == row.op; });
    const ResolvedOp* entry = named == resolved_.end() ? nullptr : &*named;
    const std::optional<std::size_t> role = entry ? entry->op->role_index(row.role) : std::nullopt;
    const ops::GuardDecl* guard = role ? entry->op->guard(entry->op->roles[*role].role) : nullptr;
    if (guard == nullptr || guard->tuned_reason.empty()) {
      return fmt::format("row {} names {} {}, which this runtime has no tunable guard for", i + 1, row.op, row.role);
    }
    const std::string ours = kernel_key(*entry, *role);
    if (row.role_kernel_key != ours) {
      return fmt::format("row {} ({} {}) was measured with kernel key {}, this runtime's is {}", i + 1, row.op,
                         row.role, row.role_kernel_key, ours);
    }
    const std::vector<std::string> parents = parent_kernel_keys(*entry);
    if (row.parent_kernel_keys != parents) {
      return fmt::format("row {} ({} {}) was measured against parent kernel keys {}, this runtime's are {}", i + 1,
                         row.op, row.role, fmt::join(row.parent_kernel_keys, ","), fmt::join(parents, ","));
    }
  }
  return std::nullopt;
}

std::vector<std::string> Runtime::parent_kernel_keys(const ResolvedOp& entry) const {
  std::vector<std::string> keys;
  for (std::size_t r = 0; r < entry.op->roles.size(); ++r) {
    if (entry.op->roles[r].lever.empty()) {
      keys.push_back(kernel_key(entry, r));
    }
  }
  return keys;
}

void Runtime::accept_tuning_table(const RuntimeOptions& options) {
  const std::optional<std::string> named =
      options.tuning_table ? options.tuning_table : options.env("METRALE_TUNING_TABLE");
  if (!named || named->empty()) {
    return;
  }
  auto table = std::make_unique<ops::TuningTable>(ops::load_tuning_table(*named));
  if (const std::optional<std::string> mismatch = tuning_mismatch(*table)) {
    tuning_status_ = fmt::format("tuning table {} refused: {} (the guards keep their predictions)", *named, *mismatch);
    logger().warn("metrale: {}", tuning_status_);
    return;
  }
  tuning_file_ = *named;
  tuning_status_ =
      fmt::format("tuning table {}: {} row{} in use (measured on {}, {})", *named, table->rows.size(),
                  table->rows.size() == 1 ? "" : "s", table->provenance.device_name, table->provenance.date);
  tuning_ = std::move(table);
  for (ResolvedOp& entry : resolved_) {
    entry.base.tuning = tuning_.get();
  }
  logger().info("metrale: {}", tuning_status_);
}

void save_tuning_table(const ops::TuningTable& table, const std::string& path) {
  const std::filesystem::path target(path);
  const std::filesystem::path folder = target.has_parent_path() ? target.parent_path() : ".";
  const CacheIoResult written =
      write_file_atomically(folder, target.filename().string(), ops::write_tuning_table(table));
  if (!written.ok) {
    throw ConfigError(fmt::format("{}: cannot replace it: {}", path, written.message));
  }
}

void explain_thresholds(const ops::OpContext& context, ops::OpArgValues values, const ops::TuningTable* table,
                        std::string_view file, std::string_view status, ops::Explanation& out) {
  const TuningShape shape = tuning_shape_of(*context.op, values);
  for (ops::RoleExplanation& role : out.roles) {
    const ops::GuardDecl* guard = context.op->guard(role.role);
    if (guard == nullptr || guard->tuned_reason.empty()) {
      continue;
    }
    const ops::TuningRow* row = table != nullptr ? table->find(context.op->name, role.role, shape.n, shape.k) : nullptr;
    if (row == nullptr) {
      role.threshold_origin = status.empty() || table != nullptr ? "prediction" : fmt::format("prediction; {}", status);
      continue;
    }
    const auto index = static_cast<std::size_t>(row - table->rows.data()) + 1;
    role.threshold_origin = fmt::format("tuning table {}, row {} ({}, {}; predicted {})", file, index,
                                        table->provenance.device_name, table->provenance.date,
                                        row->predicted_min_m ? fmt::format("M >= {}", *row->predicted_min_m) : "never");
    if (!row->min_m) {
      role.min_m = std::nullopt;
      role.min_reason = fmt::format("the tuning table measured it slower than its parent up to M = {}",
                                    row->timings.empty() ? 0 : row->timings.back().m);
    }
  }
}

void Runtime::explain_thresholds(const ops::OpContext& context, ops::OpArgValues values, ops::Explanation& out) const {
  metrale::explain_thresholds(context, values, tuning_.get(), tuning_file_, tuning_status_, out);
}

}  // namespace metrale
