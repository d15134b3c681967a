// jit_bench.cpp: how long acquiring one kernel variant takes from each level of the JIT:
// cold (NVRTC compile), warm (entry store on disk, fresh memory cache), hot (memory cache
// through a new registry, and the lock-free handle lookup of the launch path).
// Not a test: it prints a table; BENCHMARKS.md records the numbers with the command.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "metrale/jit/kernel_registry.hpp"
#include "metrale/jit/nvrtc_compiler.hpp"

namespace {

using Clock = std::chrono::steady_clock;
using namespace metrale;

// Entries as files, one per key: the disk level without the cache's checksums and locking.
// Replaced by DiskCache when it is available (see BENCHMARKS.md).
struct FileStore {
  std::filesystem::path dir;

  std::filesystem::path path_of(const EntryKey& key) const {
    return dir / fmt::format("{}.{}.{}.{:016x}", key.kernel, key.params_tag, key.arch,
                             std::hash<std::string>{}(key.joined()));
  }
  EntryStore seam() const {
    return EntryStore{[this](const EntryKey& key) -> std::optional<EntrySections> {
                        std::ifstream in(path_of(key), std::ios::binary);
                        if (!in) {
                          return std::nullopt;
                        }
                        EntrySections sections;
                        std::string name;
                        std::size_t size = 0;
                        while (in >> name >> size && in.get() == '\n') {
                          std::string bytes(size, '\0');
                          in.read(bytes.data(), static_cast<std::streamsize>(size));
                          sections.emplace_back(name, std::move(bytes));
                        }
                        return sections;
                      },
                      [this](const EntryKey& key, const EntrySections& sections) {
                        std::ofstream out(path_of(key), std::ios::binary);
                        for (const auto& [name, bytes] : sections) {
                          out << name << ' ' << bytes.size() << '\n' << bytes;
                        }
                        return static_cast<bool>(out);
                      }};
  }
};

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

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"metrale-jit-bench: cold / warm / hot kernel acquisition"};
  std::string arch = "sm_90";
  int repeats = 3;
  std::string store_dir = (std::filesystem::temp_directory_path() / "metrale-jit-bench").string();
  app.add_option("--arch", arch, "NVRTC architecture");
  app.add_option("--repeats", repeats, "runs per level (the median is shown)")->check(CLI::Range(1, 100));
  app.add_option("--store", store_dir, "directory for the disk level (emptied first)");
  CLI11_PARSE(app, argc, argv);

  SourceSet sources;
  sources.add_directory(std::string(METRALE_SOURCE_DIR) + "/tests/data/jit");
  const std::vector<KernelVariant> variants{
      {"scale", "jit_test_kernels.cuh", "jit_test::scale<64>", {64, 0, 0}, false},
      {"scale", "jit_test_kernels.cuh", "jit_test::scale<256>", {256, 0, 0}, false},
      {"to_bf16", "jit_test_kernels.cuh", "jit_test::to_bf16<32>", {0, 32, 0}, false},
  };
  std::filesystem::remove_all(store_dir);
  std::filesystem::create_directories(store_dir);
  const FileStore files{store_dir};

  auto fresh = [&](bool with_store, std::shared_ptr<CompiledMemoryCache> memory = nullptr) {
    KernelRegistry::Options options;
    options.memory = memory ? std::move(memory) : std::make_shared<CompiledMemoryCache>();
    if (with_store) {
      options.store = files.seam();
    }
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
  fmt::print("{:<22} {:>12} {:>12} {:>10} {:>16} {:>14}\n", "kernel", "cold ms", "warm ms", "cold/warm",
             "hot acquire us", "hot lookup ns");
  for (const Row& row : rows) {
    fmt::print("{:<22} {:>12.2f} {:>12.3f} {:>10.0f} {:>16.2f} {:>14.2f}\n", row.kernel, row.cold_us / 1000.0,
               row.warm_us / 1000.0, row.cold_us / row.warm_us, row.hot_acquire_us, row.hot_lookup_ns);
  }
  std::filesystem::remove_all(store_dir);
  return 0;
}
