// cuda_isolation.cpp: CudaBackend's identity (name, UUID, driver version) and the isolated work
// verification runs in: a non-blocking stream of its own (never stream 0) and the thread's capture
// mode relaxed while it lives, copies ordered on that stream, and the sticky-error test after a
// failure. Why relaxed: in the default (global) mode a potentially unsafe call on this thread (an
// allocation, a synchronous copy) would invalidate a capture another thread has in progress.
#include <fmt/format.h>

#include <fstream>
#include <sstream>

#include "gpu/cuda_backend.hpp"
#include "gpu/cuda_identity.hpp"

namespace metrale {

std::string CudaBackend::device_name() const { return name_.empty() ? std::string("CUDA device") : name_; }

std::string CudaBackend::device_uuid() const {
  CUuuid uuid{};
  if (driver_.device_get_uuid(&uuid, device_) != CUDA_SUCCESS) {
    return "unknown";
  }
  unsigned char bytes[16];
  for (std::size_t i = 0; i < 16; ++i) {
    bytes[i] = static_cast<unsigned char>(uuid.bytes[i]);
  }
  return uuid_text(bytes);
}

std::string CudaBackend::driver_version() const {
  // The NVIDIA driver's own version when the kernel module says it (what people quote), else the
  // CUDA version the driver API reports.
  std::ifstream proc("/proc/driver/nvidia/version");
  if (proc) {
    std::stringstream text;
    text << proc.rdbuf();
    if (const std::optional<std::string> version = nvidia_driver_version(text.str())) {
      return *version;
    }
  }
  int version = 0;
  return driver_.driver_get_version(&version) == CUDA_SUCCESS ? cuda_version_text(version) : std::string("unknown");
}

IsolatedWork CudaBackend::isolate() {
  const CudaContextScope scope = make_current();
  CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
  check(driver_.thread_exchange_capture_mode(&mode), "cuThreadExchangeStreamCaptureMode");
  CUstream stream = nullptr;
  if (const CUresult result = driver_.stream_create(&stream, CU_STREAM_NON_BLOCKING); result != CUDA_SUCCESS) {
    driver_.thread_exchange_capture_mode(&mode);
    check(result, "cuStreamCreate(CU_STREAM_NON_BLOCKING)");
  }
  return IsolatedWork(reinterpret_cast<std::uint64_t>(stream), [this, stream, mode]() mutable {
    const CudaContextScope restore = make_current();
    driver_.stream_synchronize(stream);
    driver_.stream_destroy(stream);
    driver_.thread_exchange_capture_mode(&mode);  // the thread's mode as it was
  });
}

void CudaBackend::copy_to_device_on(std::uint64_t stream, DevicePtr dst, const void* src, std::size_t bytes) {
  if (stream == 0) {
    copy_to_device(dst, src, bytes);
    return;
  }
  const CudaContextScope scope = make_current();
  const auto on = reinterpret_cast<CUstream>(stream);
  check(driver_.memcpy_htod_async(static_cast<CUdeviceptr>(dst.address), src, bytes, on), "cuMemcpyHtoDAsync");
  check(driver_.stream_synchronize(on), "cuStreamSynchronize");
}

void CudaBackend::copy_to_host_on(std::uint64_t stream, void* dst, DevicePtr src, std::size_t bytes) {
  if (stream == 0) {
    copy_to_host(dst, src, bytes);
    return;
  }
  const CudaContextScope scope = make_current();
  const auto on = reinterpret_cast<CUstream>(stream);
  check(driver_.memcpy_dtoh_async(dst, static_cast<CUdeviceptr>(src.address), bytes, on), "cuMemcpyDtoHAsync");
  check(driver_.stream_synchronize(on), "cuStreamSynchronize");
}

std::optional<std::string> CudaBackend::context_lost() {
  const CudaContextScope scope = make_current();
  const CUresult result = driver_.ctx_synchronize();
  if (result == CUDA_SUCCESS || !is_sticky_cuda_error(static_cast<int>(result))) {
    return std::nullopt;
  }
  return fmt::format("the CUDA context of {} is lost (a sticky error: every later call fails): {}", device_key(),
                     driver_.describe(result));
}

}  // namespace metrale
