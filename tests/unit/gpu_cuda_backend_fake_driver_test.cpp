// gpu_cuda_backend_fake_driver_test.cpp: CudaBackend over a fake driver table (no GPU needed):
// module loads and function attribute calls run with the thread's capture mode relaxed, so a
// load on one thread does not invalidate a capture another thread has in progress in the global
// mode (vLLM PR #36587); the shared-memory opt-in counts a function's static bytes with the
// dynamic ones. The fake follows CUDA's documented rule for potentially unsafe calls during a
// capture: refused (and the capture invalidated) when the calling thread's mode is global and any
// thread captures in the global mode, or the thread itself captures and is not relaxed.
#include <cuda.h>

#include <array>
#include <atomic>
#include <catch2/catch.hpp>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "gpu/cuda_backend.hpp"
#include "gpu/cuda_relaxed_capture.hpp"
#include "metrale/error.hpp"

using metrale::CudaBackend;
using metrale::CudaDriver;

namespace {

constexpr int kOptInLimit = 227 * 1024;  // an H200's MAX_SHARED_MEMORY_PER_BLOCK_OPTIN

// The fake driver's state: one capture (by any thread) and every unsafe call's mode.
thread_local CUstreamCaptureMode fake_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;  // CUDA's default per thread
thread_local CUcontext fake_current = nullptr;
std::atomic<bool> capture_global{false};  // a thread has a capture begun in the global mode
std::atomic<bool> capture_invalidated{false};
std::atomic<int> static_shared_bytes{0};
std::atomic<CUresult> load_result{CUDA_SUCCESS};
std::mutex calls_mutex;
std::vector<std::string> calls;  // "load relaxed", "set-attribute 40960 relaxed", ...

const char* mode_name(CUstreamCaptureMode mode) {
  switch (mode) {
    case CU_STREAM_CAPTURE_MODE_GLOBAL:
      return "global";
    case CU_STREAM_CAPTURE_MODE_THREAD_LOCAL:
      return "thread-local";
    case CU_STREAM_CAPTURE_MODE_RELAXED:
      return "relaxed";
  }
  return "?";
}

// A potentially unsafe call (CUDA's list: module loads, attribute calls, allocations, ...).
CUresult unsafe_call(const std::string& what) {
  {
    const std::lock_guard lock(calls_mutex);
    calls.push_back(what + " " + mode_name(fake_mode));
  }
  if (capture_global.load() && fake_mode == CU_STREAM_CAPTURE_MODE_GLOBAL) {
    capture_invalidated = true;
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  }
  return CUDA_SUCCESS;
}

CUresult fake_exchange(CUstreamCaptureMode* mode) {
  std::swap(*mode, fake_mode);
  return CUDA_SUCCESS;
}
CUresult fake_device_get(CUdevice* device, int ordinal) {
  *device = ordinal;
  return CUDA_SUCCESS;
}
CUresult fake_retain(CUcontext* context, CUdevice /*device*/) {
  *context = reinterpret_cast<CUcontext>(std::uintptr_t{0x1000});
  return CUDA_SUCCESS;
}
CUresult fake_release(CUdevice /*device*/) { return CUDA_SUCCESS; }
CUresult fake_name(char* name, int length, CUdevice /*device*/) {
  std::snprintf(name, static_cast<std::size_t>(length), "fake H200");
  return CUDA_SUCCESS;
}
CUresult fake_attribute(int* value, CUdevice_attribute attribute, CUdevice /*device*/) {
  switch (attribute) {
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
      *value = 9;
      return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
      *value = 0;
      return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
      *value = 132;
      return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN:
      *value = kOptInLimit;
      return CUDA_SUCCESS;
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
}
CUresult fake_get_current(CUcontext* context) {
  *context = fake_current;
  return CUDA_SUCCESS;
}
CUresult fake_set_current(CUcontext context) {
  fake_current = context;
  return CUDA_SUCCESS;
}
CUresult fake_load(CUmodule* module, const void* /*image*/) {
  const CUresult refused = unsafe_call("load");
  if (refused != CUDA_SUCCESS) {
    return refused;
  }
  *module = reinterpret_cast<CUmodule>(std::uintptr_t{0x2000});
  return load_result.load();
}
CUresult fake_unload(CUmodule /*module*/) { return CUDA_SUCCESS; }
CUresult fake_get_function(CUfunction* function, CUmodule /*module*/, const char* /*name*/) {
  *function = reinterpret_cast<CUfunction>(std::uintptr_t{0x3000});
  return unsafe_call("get-function");
}
CUresult fake_func_get(int* value, CUfunction_attribute attribute, CUfunction /*function*/) {
  if (attribute != CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  *value = static_shared_bytes.load();
  return unsafe_call("get-attribute");
}
CUresult fake_func_set(CUfunction /*function*/, CUfunction_attribute attribute, int value) {
  if (attribute != CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  return unsafe_call("set-attribute " + std::to_string(value));
}
CUresult fake_error_name(CUresult /*result*/, const char** name) {
  *name = "CUDA_ERROR_FAKE";
  return CUDA_SUCCESS;
}

CudaDriver fake_driver() {
  CudaDriver driver;
  driver.device_get = &fake_device_get;
  driver.primary_ctx_retain = &fake_retain;
  driver.primary_ctx_release = &fake_release;
  driver.device_get_name = &fake_name;
  driver.device_get_attribute = &fake_attribute;
  driver.ctx_get_current = &fake_get_current;
  driver.ctx_set_current = &fake_set_current;
  driver.module_load_data = &fake_load;
  driver.module_unload = &fake_unload;
  driver.module_get_function = &fake_get_function;
  driver.func_get_attribute = &fake_func_get;
  driver.func_set_attribute = &fake_func_set;
  driver.thread_exchange_capture_mode = &fake_exchange;
  driver.get_error_name = &fake_error_name;
  return driver;
}

void reset_fake() {
  capture_global = false;
  capture_invalidated = false;
  static_shared_bytes = 0;
  load_result = CUDA_SUCCESS;
  fake_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;
  const std::lock_guard lock(calls_mutex);
  calls.clear();
}

std::vector<std::string> calls_seen() {
  const std::lock_guard lock(calls_mutex);
  return calls;
}

const std::array<std::byte, 4> kImage{std::byte{0x7f}, std::byte{'E'}, std::byte{'L'}, std::byte{'F'}};

metrale::LoadRequest request() {
  metrale::LoadRequest load;
  load.kernel = "fake_kernel";
  load.lowered_name = "_Z11fake_kernelv";
  load.image = kImage;
  return load;
}

metrale::LaunchConfig with_dynamic(std::uint32_t bytes) {
  metrale::LaunchConfig config;
  config.grid = {1, 1, 1};
  config.block = {128, 1, 1};
  config.dynamic_shared_bytes = bytes;
  return config;
}

}  // namespace

TEST_CASE("a module load on another thread leaves a global-mode capture valid", "[gpu][cuda][capture][concurrency]") {
  reset_fake();
  const CudaDriver driver = fake_driver();
  metrale::CudaBackendOpen opened = CudaBackend::open_on(driver, 1, 0);
  REQUIRE(opened.backend);
  capture_global = true;  // this thread "captures" in the global mode, as an engine does
  metrale::KernelHandle handle;
  std::string thrown;
  std::thread loader([&] {  // the library's background build thread, in CUDA's default mode
    try {
      handle = opened.backend->load(request());
      opened.backend->prepare_launch(handle, with_dynamic(100 * 1024));
    } catch (const std::exception& error) {
      thrown = error.what();
    }
    CHECK(fake_mode == CU_STREAM_CAPTURE_MODE_GLOBAL);  // the loader's own mode handed back
  });
  loader.join();
  capture_global = false;
  CHECK(thrown.empty());
  CHECK_FALSE(capture_invalidated.load());
  CHECK(handle.present());
  CHECK(calls_seen() == std::vector<std::string>{"load relaxed", "get-function relaxed", "get-attribute relaxed",
                                                 "set-attribute 102400 relaxed"});
}

TEST_CASE("the capture mode is handed back after a failed module load", "[gpu][cuda][capture]") {
  reset_fake();
  const CudaDriver driver = fake_driver();
  metrale::CudaBackendOpen opened = CudaBackend::open_on(driver, 1, 0);
  REQUIRE(opened.backend);
  fake_mode = CU_STREAM_CAPTURE_MODE_THREAD_LOCAL;  // whatever the caller had
  load_result = CUDA_ERROR_INVALID_IMAGE;
  CHECK_THROWS_AS(opened.backend->load(request()), metrale::BackendError);
  CHECK(fake_mode == CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
  CHECK(calls_seen() == std::vector<std::string>{"load relaxed"});
  SECTION("a driver without the exchange changes no mode") {
    CudaDriver bare = fake_driver();
    bare.thread_exchange_capture_mode = nullptr;
    { const metrale::RelaxedCaptureMode relaxed(bare); }
    CHECK(fake_mode == CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
  }
}

TEST_CASE("the shared memory opt-in counts static and dynamic bytes", "[gpu][cuda]") {
  reset_fake();
  const CudaDriver driver = fake_driver();
  metrale::CudaBackendOpen opened = CudaBackend::open_on(driver, 1, 0);
  REQUIRE(opened.backend);
  CudaBackend& gpu = *opened.backend;
  const metrale::KernelHandle handle = gpu.load(request());
  const auto attribute_calls = [] {
    std::vector<std::string> seen;
    for (const std::string& call : calls_seen()) {
      if (call.rfind("set-attribute", 0) == 0) {
        seen.push_back(call);
      }
    }
    return seen;
  };
  SECTION("16 KiB static + 40 KiB dynamic passes 48 KiB: the limit is raised") {
    static_shared_bytes = 16 * 1024;
    gpu.prepare_launch(handle, with_dynamic(40 * 1024));
    gpu.prepare_launch(handle, with_dynamic(40 * 1024));  // once per size
    CHECK(attribute_calls() == std::vector<std::string>{"set-attribute 40960 relaxed"});
  }
  SECTION("8 KiB static + 40 KiB dynamic fits 48 KiB: nothing is raised") {
    static_shared_bytes = 8 * 1024;
    gpu.prepare_launch(handle, with_dynamic(40 * 1024));
    CHECK(attribute_calls().empty());
  }
  SECTION("static + dynamic past the device's opt-in limit is refused by name") {
    static_shared_bytes = 40 * 1024;
    const std::uint32_t dynamic = kOptInLimit - 20 * 1024;  // fits alone, not with the static bytes
    CHECK_THROWS_WITH(gpu.prepare_launch(handle, with_dynamic(dynamic)),
                      Catch::Contains("40960 B static + 211968 B dynamic") &&
                          Catch::Contains("at most 232448 B (MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)"));
    CHECK(attribute_calls().empty());
  }
  SECTION("no dynamic bytes: no attribute is asked") {
    static_shared_bytes = 40 * 1024;
    gpu.prepare_launch(handle, with_dynamic(0));
    CHECK(calls_seen() == std::vector<std::string>{"load relaxed", "get-function relaxed"});
  }
}
