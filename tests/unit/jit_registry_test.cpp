// jit_registry_test.cpp: KernelRegistry with real NVRTC and fake backends: batching,
// memory/store hits by statistics, failures as absent handles, concurrency, per-device
// handles, the host path and background twins.
#include <catch2/catch.hpp>
#include <thread>

#include "jit/compiled_entry.hpp"
#include "jit/compiled_memory_cache.hpp"
#include "jit/disk_entry_store.hpp"
#include "metrale/jit/kernel_registry.hpp"
#include "support/build_gate.hpp"
#include "support/jit_test_support.hpp"

using namespace metrale;
using jit_test_support::FakeBackend;
using jit_test_support::MapStore;

namespace {

KernelRegistry::Options fresh_options(EntryStore store = {}) {
  KernelRegistry::Options options;
  options.store = std::make_shared<EntryStore>(std::move(store));
  options.memory = std::make_shared<CompiledMemoryCache>();
  options.parallelism = 2;
  return options;
}

KernelVariant scale_variant(int block, bool background = false) {
  return KernelVariant{"scale", "jit_test_kernels.cuh", "jit_test::scale<" + std::to_string(block) + ">",
                       KernelParams{static_cast<std::uint32_t>(block), 0, 0}, background};
}

}  // namespace

TEST_CASE("declare gives stable ids and refuses bad or conflicting variants", "[jit][registry]") {
  KernelRegistry registry(jit_test_support::test_sources(), fresh_options());
  const VariantId a = registry.declare(scale_variant(64));
  const VariantId b = registry.declare(scale_variant(128));
  CHECK(a != b);
  CHECK(registry.declare(scale_variant(64)) == a);
  CHECK(registry.find("scale", KernelParams{128, 0, 0}) == b);
  CHECK_FALSE(registry.find("scale", KernelParams{32, 0, 0}).has_value());
  KernelVariant conflicting = scale_variant(64);
  conflicting.name_expression = "jit_test::scale<65>";
  CHECK_THROWS_AS(registry.declare(conflicting), ArgumentError);
  CHECK_THROWS_WITH(registry.declare({"k", "missing.cuh", "k<1>", {}, false}), Catch::Contains("missing.cuh"));
  CHECK_THROWS_AS(registry.declare({"", "jit_test_kernels.cuh", "x", {}, false}), ArgumentError);
  CHECK_THROWS_AS(registry.variant(99), ArgumentError);
  CHECK(registry.handle(0, 99999999).value == 0);  // beyond the table: absent, not out of bounds
}

TEST_CASE("the variants of one source share one NVRTC program, a second registry hits memory", "[jit][registry]") {
  KernelRegistry::Options options = fresh_options();
  KernelRegistry first(jit_test_support::test_sources(), options);
  for (const int block : {32, 64, 128}) {
    first.declare(scale_variant(block));
  }
  const auto records = first.build("sm_90");
  REQUIRE(records.size() == 3);
  for (const BuildRecord& record : records) {
    INFO(record.kernel << " " << record.params.tag());
    REQUIRE(record.ok());
    CHECK(record.origin == BuildOrigin::kNvrtc);
    CHECK(record.entry->batch_size == 3);
    CHECK(record.entry->resources.has_value());
    CHECK(record.entry->resources->shared_bytes == static_cast<int>(record.params.block) * 4);
    CHECK(record.entry->image_kind() == ImageKind::kCubin);
  }
  CHECK(records[0].entry->cubin == records[2].entry->cubin);  // one image shared by the batch
  CHECK(records[0].entry->lowered_name != records[1].entry->lowered_name);
  RegistryStats stats = first.stats();
  CHECK(stats.nvrtc_programs == 1);
  CHECK(stats.nvrtc_compiles == 3);
  CHECK(stats.memory_hits == 0);
  CHECK(stats.compile_ms > 0.0);

  KernelRegistry second(jit_test_support::test_sources(), options);  // same memory cache
  second.declare(scale_variant(64));
  const auto again = second.build("sm_90");
  CHECK(again[0].origin == BuildOrigin::kMemory);
  CHECK(second.stats().nvrtc_programs == 0);
  CHECK(second.stats().memory_hits == 1);
}

TEST_CASE("a registry with an empty memory cache hits the entry store, with no NVRTC call", "[jit][registry]") {
  MapStore store;
  {
    KernelRegistry writer(jit_test_support::test_sources(), fresh_options(store.seam()));
    writer.declare(scale_variant(64));
    writer.declare(scale_variant(256));
    REQUIRE(writer.build("sm_100")[0].ok());
    CHECK(store.stores == 2);
  }
  KernelRegistry reader(jit_test_support::test_sources(), fresh_options(store.seam()));
  reader.declare(scale_variant(256));
  const auto records = reader.build("sm_100");
  REQUIRE(records[0].ok());
  CHECK(records[0].origin == BuildOrigin::kDisk);
  CHECK(records[0].entry->lowered_name == "_ZN8jit_test5scaleILi256EEEvPKfPffj");
  CHECK(records[0].entry->resources.has_value());
  const RegistryStats stats = reader.stats();
  CHECK(stats.disk_hits == 1);
  CHECK(stats.nvrtc_programs == 0);
  CHECK(stats.nvrtc_compiles == 0);

  SECTION("a corrupt stored entry is rebuilt") {
    for (auto& [key, sections] : store.entries) {
      sections[0].second = "{not json";
    }
    KernelRegistry rebuilt(jit_test_support::test_sources(), fresh_options(store.seam()));
    rebuilt.declare(scale_variant(64));
    const auto redone = rebuilt.build("sm_100");
    REQUIRE(redone[0].ok());
    CHECK(redone[0].origin == BuildOrigin::kNvrtc);
    CHECK(rebuilt.stats().nvrtc_programs == 1);
  }
}

TEST_CASE("a failed compile leaves its handle absent with the log kept, the others build",
          "[jit][registry][concurrency]") {
  KernelRegistry registry(jit_test_support::test_sources(), fresh_options());
  const VariantId good = registry.declare(scale_variant(64));
  const VariantId broken = registry.declare({"broken", "jit_test_broken.cuh", "broken<32>", {32, 0, 0}, false});
  // An instantiation that fails inside an otherwise good batch: the siblings are retried alone.
  const VariantId bad_expression =
      registry.declare({"scale_bad", "jit_test_kernels.cuh", "jit_test::no_such<1>", {1, 0, 0}, false});
  FakeBackend gpu(true, {9, 0}, "fake:0");
  const DeviceIndex device = registry.load(gpu);
  CHECK(registry.handle(device, good).present());
  CHECK_FALSE(registry.handle(device, broken).present());
  CHECK_FALSE(registry.handle(device, bad_expression).present());
  const auto record = registry.record(broken, "sm_90");
  REQUIRE(record.has_value());
  CHECK_FALSE(record->ok());
  CHECK_THAT(record->entry->log, Catch::Contains("jit_test_broken.cuh(6)") && Catch::Contains("BLOCK +;"));
  CHECK(registry.stats().failures == 2);
  REQUIRE(gpu.loads_copy().size() == 1);
  CHECK(gpu.loads_copy()[0].kernel == "scale");
}

TEST_CASE("two threads asking for one kernel compile it once", "[jit][registry][concurrency]") {
  const KernelRegistry::Options options = fresh_options();
  KernelRegistry left(jit_test_support::test_sources(), options);
  KernelRegistry right(jit_test_support::test_sources(), options);
  left.declare(scale_variant(512));
  right.declare(scale_variant(512));
  std::vector<BuildRecord> left_records;
  std::vector<BuildRecord> right_records;
  std::thread a([&] { left_records = left.build("sm_90"); });
  std::thread b([&] { right_records = right.build("sm_90"); });
  a.join();
  b.join();
  REQUIRE(left_records[0].ok());
  REQUIRE(right_records[0].ok());
  CHECK(left_records[0].entry == right_records[0].entry);
  CHECK(left.stats().nvrtc_programs + right.stats().nvrtc_programs == 1);
  CHECK(left.stats().memory_hits + right.stats().memory_hits == 1);
}

TEST_CASE("handles are per device, one arch compiles once for several devices", "[jit][registry]") {
  KernelRegistry registry(jit_test_support::test_sources(), fresh_options());
  const VariantId id = registry.declare(scale_variant(128));
  FakeBackend gpu0(true, {9, 0}, "fake:0");
  FakeBackend gpu1(true, {9, 0}, "fake:1");
  const DeviceIndex d0 = registry.load(gpu0);
  const DeviceIndex d1 = registry.load(gpu1);
  CHECK(d0 != d1);
  CHECK(registry.device_index(gpu1) == d1);
  CHECK(registry.handle(d0, id).present());
  CHECK(registry.handle(d1, id).present());
  CHECK(registry.stats().nvrtc_programs == 1);
  CHECK(registry.stats().memory_hits == 1);
  const auto loads = gpu1.loads_copy();
  REQUIRE(loads.size() == 1);
  CHECK(loads[0].lowered_name == "_ZN8jit_test5scaleILi128EEEvPKfPffj");
  CHECK(loads[0].kind == ImageKind::kCubin);
  CHECK(loads[0].image_bytes > 0);
  CHECK(registry.record(id, "sm_90").has_value());
}

TEST_CASE("a device SM unknown to NVRTC gets PTX for the newest compute arch below it", "[jit][registry]") {
  KernelRegistry registry(jit_test_support::test_sources(), fresh_options());
  const VariantId id = registry.declare(scale_variant(32));
  FakeBackend future_gpu(true, {9, 9}, "fake:future");
  CHECK(KernelRegistry::arch_for(future_gpu) == "compute_90");
  const DeviceIndex device = registry.load(future_gpu);
  CHECK(registry.handle(device, id).present());
  REQUIRE(future_gpu.loads_copy().size() == 1);
  CHECK(future_gpu.loads_copy()[0].kind == ImageKind::kPtx);
}

TEST_CASE("a backend without images loads by kernel and params, with no NVRTC call", "[jit][registry]") {
  KernelRegistry registry(jit_test_support::test_sources(), fresh_options());
  const VariantId ok = registry.declare(scale_variant(64));
  const VariantId refused = registry.declare(scale_variant(128));
  FakeBackend host(false, {0, 0}, "host");
  host.refuse_kernel = "scale";
  host.refuse_params = KernelParams{128, 0, 0};
  const DeviceIndex device = registry.load(host);
  CHECK(registry.handle(device, ok).present());
  // The refused variant stays absent with the backend's reason; its sibling is unaffected.
  CHECK_FALSE(registry.handle(device, refused).present());
  REQUIRE(registry.record(refused, "host").has_value());
  CHECK_FALSE(registry.record(refused, "host")->ok());
  CHECK_THAT(registry.record(refused, "host")->load_error, Catch::Contains("fake refusal of scale"));
  CHECK(registry.record(ok, "host")->ok());
  CHECK(registry.stats().nvrtc_programs == 0);
  const auto loads = host.loads_copy();
  REQUIRE(loads.size() == 1);
  CHECK(loads[0].params == KernelParams{64, 0, 0});
  CHECK(loads[0].lowered_name.empty());
  CHECK(loads[0].image_bytes == 0);
  CHECK(registry.record(ok, "host")->origin == BuildOrigin::kHost);

  FakeBackend refusing(false, {0, 0}, "host2");
  refusing.refuse_kernel = "scale";
  const DeviceIndex other = registry.load(refusing);
  CHECK_FALSE(registry.handle(other, ok).present());
  CHECK_THAT(registry.record(ok, "host")->load_error, Catch::Contains("fake refusal"));
}

TEST_CASE("background twins arrive after load returns", "[jit][registry][concurrency]") {
  test::BuildGate gate;
  KernelRegistry::Options options = fresh_options();
  options.background_gate = gate.hold();
  KernelRegistry registry(jit_test_support::test_sources(), std::move(options));
  const VariantId parent = registry.declare(scale_variant(64));
  const VariantId twin =
      registry.declare({"scale_twin", "jit_test_kernels.cuh", "jit_test::to_bf16<64>", KernelParams{0, 64, 0}, true});
  FakeBackend gpu(true, {12, 1}, "fake:gb10");
  const DeviceIndex device = registry.load(gpu, LoadMode::kBackgroundTwins);
  // load() has returned with the gate shut: the parent is loaded, the twin not yet built.
  CHECK(registry.handle(device, parent).present());
  CHECK_FALSE(registry.handle(device, twin).present());
  CHECK_FALSE(registry.record(twin, "sm_121").has_value());
  gate.open();
  registry.wait_background();
  CHECK(registry.handle(device, twin).present());
  REQUIRE(registry.record(twin, "sm_121").has_value());
  CHECK(registry.record(twin, "sm_121")->ok());
}

TEST_CASE("a registry that waits for all builds every twin before load returns", "[jit][registry]") {
  test::BuildGate gate;  // never opened: kWaitForAll must not consult it
  KernelRegistry::Options options = fresh_options();
  options.background_gate = gate.hold();
  KernelRegistry registry(jit_test_support::test_sources(), std::move(options));
  const VariantId twin =
      registry.declare({"scale_twin", "jit_test_kernels.cuh", "jit_test::to_bf16<64>", KernelParams{0, 64, 0}, true});
  FakeBackend gpu(true, {12, 1}, "fake:gb10");
  const DeviceIndex device = registry.load(gpu, LoadMode::kWaitForAll);
  CHECK(registry.handle(device, twin).present());
}

TEST_CASE("a host engine adds its own source and builds from it", "[jit][registry]") {
  KernelRegistry registry(jit_test_support::test_sources(), fresh_options());
  const auto before = registry.sources();
  registry.add_source("engine.cuh",
                      "#include \"jit_test_math.cuh\"\ntemplate <int N> __global__ void twice(float* p) "
                      "{ p[threadIdx.x] = jit_test::scaled(p[threadIdx.x], 2.0f * N); }\n");
  CHECK_FALSE(before->contains("engine.cuh"));  // snapshots do not change
  const VariantId id = registry.declare({"twice", "engine.cuh", "twice<3>", KernelParams{0, 0, 3}, false});
  const auto records = registry.build("sm_90");
  REQUIRE(records.size() == 1);
  INFO(records[0].entry->log);
  CHECK(records[0].id == id);
  CHECK(records[0].ok());
  CHECK(records[0].entry->lowered_name == "_Z5twiceILi3EEvPf");
}
