// jit_bench.cpp: how long acquiring one kernel variant takes from each level of the JIT:
// cold (NVRTC compile), warm (entry store on disk, fresh memory cache), hot (memory cache
// through a new registry, and the lock-free handle lookup of the launch path).
// Not a test: it prints a table; BENCHMARKS.md records the numbers with the command.
#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>
#include <vector>

#include "hardware/hardware_loader.hpp"
#include "hardware/target_selection.hpp"
#include "jit/compiled_memory_cache.hpp"
#include "jit/disk_entry_store.hpp"
#include "jit/nvrtc_compiler.hpp"
#include "metrale/jit/kernel_registry.hpp"
#include "ops/op_kernels.hpp"

namespace {

using Clock = std::chrono::steady_clock;
using namespace metrale;

// Hands out handles without a device, so the lookup measures populated slots.
class CountingBackend final : public GpuBackend {
 public:
  std::string describe() const override { return "bench (no device)"; }
  std::string device_key() const override { return "bench"; }
  bool needs_compiled_image() const override { return false; }
  std::optional<std::uint32_t> sm_count() const override { return std::nullopt; }
  std::optional<ComputeCapability> compute_capability() const override { return std::nullopt; }
  KernelHandle load(const LoadRequest&) override { return KernelHandle{++loaded_}; }
  void launch(KernelHandle, const LaunchConfig&, std::span<const KernelArg>) override {}
  DevicePtr alloc(std::size_t) override { return {}; }
  void free(DevicePtr) override {}
  void copy_to_device(DevicePtr, const void*, std::size_t) override {}
  void copy_to_host(void*, DevicePtr, std::size_t) override {}
  void synchronize(std::uint64_t) override {}

 private:
  std::uint64_t loaded_ = 0;
};

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

template <typename Fn>
double time_us(Fn&& fn) {
  const auto start = Clock::now();
  fn();
  return std::chrono::duration<double, std::micro>(Clock::now() - start).count();
}

struct Row {
  std::string kernel;
  double cold_us = 0;
  double warm_us = 0;
  double hot_acquire_us = 0;
  double hot_lookup_ns = 0;
};

// The hopper target's four kernels from the embedded templates, or the JIT test kernels.
std::vector<KernelVariant> bench_variants(bool real, SourceSet& sources) {
  if (real) {
    sources.add_embedded_templates();
    std::vector<KernelVariant> variants;
    const auto targets = load_targets(metrale::ops::library_catalog());
    for (const KernelEntry& entry : find_target(targets, "hopper")->kernels) {
      variants.push_back(*ops::op_kernel_variant(entry.name, entry.params));
    }
    return variants;
  }
  sources.add_directory(std::string(METRALE_SOURCE_DIR) + "/tests/data/jit");
  return {
      {"scale", "jit_test_kernels.cuh", "jit_test::scale<64>", {64, 0, 0}},
      {"scale", "jit_test_kernels.cuh", "jit_test::scale<256>", {256, 0, 0}},
      {"to_bf16", "jit_test_kernels.cuh", "jit_test::to_bf16<32>", {0, 32, 0}},
  };
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"metrale-jit-bench: cold / warm / hot kernel acquisition"};
  std::string arch = "sm_90";
  int repeats = 3;
  std::string kernels = "real";
  app.add_option("--arch", arch, "NVRTC architecture");
  app.add_option("--repeats", repeats, "runs per level (the median is shown)")->check(CLI::Range(1, 100));
  app.add_option("--kernels", kernels, "real: the hopper target's kernels; test: the JIT test kernels")
      ->check(CLI::IsMember({"real", "test"}));
  CLI11_PARSE(app, argc, argv);

  SourceSet sources;
  const std::vector<KernelVariant> variants = bench_variants(kernels == "real", sources);
  std::string pattern = (std::filesystem::temp_directory_path() / "metrale-jit-bench-XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr) {
    fmt::print(stderr, "cannot create a temp directory {}\n", pattern);
    return 1;
  }
  const std::filesystem::path store_dir = pattern;
  const EntryStore disk = disk_entry_store(std::make_shared<DiskCache>(DiskCache::open_at(store_dir)));
  if (!disk.enabled()) {
    fmt::print(stderr, "the disk cache at {} is disabled\n", store_dir.string());
    return 1;
  }

  auto fresh = [&](bool with_store, std::shared_ptr<CompiledMemoryCache> memory = nullptr) {
    KernelRegistry::Options options;
    options.memory = memory ? std::move(memory) : std::make_shared<CompiledMemoryCache>();
    options.store = with_store ? std::make_shared<EntryStore>(disk) : nullptr;
    return std::make_unique<KernelRegistry>(sources, std::move(options));
  };

  std::vector<Row> rows;
  for (const KernelVariant& variant : variants) {
    Row row{variant.kernel + "." + variant.params.tag()};
    std::vector<double> cold;
    std::vector<double> warm;
    for (int r = 0; r < repeats; ++r) {
      auto registry = fresh(false);
      registry->declare(variant);
      cold.push_back(time_us([&] { registry->build(arch); }));
    }
    {
      auto writer = fresh(true);
      writer->declare(variant);
      writer->build(arch);
    }
    for (int r = 0; r < repeats; ++r) {
      auto registry = fresh(true);
      registry->declare(variant);
      warm.push_back(time_us([&] {
        if (registry->build(arch)[0].origin != BuildOrigin::kDisk) {
          throw std::runtime_error("warm run missed the store");
        }
      }));
    }
    const auto memory = std::make_shared<CompiledMemoryCache>();
    {
      auto filler = fresh(false, memory);
      filler->declare(variant);
      filler->build(arch);
    }
    auto hot = fresh(false, memory);
    const VariantId id = hot->declare(variant);
    constexpr int kAcquisitions = 2000;
    row.hot_acquire_us = time_us([&] {
                           for (int i = 0; i < kAcquisitions; ++i) {
                             hot->build(arch);
                           }
                         }) /
                         kAcquisitions;
    CountingBackend device;
    const DeviceIndex index = hot->load(device);
    if (!hot->handle(index, id).present()) {
      throw std::runtime_error("the bench backend left the handle absent");
    }
    constexpr std::uint64_t kLookups = 20'000'000;
    row.hot_lookup_ns = time_us([&] {
                          for (std::uint64_t i = 0; i < kLookups; ++i) {
                            std::uint64_t value = hot->handle(index, id).value;
                            asm volatile("" : "+r"(value));  // keeps each lookup from being hoisted
                          }
                        }) *
                        1000.0 / static_cast<double>(kLookups);
    row.cold_us = median(cold);
    row.warm_us = median(warm);
    rows.push_back(row);
  }

  fmt::print("metrale-jit-bench: arch {}, NVRTC {}, {} repeat(s), median\n", arch, nvrtc_version(), repeats);
  fmt::print("{:<28} {:>12} {:>12} {:>10} {:>16} {:>14}\n", "kernel", "cold ms", "warm ms", "cold/warm",
             "hot acquire us", "hot lookup ns");
  for (const Row& row : rows) {
    fmt::print("{:<28} {:>12.2f} {:>12.3f} {:>10.0f} {:>16.2f} {:>14.2f}\n", row.kernel, row.cold_us / 1000.0,
               row.warm_us / 1000.0, row.cold_us / row.warm_us, row.hot_acquire_us, row.hot_lookup_ns);
  }
  // Batching: the misses of one source in one NVRTC program vs one program per variant.
  std::map<std::string, std::vector<KernelVariant>> by_source;
  for (const KernelVariant& variant : variants) {
    by_source[variant.source].push_back(variant);
  }
  for (const auto& [source, group] : by_source) {
    if (group.size() < 2) {
      continue;
    }
    std::vector<double> batched;
    std::vector<double> separate;
    for (int r = 0; r < repeats; ++r) {
      auto together = fresh(false);
      for (const KernelVariant& variant : group) {
        together->declare(variant);
      }
      batched.push_back(time_us([&] { together->build(arch); }));
      double sum = 0;
      for (const KernelVariant& variant : group) {
        auto alone = fresh(false);
        alone->declare(variant);
        sum += time_us([&] { alone->build(arch); });
      }
      separate.push_back(sum);
    }
    fmt::print("batch {}: {} variants in one program {:.1f} ms, one program each {:.1f} ms ({:.2f}x)\n", source,
               group.size(), median(batched) / 1000.0, median(separate) / 1000.0, median(batched) / median(separate));
  }
  std::filesystem::remove_all(store_dir);
  return 0;
}
