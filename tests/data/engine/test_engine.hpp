// tests/data/engine/test_engine.hpp: a test engine built on metrale's public headers only. It
// declares its own kernels (templates/engine_mirror.cuh: a parent and its twin), adds its
// source to the runtime, reads the parameters the target ships (hardware/engine_test), and
// picks between parent and twin with the library's guard helper.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "metrale/gpu/kernel_launch.hpp"
#include "metrale/runtime.hpp"
#include "metrale/target/levers.hpp"

namespace test_engine {

inline constexpr const char* kSource = "engine_mirror.cuh";
inline constexpr const char* kParent = "engine_mirror";
inline constexpr const char* kTwin = "engine_mirror_twin";
inline constexpr std::string_view kTooFewChunks = "fewer chunks than two twin blocks";
inline constexpr std::string_view kRaggedChunks = "chunks not a multiple of the twin's groups";

// Adds the engine's source and declarations to `options`.
inline void add_kernels(metrale::RuntimeOptions& options, std::string template_text) {
  options.sources.emplace(kSource, std::move(template_text));
  options.kernels.push_back({kParent, kSource, "engine::mirror_scale<{block}>", {"block"}, {}, false, false, {}});
  options.kernels.push_back(
      {kTwin, kSource, "engine::mirror_scale_twin<{block}, {groups}>", {"block", "groups"}, kParent, true, true, {}});
}

// y[c * block + t] = s * x[c * block + block - 1 - t] over `chunks` chunks of the parent's block.
class MirrorScale {
 public:
  explicit MirrorScale(metrale::Runtime& runtime) : runtime_(runtime), guard_(kTwin, 2) {}

  metrale::GuardPick run(metrale::DevicePtr x, metrale::DevicePtr y, float s, std::uint32_t chunks, bool lever) {
    const metrale::KernelEntry* parent = runtime_.target().find_kernel(kParent);
    const metrale::KernelEntry* twin = runtime_.target().find_kernel(kTwin);
    const std::uint32_t groups = twin != nullptr ? twin->params.groups : 1;
    const metrale::GuardPick pick =
        guard_.pick(runtime_.kernel_handle(kTwin), lever,
                    {{kTooFewChunks, chunks >= 2 * groups}, {kRaggedChunks, chunks % groups == 0}});
    const std::uint32_t block = parent->params.block;
    const std::uint32_t grid = pick.twin ? chunks / groups : chunks;
    metrale::KernelLaunch(*runtime_.backend(), runtime_.kernel_handle(pick.twin ? kTwin : kParent))
        .grid({grid, 1, 1})
        .block({block, 1, 1})
        .arg_ptr(x)
        .arg_ptr(y)
        .arg_f32(s)
        .arg_i32(static_cast<std::int32_t>(chunks))
        .launch();
    return pick;
  }

 private:
  metrale::Runtime& runtime_;
  metrale::KernelGuard guard_;
};

}  // namespace test_engine
