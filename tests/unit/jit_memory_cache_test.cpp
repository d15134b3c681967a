// jit_memory_cache_test.cpp: the memory cache's bound (oldest fulfilled keys dropped, pending
// ones kept) and the failed-compile memory: a failure is remembered for its exact source and
// options only, so an added header or a changed template compiles again.
#include <catch2/catch.hpp>

#include "jit/compiled_memory_cache.hpp"
#include "metrale/jit/kernel_registry.hpp"
#include "support/jit_test_support.hpp"

using namespace metrale;

TEST_CASE("the memory cache drops its oldest fulfilled entries past its bound", "[jit][memory]") {
  CompiledMemoryCache cache(3);
  auto pending = cache.claim("pending");  // never fulfilled during the fills below
  REQUIRE(pending.owned());
  for (int i = 0; i < 6; ++i) {
    auto claim = cache.claim("k" + std::to_string(i));
    REQUIRE(claim.owned());
    auto entry = std::make_shared<CompiledEntry>();
    entry->lowered_name = "k" + std::to_string(i);
    claim.promise->set_value(entry);
    CHECK(cache.size() <= 3);
  }
  CHECK(cache.size() == 3);
  CHECK_FALSE(cache.claim("pending").owned());  // a pending key is never dropped
  CHECK_FALSE(cache.claim("k5").owned());       // the newest stay
  CHECK(cache.claim("k5").future.get()->lowered_name == "k5");
  CHECK(cache.claim("k0").owned());  // the oldest went: claiming it again owns it
  pending.promise->set_value(nullptr);
}

TEST_CASE("a failed compile is remembered only for the same source and options", "[jit][memory]") {
  KernelRegistry::Options options;
  options.store = {};
  options.memory = std::make_shared<CompiledMemoryCache>();
  options.parallelism = 1;
  SourceSet sources;
  sources.add_source("needs_header.cuh",
                     "#include \"late_header.cuh\"\n"
                     "template <int N> __global__ void late(float* out) { out[0] = late_value(N); }\n");
  KernelRegistry registry(std::move(sources), options);
  const VariantId id = registry.declare(KernelVariant{"late", "needs_header.cuh", "late<3>", KernelParams{3, 0, 0}});

  const auto first = registry.build("compute_80");
  REQUIRE(first.size() == 1);
  CHECK_FALSE(first[0].ok());
  const auto again = registry.build("compute_80");
  CHECK(again[0].origin == BuildOrigin::kMemory);  // the same source: the failure is remembered
  CHECK_FALSE(again[0].ok());
  CHECK(registry.stats().nvrtc_programs == 1);

  // The missing header arrives: another digest, so it compiles (and now succeeds).
  registry.add_source("late_header.cuh", "__device__ inline float late_value(int n) { return 0.5f * n; }\n");
  const auto fixed = registry.build("compute_80");
  CHECK(fixed[0].origin == BuildOrigin::kNvrtc);
  CHECK(fixed[0].ok());
  CHECK(registry.stats().nvrtc_programs == 2);
  CHECK(registry.record(id, "compute_80")->entry->ptx->find("late") != std::string::npos);
}
