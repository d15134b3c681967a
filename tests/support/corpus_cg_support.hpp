// tests/support/corpus_cg_support.hpp: the cooperative-groups kernels of tests/data/corpus/ (cg_*.cuh) loaded
// the way an engine loads its own kernels: its source added to a KernelRegistry, the variant
// declared by its name expression, then load() on a host backend (the host JIT compiles it) or
// build() for an arch (NVRTC). Invariant: a variant that does not load fails the test with the
// compiler's log, never a silent absent handle.
#pragma once

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "host/host_backend.hpp"
#include "jit/compile_target.hpp"
#include "metrale/jit/kernel_registry.hpp"

namespace corpus_cg_test {

// The text of tests/data/corpus/<file>.
inline std::string corpus_text(const std::string& file) {
  std::ifstream in(std::string(METRALE_SOURCE_DIR) + "/tests/data/corpus/" + file, std::ios::binary);
  REQUIRE(in.good());
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// A private registry: no memory cache or bundle of the process is read or written, and the disk
// store (under CTest, the build's test cache) only when `disk_store` is set, so a rerun of the
// NVRTC compiles costs nothing. On a toolkit that keeps libcu++ under include/cccl (CUDA 13),
// NVRTC needs that folder as nvcc has it; given here explicitly until the registry adds it itself
// (then it is a harmless repeat).
inline metrale::KernelRegistry::Options private_registry_options(bool disk_store = false) {
  metrale::KernelRegistry::Options options;
  if (!disk_store) {
    options.store = nullptr;
  }
  options.memory = nullptr;
  options.bundles = nullptr;
  if (const auto& cuda = metrale::cuda_include_dir()) {
    if (std::error_code error; std::filesystem::is_directory(std::filesystem::path(*cuda) / "cccl", error)) {
      options.extra_options.push_back("-I" + (std::filesystem::path(*cuda) / "cccl").string());
    }
  }
  return options;
}

// A host backend with the corpus' kernels loaded through the registry and the host JIT.
class HostCorpus {
 public:
  HostCorpus() : gpu_(backend_options()) {}
  // A backend standing in for a device of capability `cc` (what __CUDA_ARCH__ says to its kernels).
  explicit HostCorpus(metrale::ComputeCapability cc) : gpu_(backend_options(cc)) {}

  struct Loaded {
    metrale::KernelHandle handle;  // absent: see reason
    std::string reason;            // the registry's record of the refusal (the compiler's log)
  };

  // Loads `expression` from `file` (its text replaced by `text` when given) as kernel `kernel`.
  Loaded try_load(const std::string& file, const std::string& kernel, const std::string& expression,
                  const std::string& text = {}) {
    metrale::SourceSet sources;
    sources.add_source(file, text.empty() ? corpus_text(file) : text);
    auto registry = std::make_unique<metrale::KernelRegistry>(std::move(sources), private_registry_options());
    const metrale::VariantId id = registry->declare({kernel, file, expression, {}, false});
    Loaded loaded{registry->handle(registry->load(gpu_), id), {}};
    if (const auto record = registry->record(id, "host"); record && !loaded.handle.present()) {
      loaded.reason = record->load_error;
    }
    registries_.push_back(std::move(registry));
    return loaded;
  }

  // The same, failing the test with the compiler's log when the kernel does not load.
  metrale::KernelHandle load(const std::string& file, const std::string& kernel, const std::string& expression,
                             const std::string& text = {}) {
    const Loaded loaded = try_load(file, kernel, expression, text);
    if (!loaded.handle.present()) {
      FAIL_CHECK("host JIT of " << expression << ": " << loaded.reason);
    }
    REQUIRE(loaded.handle.present());
    return loaded.handle;
  }

  metrale::HostBackend& gpu() { return gpu_; }

 private:
  // Two workers, as CI has: blocks of one launch run side by side, so atomics are contended.
  static metrale::HostBackendOptions backend_options(metrale::ComputeCapability cc = {9, 0}) {
    metrale::HostBackendOptions options;
    options.worker_threads = 2;
    options.compute_capability = cc;
    return options;
  }

  metrale::HostBackend gpu_;
  std::vector<std::unique_ptr<metrale::KernelRegistry>> registries_;
};

}  // namespace corpus_cg_test
