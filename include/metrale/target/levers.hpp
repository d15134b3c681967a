// metrale/target/levers.hpp: the levers (booleans, by [defaults] key, that request an op's fast
// kernels: twins, tensor-core kernels), as the ops declare them, with where each value came from; and the guard helper
// that turns a lever, a twin's handle and named conditions into a pick (the seeds' pattern, for the ops and for
// engines). Invariant: a lever is the target's [defaults] value unless its environment variable is set to a non-empty
// value; 0, false, off, no (any case, surrounding blanks ignored) turn it off and every other non-empty value turns it
// on.
#pragma once

#include <array>
#include <cstddef>
#include <initializer_list>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "metrale/environment.hpp"
#include "metrale/gpu/device_handles.hpp"
#include "metrale/target/hardware_target.hpp"

namespace metrale {

// Where a lever's value came from: no file key, the target's file, its environment variable,
// or the caller's RuntimeOptions::levers (the C ABI's and the bindings' lever settings).
enum class Provenance { kBuiltIn, kFile, kEnvironment, kOptions };

// "built-in", "file", "environment", "options".
std::string_view to_string(Provenance provenance);

struct LeverValue {
  bool value = false;
  Provenance provenance = Provenance::kBuiltIn;
  // The file path, "METRALE_SSM_BA_GATES_HOPPER=off", or "built-in" for a target without
  // the key.
  std::string origin;
};

// The levers of a runtime, in the order the ops declared them, each with where its value came
// from. Found by [defaults] key; a key no op declared reads as off.
class Levers {
 public:
  struct Entry {
    LeverSpec spec;
    LeverValue value;
  };
  [[nodiscard]] const LeverValue* find(std::string_view toml_key) const;
  [[nodiscard]] LeverValue* find(std::string_view toml_key);
  // The value of a declared lever; false for a key no op declared.
  [[nodiscard]] bool on(std::string_view toml_key) const;
  [[nodiscard]] const std::vector<Entry>& entries() const { return entries_; }
  [[nodiscard]] std::size_t size() const { return entries_.size(); }
  void add(LeverSpec spec, LeverValue value);

 private:
  std::vector<Entry> entries_;
};

// nullopt for empty (or blank) text: keep the file's value. Pure.
std::optional<bool> parse_lever_override(std::string_view text);

// Each spec's value: the target's [defaults] entry, else built-in off; then its environment
// variable when set to a non-empty value.
Levers resolve_levers(const HardwareTarget& target, std::span<const LeverSpec> specs,
                      const EnvLookup& env = process_environment());

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
