// metrale/target/levers.hpp: the levers that request the Hopper twins and the tensor-core BA
// kernel, with where each value came from; and the guard helper that turns a lever, a twin's
// handle and named conditions into a pick (the seeds' pattern, for the ops and for engines).
// Invariant: a lever is the target's [defaults] value unless its environment variable is
// set to a non-empty value; 0, false, off, no (any case, surrounding blanks ignored) turn it
// off and every other non-empty value turns it on.
#pragma once

#include <array>
#include <cstddef>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "metrale/environment.hpp"
#include "metrale/gpu/kernel_handle.hpp"
#include "metrale/target/hardware_target.hpp"

namespace metrale {

enum class Provenance { kBuiltIn, kFile, kEnvironment };

// "built-in", "file", "environment".
std::string_view to_string(Provenance provenance);

struct LeverValue {
  bool value = false;
  Provenance provenance = Provenance::kBuiltIn;
  // The file path, "METRALE_SSM_BA_GATES_HOPPER=off", or "built-in" for a target without
  // the key.
  std::string origin;
};

struct Levers {
  LeverValue ssm_ba_gates_hopper;
  LeverValue fp8_act_quant_hopper;
  LeverValue ssm_ba_gates_tensor_core;
};

// One lever: its [defaults] key, its environment variable and where Levers keeps it.
struct LeverSpec {
  std::string_view toml_key;
  const char* env_var;
  LeverValue Levers::*field;
};

inline constexpr std::array<LeverSpec, 3> kLeverSpecs{{
    {"ssm_ba_gates_hopper", "METRALE_SSM_BA_GATES_HOPPER", &Levers::ssm_ba_gates_hopper},
    {"fp8_act_quant_hopper", "METRALE_FP8_ACT_QUANT_HOPPER", &Levers::fp8_act_quant_hopper},
    {"ssm_ba_gates_tensor_core", "METRALE_SSM_BA_GATES_TENSOR_CORE", &Levers::ssm_ba_gates_tensor_core},
}};

// The lever spec for a [defaults] key, or nullptr.
const LeverSpec* find_lever(std::string_view toml_key);

// nullopt for empty (or blank) text: keep the file's value. Pure.
std::optional<bool> parse_lever_override(std::string_view text);

Levers resolve_levers(const HardwareTarget& target, const EnvLookup& env = process_environment());

// The reasons a guard gives before its own conditions.
inline constexpr std::string_view kGuardLeverOff = "lever off";
inline constexpr std::string_view kGuardTwinAbsent = "twin kernel absent (not shipped, failed, or still building)";

// One condition of a guard: the reason the guard gives when it does not hold.
struct GuardCondition {
  std::string_view reason;  // "M < 264: fewer than 2 CTAs per SM"
  bool holds = false;
};

// A guard's verdict: the twin, or the parent and why (a view of kGuard* or of the failing
// condition's reason, so it lives as long as the caller's text).
struct GuardPick {
  bool twin = false;
  std::string_view reason;  // empty when the twin runs
};

// The reason of the first condition that does not hold, or nullopt when all hold; a guard's
// rules as one table. Every condition is evaluated, so each must be safe to compute. Pure.
std::optional<std::string_view> first_failed(std::initializer_list<GuardCondition> conditions);

// The verdict alone: the lever, then the twin's handle, then each condition in order. Pure.
GuardPick guard_pick(KernelHandle twin, bool lever, std::initializer_list<GuardCondition> conditions);

class OnceSlots;  // ground/once_slots.hpp

// A verdict and, the first time its slot is taken, the line to log about it.
struct GuardDecision {
  GuardPick pick;
  std::optional<std::string> log_line;  // "guard NAME: the twin runs" / "... the parent runs (REASON)"
};

// The seeds' guard for one twin: pick() decides as guard_pick does and logs one line per slot the
// first time the slot is taken (the twin, lever off, twin absent, each condition by position), so
// a verdict that depends on the shape is logged once per outcome, never per call. pick() takes no
// lock. `conditions` is how many conditions every pick() passes (ArgumentError otherwise).
class KernelGuard {
 public:
  KernelGuard(std::string name, std::size_t conditions);
  KernelGuard(KernelGuard&&) noexcept;
  KernelGuard& operator=(KernelGuard&&) noexcept;
  ~KernelGuard();
  GuardPick pick(KernelHandle twin, bool lever, std::initializer_list<GuardCondition> conditions);
  // The same verdict, claiming its slot, with the line pick() would log (tests read it here).
  GuardDecision decide(KernelHandle twin, bool lever, std::initializer_list<GuardCondition> conditions);
  [[nodiscard]] const std::string& name() const { return name_; }

 private:
  std::string name_;
  std::size_t conditions_;
  std::unique_ptr<OnceSlots> logged_;  // twin, lever off, absent, then each condition
};

}  // namespace metrale
