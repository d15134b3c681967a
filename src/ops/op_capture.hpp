// ops/op_capture.hpp: what an op call may run on a stream that is capturing into a CUDA graph.
// A capture records launches; anything else a first call does (compile, load, verify, ask the
// driver for occupancy, set a function attribute, allocate) would fail or invalidate it, so during
// a capture only what Runtime::prepare made ready is offered to the op's guards.
// Invariants (all pure, so tests replay them):
// - a role is offered only with the handle it had when it was prepared: a kernel arriving in the
//   background after a capture began is not picked up by that capture;
// - a shape-specialised variant is offered only at the shape it was prepared at; otherwise the
//   role falls back to its prepared generic form (which takes any shape);
// - a role whose live handle is present but was not prepared is declined with
//   kNotPreparedForCapture as its verdict, and the guards take the next offered kernel;
// - a capture with nothing offered, or a forced role not offered, is a CaptureError naming
//   `prepare`, before anything launches;
// - a launch (or occupancy answer) is offered only for a configuration prepare saw: the kernel,
//   the block's threads, the dynamic shared bytes and the cluster (the grid changes nothing the
//   driver caches, so another M with the same configuration needs no prepare).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "metrale/gpu/launch_config.hpp"
#include "metrale/ops/op_declaration.hpp"

namespace metrale::ops {

// The verdict on a role that could run but was not prepared, while capturing.
inline constexpr std::string_view kNotPreparedForCapture = "not prepared for capture: call prepare";

// The most shape-specialised variants of one role prepare keeps ready (a tile count per variant
// for the library's tensor-core kernel, at most 8, fits).
inline constexpr std::size_t kMaxPreparedShapes = 8;

// What prepare made ready for one role: its generic form's handle and the shape-specialised
// variants it launched, each with its shape (0 / absent: not prepared).
struct PreparedRole {
  KernelHandle generic;
  std::array<std::uint32_t, kMaxPreparedShapes> shapes{};
  std::array<KernelHandle, kMaxPreparedShapes> specialised{};

  // The prepared variant at `shape` (0: the generic form); absent when none.
  [[nodiscard]] KernelHandle at(std::uint32_t shape) const;
  // Keeps `handle` as the role's variant at `shape`; false when kMaxPreparedShapes other shapes
  // are already kept (nothing changed).
  bool keep(std::uint32_t shape, KernelHandle handle);
};

// What prepare made ready, by the op's role order: a snapshot.
using PreparedHandles = std::array<PreparedRole, kMaxRoles>;

// What mask_for_capture did to a context.
struct CaptureMask {
  std::array<bool, kMaxRoles> declined{};  // present now, not prepared: named kNotPreparedForCapture
  std::size_t offered = 0;                 // roles the capture may run
};

// Replaces `context`'s handles with the prepared ones and says which present kernels it declined.
// A role whose live variant is shape-specialised (params.shape != 0, Runtime's lookup) keeps it
// when prepare launched it at that shape, else takes the prepared generic form (shape reset to 0)
// or nothing. Pure.
CaptureMask mask_for_capture(OpContext& context, const PreparedHandles& prepared);

// Why a capture cannot run this call at all: nothing offered, or the forced role (already
// resolved to its role name; "" when the guards pick) not offered; nullopt when it may run. Pure.
std::optional<std::string> capture_refusal(const OpContext& context, const CaptureMask& mask,
                                           std::string_view forced_role);

// Names kNotPreparedForCapture as the reason of every verdict on a declined role (the guard saw
// its handle absent, and "absent" would mislead). Pure.
void name_capture_declines(Pick& pick, const OpContext& context, const CaptureMask& mask);

// One launch configuration prepare saw, with the occupancy answer it got (nullopt: the device
// cannot say, or it was not asked).
struct PreparedLaunch {
  KernelHandle kernel;
  std::uint64_t block_threads = 0;
  std::uint32_t dynamic_shared_bytes = 0;
  std::uint32_t cluster_blocks = 1;
  bool launched = false;                         // a launch was prepared (not only an occupancy question)
  std::optional<std::uint32_t> active_clusters;  // the answer to max_active_clusters, when asked
};

// The key of a configuration: everything but the grid and the stream.
PreparedLaunch launch_key(KernelHandle kernel, const LaunchConfig& config);

// Whether two records describe the same configuration. Pure.
bool same_configuration(const PreparedLaunch& a, const PreparedLaunch& b);

// The record of `key`'s configuration in `prepared`, or nullptr. Pure.
const PreparedLaunch* find_prepared(std::span<const PreparedLaunch> prepared, const PreparedLaunch& key);

// "ssm_ba_gates on a capturing stream: ...; call prepare(...) with this shape before the capture".
std::string capture_error_text(std::string_view op, std::string_view problem);

}  // namespace metrale::ops
