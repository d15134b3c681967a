// ops/op_check_support.hpp (private): what the ops' check hooks (OpDeclaration::check) share:
// device buffers through the context's GpuBackend (alloc/copy, freed on every path), outputs
// poisoned before a launch, one forced role run through the declaration's own call path, and the
// comparisons that fill CheckResult (bytes against a parent, values against a reference).
// Invariants: a buffer is uploaded or poisoned before any kernel sees it, so an element no kernel
// writes shows as the poison (a NaN with a payload, or 0xAB); a role whose kernel is absent is a
// skipped result naming why, never a failure; a comparison reports the worst element by index.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstring>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "metrale/ops/op_declaration.hpp"

namespace metrale::ops::check {

// Values that no kernel writes: a NaN with a recognisable payload, and 0xAB for byte outputs.
inline constexpr std::uint32_t kPoisonFloatBits = 0x7fc0dead;
inline constexpr std::uint8_t kPoisonByte = 0xAB;

// One allocation on the context's device, freed when it goes out of scope; its copies are ordered
// on `stream` (CheckOptions::stream).
class Buffer {
 public:
  Buffer(GpuBackend& gpu, std::uint64_t stream, const void* data, std::size_t bytes);
  template <typename T>
  Buffer(GpuBackend& gpu, std::uint64_t stream, const std::vector<T>& values)
      : Buffer(gpu, stream, values.data(), values.size() * sizeof(T)) {}
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer();
  [[nodiscard]] std::uint64_t address() const { return ptr_.address; }
  template <typename T>
  [[nodiscard]] std::vector<T> download() const {
    std::vector<T> values(bytes_ / sizeof(T));
    read(values.data());
    return values;
  }

 private:
  void read(void* out) const;
  GpuBackend& gpu_;
  std::uint64_t stream_;
  DevicePtr ptr_;
  std::size_t bytes_;
};

// `count` floats holding kPoisonFloatBits.
std::vector<float> poisoned_floats(std::size_t count);

// The verdict of a role that cannot run here: no device, or its kernel absent. nullopt: it can.
std::optional<std::string> why_skipped(const OpContext& context, std::string_view role);

// Runs `role` forced through run_op with the named arguments on `stream` and waits for it;
// returns the milliseconds it took (upload excluded).
double run_forced(const OpContext& context, std::string_view role, std::span<const NamedArg> args,
                  std::uint64_t stream);

// A result row for `role` at `shape`: kernel filled from the context.
CheckResult result_for(const OpContext& context, std::string_view role, std::string shape, std::string check);

// Index text of element `flat` of a row-major [rows][cols] output: "gate_out[3][17]".
std::string element(std::string_view name, std::size_t flat, std::size_t cols);

// Compares `got` with `want` byte for byte, as elements of `cols` columns; sets verdict and worst
// (the first differing element, or "all N equal").
template <typename T>
void compare_bytes(CheckResult& result, std::string_view name, std::span<const T> got, std::span<const T> want,
                   std::size_t cols, std::string_view against);

// bf16 bits within `max_ulps` bf16 steps of `want` each (ref::bf16_ulp_distance; a NaN is near
// only its own bits); counts the elements that differ at all and those past the bound; worst =
// the element farthest off (the first of them), in ulps.
void compare_bf16_ulps(CheckResult& result, std::string_view name, std::span<const std::uint16_t> got,
                       std::span<const std::uint16_t> want, std::size_t cols, std::uint32_t max_ulps,
                       std::string_view against);

// Per element |got - want| <= tolerance x |want| (NaN fails); worst = the largest relative gap.
void compare_relative(CheckResult& result, std::string_view name, std::span<const float> got,
                      std::span<const float> want, std::size_t cols, double tolerance);

// Scales read back by (token, group) into [m][groups], whatever the launch's layout: row-major
// [m][groups], or column-major [groups][m_aligned] (the padding rows m..m_aligned are not read).
std::vector<float> scales_by_token(std::span<const float> raw, std::uint32_t m, std::uint32_t groups, bool column_major,
                                   std::uint32_t m_aligned);

// An FP8 quantiser's output: codes [m][k] and scales [m][k/128] by (token, group) (the FP8 op's
// and the SiLU-and-mul op's result), and the bf16 [m][k] it quantised when a run exposes it (the
// SiLU-and-mul parent's scratch h; empty otherwise).
struct Quantised {
  std::vector<std::uint8_t> q;
  std::vector<float> scales;
  std::vector<std::uint16_t> h{};
  double ms = 0;
};

// Codes, then scales, byte for byte against `against`; a failure names the first differing
// element of the first output that differs, a pass both counts.
void compare_quantised(CheckResult& result, const Quantised& got, std::span<const std::uint8_t> want_q,
                       std::span<const float> want_scales, std::uint32_t k, std::string_view against);

// How a quantising op's parent and twin are checked at one shape (the FP8 op's and the SiLU-and-mul
// op's): which rows are wanted, why the parent cannot run (nullopt: it can), each role's run, and
// how the parent's row is judged (unset: bytes == the reference).
struct QuantisedRoles {
  std::string_view parent;
  std::string_view twin;
  bool want_parent = true;
  bool want_twin = true;
  std::optional<std::string> parent_skipped;
  std::function<Quantised()> run_parent;
  std::function<Quantised()> run_twin;
  std::string_view parent_check = "bytes == reference";
  std::function<void(CheckResult&, const Quantised&)> compare_parent;
};

// The parent's row (roles.compare_parent, else bytes == the reference), then the twin's: bytes ==
// the parent's when the parent ran, else == the reference; a role that cannot run is a skipped
// row naming why. The parent runs whenever the twin is wanted, even when its own row is not.
void check_parent_and_twin(const OpContext& context, const std::string& shape, const QuantisedRoles& roles,
                           const Quantised& reference, std::uint32_t k, std::vector<CheckResult>& out);

// sqrt(sum (got - want)^2 / sum want^2) < bound against `want` (NaN fails; a size mismatch
// fails); worst = the error and the element with the largest gap, beside `against`'s value
// (against names where want came from: "oracle" for the float64 oracle, "parent" for the parent
// kernel's output).
void compare_frobenius(CheckResult& result, std::string_view name, std::span<const float> got,
                       std::span<const double> want, std::size_t cols, double bound, std::string_view against);

}  // namespace metrale::ops::check
