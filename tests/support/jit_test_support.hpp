// tests/support/jit_test_support.hpp: shared pieces of the JIT tests: the test template set, a scoped
// environment variable, a recording fake backend and an in-memory entry store.
#pragma once

#include <cstdlib>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "jit/disk_entry_store.hpp"
#include "jit/entry_store.hpp"
#include "metrale/error.hpp"
#include "metrale/gpu/gpu_backend.hpp"
#include "metrale/jit/source_set.hpp"
#include "support/scoped_env.hpp"

namespace jit_test_support {

using metrale::test::ScopedEnv;

inline std::string data_dir() { return std::string(METRALE_SOURCE_DIR) + "/tests/data/jit"; }

inline metrale::SourceSet test_sources() {
  metrale::SourceSet sources;
  sources.add_directory(data_dir());
  return sources;
}

// Records every load; hands out increasing handles. `image` selects GPU-like or host-like.
class FakeBackend final : public metrale::GpuBackend {
 public:
  FakeBackend(bool needs_image, metrale::ComputeCapability capability, std::string key)
      : needs_image_(needs_image), capability_(capability), key_(std::move(key)) {}

  struct Load {
    std::string kernel;
    metrale::KernelParams params;
    std::string lowered_name;
    std::size_t image_bytes = 0;
    metrale::ImageKind kind = metrale::ImageKind::kCubin;
  };

  std::string describe() const override { return "fake " + key_; }
  std::string device_key() const override { return key_; }
  bool needs_compiled_image() const override { return needs_image_; }
  std::optional<std::uint32_t> sm_count() const override { return 132; }
  std::optional<metrale::ComputeCapability> compute_capability() const override { return capability_; }

  metrale::KernelHandle load(const metrale::LoadRequest& request) override {
    std::lock_guard lock(mutex_);
    if (refuse_kernel == request.kernel && (!refuse_params || *refuse_params == request.params)) {
      throw metrale::BackendError("fake refusal of " + refuse_kernel);
    }
    loads.push_back(Load{std::string(request.kernel), request.params, std::string(request.lowered_name),
                         request.image.size(), request.image_kind});
    return metrale::KernelHandle{1000 + loads.size()};
  }
  void launch(metrale::KernelHandle, const metrale::LaunchConfig&, std::span<const metrale::KernelArg>) override {}
  metrale::DevicePtr alloc(std::size_t) override { return {}; }
  void free(metrale::DevicePtr) override {}
  void copy_to_device(metrale::DevicePtr, const void*, std::size_t) override {}
  void copy_to_host(void*, metrale::DevicePtr, std::size_t) override {}
  void synchronize(std::uint64_t) override {}

  std::vector<Load> loads_copy() const {
    std::lock_guard lock(mutex_);
    return loads;
  }

  // load() throws for this kernel: every variant of it, or only the one with refuse_params.
  std::string refuse_kernel;
  std::optional<metrale::KernelParams> refuse_params;

 private:
  bool needs_image_;
  metrale::ComputeCapability capability_;
  std::string key_;
  mutable std::mutex mutex_;
  std::vector<Load> loads;
};

// An entry store over a map, standing in for the disk cache; counts loads and stores.
struct MapStore {
  std::mutex mutex;
  std::map<std::string, metrale::EntrySections> entries;
  int loads = 0;
  int stores = 0;

  metrale::EntryStore seam() {
    return metrale::EntryStore{[this](const metrale::EntryKey& key) -> std::optional<metrale::EntrySections> {
                                 std::lock_guard lock(mutex);
                                 ++loads;
                                 auto it = entries.find(key.joined());
                                 return it == entries.end() ? std::nullopt
                                                            : std::optional<metrale::EntrySections>(it->second);
                               },
                               [this](const metrale::EntryKey& key, const metrale::EntrySections& sections) {
                                 std::lock_guard lock(mutex);
                                 ++stores;
                                 entries[key.joined()] = sections;
                                 return true;
                               }};
  }
};

}  // namespace jit_test_support
