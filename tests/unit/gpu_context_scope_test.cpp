// gpu_context_scope_test.cpp: CudaContextScope over a fake driver table (no GPU needed): a backend
// call makes its context current and hands the caller's back, whatever the caller had.
#include <cuda.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <vector>

#include "gpu/cuda_context_scope.hpp"

using metrale::CudaContextScope;
using metrale::CudaDriver;

namespace {

// The fake driver's per-thread current context and every set call, in order.
CUcontext current = nullptr;
std::vector<CUcontext> sets;
bool query_fails = false;

CUresult fake_get(CUcontext* out) {
  if (query_fails) {
    return CUDA_ERROR_INVALID_CONTEXT;
  }
  *out = current;
  return CUDA_SUCCESS;
}

CUresult fake_set(CUcontext context) {
  current = context;
  sets.push_back(context);
  return CUDA_SUCCESS;
}

CUcontext fake_context(std::uintptr_t id) { return reinterpret_cast<CUcontext>(id); }

CudaDriver fake_driver() {
  CudaDriver driver;
  driver.ctx_get_current = &fake_get;
  driver.ctx_set_current = &fake_set;
  return driver;
}

}  // namespace

TEST_CASE("a backend call restores the caller's CUDA context", "[gpu][cuda]") {
  const CudaDriver driver = fake_driver();
  const CUcontext ours = fake_context(0x1000);
  const CUcontext engines = fake_context(0x2000);
  for (const CUcontext before : {engines, CUcontext{nullptr}}) {
    INFO("caller's context " << static_cast<const void*>(before));
    current = before;
    sets.clear();
    query_fails = false;
    {
      const CudaContextScope scope(driver, ours);
      CHECK(current == ours);
    }
    CHECK(current == before);
    CHECK(sets == std::vector<CUcontext>{ours, before});
  }
  SECTION("already current: nothing is switched") {
    current = ours;
    sets.clear();
    { const CudaContextScope scope(driver, ours); }
    CHECK(current == ours);
    CHECK(sets.empty());
  }
  SECTION("a failed query still makes ours current and restores nothing") {
    current = engines;
    sets.clear();
    query_fails = true;
    { const CudaContextScope scope(driver, ours); }
    query_fails = false;
    CHECK(current == ours);
    CHECK(sets == std::vector<CUcontext>{ours});
  }
}
