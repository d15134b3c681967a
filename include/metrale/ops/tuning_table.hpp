// metrale/ops/tuning_table.hpp: a tuning table: where each guarded role of an op was measured to
// start beating its op's parent on one device, with where the numbers came from (README "Tuning
// tables"). `metrale-jit tune` (Runtime::tune) writes one; a runtime given one
// (RuntimeOptions::tuning_table, METRALE_TUNING_TABLE) has its guards read the measured
// thresholds in place of the profile's prediction, for the shapes the table measured.
// Invariants:
// - a row's key is (op, role, n, k): the sizes other than M the ladder ran at (n = 0 for an op
//   without one); one row per key;
// - `min_m` nullopt means the role was slower than the parent at the ladder's largest M (it may
//   have won below it; the guard then refuses it at that shape at every M); otherwise the role
//   was at least as fast as the parent at min_m and every larger M measured;
// - the file carries a digest over every other field (XXH3-128 of the canonical text): a file
//   whose content does not match its digest is refused as edited (an integrity check against
//   careless edits and truncation, not a signature);
// - reading never trusts the file: a missing or mistyped key is a ConfigError naming the file,
//   the line and the key.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace metrale::ops {

// Where a table was measured: what a runtime compares before it uses one.
struct TuningProvenance {
  std::string backend;      // "cuda" or "host"
  std::string target;       // "hopper"
  std::string device_name;  // "NVIDIA H200" / the host backend's description
  std::string device_uuid;  // "GPU-5f3c..." ("unknown" where the backend cannot say)
  std::uint32_t sm_count = 0;
  std::string driver;         // the driver's version ("unknown" on the host backend)
  std::string nvrtc;          // NVRTC's version ("none" where no NVRTC was loaded)
  std::string library;        // the library's version and commit ("0.1.0+fe11e99")
  std::string date;           // UTC, ISO 8601 ("2026-12-06T03:10:00Z")
  std::uint32_t repeats = 0;  // timed launches per point (the median is kept)
};

// One point of a row's ladder: median microseconds per call of the parent and of the role.
struct TuningTiming {
  std::uint32_t m = 0;
  double parent_us = 0;
  double role_us = 0;
};

struct TuningRow {
  std::string op;    // "ssm_ba_gates"
  std::string role;  // "twin"
  std::uint32_t n = 0;
  std::uint32_t k = 0;
  std::optional<std::uint32_t> min_m;            // measured threshold; nullopt: slower at the ladder's top
  std::optional<std::uint32_t> predicted_min_m;  // the guard's own prediction at this shape (nullopt: never)
  // The kernels measured, by their key (KernelRegistry::bundle_key(...).bundle_digest(): kernel,
  // parameters, options and sources): the role's kernel, then the parent's kernels.
  std::string role_kernel_key;
  std::vector<std::string> parent_kernel_keys;
  std::vector<TuningTiming> timings;  // ascending M
};

struct TuningTable {
  TuningProvenance provenance;
  std::vector<TuningRow> rows;

  // The row of (op, role, n, k), nullptr when none. Rows are few: a linear scan.
  [[nodiscard]] const TuningRow* find(std::string_view op, std::string_view role, std::uint32_t n,
                                      std::uint32_t k) const;
};

// The table as TOML, with its digest. Pure.
std::string write_tuning_table(const TuningTable& table);
// Parses `text` (`file` names it in errors). ConfigError naming the file, line and key for a
// malformed table, a duplicate row key, unsorted timings, or a digest that does not match
// ("... was edited after it was written: its digest ...").
TuningTable read_tuning_table(std::string_view text, std::string_view file);
// Reads a file (ConfigError when it cannot be read) and parses it.
TuningTable load_tuning_table(const std::string& path);

// The threshold rule (pure): the smallest M of the ladder from which the role was at least as
// fast as the parent at that M and at every larger M measured; nullopt when it was slower at the
// ladder's largest M (or the ladder is empty).
std::optional<std::uint32_t> measured_min_m(const std::vector<TuningTiming>& timings);

}  // namespace metrale::ops
