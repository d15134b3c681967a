// gpu/cuda_capture.hpp: whether a stream is capturing into a CUDA graph, asked of the driver
// table (cuStreamGetCaptureInfo, else cuStreamIsCapturing), so a fake table tests it without a GPU.
// Invariants: the legacy stream 0 never captures (CUDA refuses a capture on it) and is not asked;
// an answer "invalidated" counts as capturing (the capture is still open until it ends); a query
// the driver refuses because of a capture elsewhere (CUDA_ERROR_STREAM_CAPTURE_*) counts as
// capturing too, so the op call does no first-call work; a driver with neither entry point
// answers false.
#pragma once

#include <cuda.h>

#include <cstdint>

#include "gpu/cuda_driver.hpp"

namespace metrale {

[[nodiscard]] bool cuda_stream_is_capturing(const CudaDriver& driver, std::uint64_t stream);

}  // namespace metrale
