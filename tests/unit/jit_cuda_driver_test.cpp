// jit_cuda_driver_test.cpp: the dlopen'ed driver without a GPU: a "no device" state with a
// reason, never a crash; with a device (a lent GPU), the backend reports sane attributes.
#include <catch2/catch.hpp>

#include "metrale/gpu/cuda_backend.hpp"
#include "metrale/gpu/cuda_driver.hpp"

using namespace metrale;

TEST_CASE("the CUDA driver loads or says why not", "[jit][cuda]") {
  const CudaDriverStatus& status = CudaDriver::load();
  REQUIRE(&status == &CudaDriver::load());  // loaded once
  const CudaBackendOpen opened = CudaBackend::open(0);
  if (!status.available()) {
    // Each "no device" path names its cause.
    const bool named = status.reason.find("libcuda.so.1") != std::string::npos ||
                       status.reason.find("cuInit") != std::string::npos ||
                       status.reason.find("no device") != std::string::npos ||
                       status.reason.find("cuDeviceGetCount") != std::string::npos;
    CHECK(named);
    CHECK(status.driver == nullptr);
    CHECK(opened.backend == nullptr);
    CHECK(opened.reason == status.reason);
    return;
  }
  CHECK(status.device_count > 0);
  REQUIRE(opened.backend != nullptr);
  CHECK(opened.backend->compute_capability().has_value());
  CHECK(opened.backend->sm_count().value_or(0) > 0);
  CHECK(opened.backend->device_key() == "cuda:0");
  const CudaBackendOpen beyond = CudaBackend::open(status.device_count);
  CHECK(beyond.backend == nullptr);
  CHECK_THAT(beyond.reason, Catch::Contains("does not exist"));
}
