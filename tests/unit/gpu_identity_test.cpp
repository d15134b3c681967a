// gpu_identity_test.cpp: the pure parts of a CUDA device's identity as verification keys and names
// its verdicts (no GPU needed): the NVIDIA driver's version read from /proc/driver/nvidia/version's
// text, the CUDA version of cuDriverGetVersion, a UUID in nvidia-smi's spelling, and which driver
// errors lose the context (a refusal then says so).
#include <cuda.h>

#include <catch2/catch.hpp>

#include "gpu/cuda_identity.hpp"

using namespace metrale;

TEST_CASE("the driver version and the UUID are spelled as nvidia-smi does", "[gpu][verify]") {
  const char* proc =
      "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build  (dvs-builder@U22)  Thu "
      "Nov 13 2025\nGCC version:  gcc version 12.3.0\n";
  CHECK(nvidia_driver_version(proc) == "580.159.04");
  CHECK(nvidia_driver_version("NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar\n") == "550.54.15");
  CHECK_FALSE(nvidia_driver_version("GCC version: 12.3.0\n"));                     // no module line
  CHECK_FALSE(nvidia_driver_version("NVRM version: NVIDIA Kernel Module\n12.3"));  // nothing on its line
  CHECK(cuda_version_text(12080) == "CUDA 12.8");
  CHECK(cuda_version_text(13000) == "CUDA 13.0");
  const unsigned char bytes[16] = {0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde, 0xf0,
                                   0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef};
  CHECK(uuid_text(bytes) == "GPU-12345678-9abc-def0-0123-456789abcdef");
}

TEST_CASE("an illegal address loses the context and an out-of-memory does not", "[gpu][verify]") {
  CHECK(is_sticky_cuda_error(CUDA_ERROR_ILLEGAL_ADDRESS));
  CHECK(is_sticky_cuda_error(CUDA_ERROR_LAUNCH_FAILED));
  CHECK(is_sticky_cuda_error(CUDA_ERROR_ASSERT));
  CHECK_FALSE(is_sticky_cuda_error(CUDA_ERROR_OUT_OF_MEMORY));
  CHECK_FALSE(is_sticky_cuda_error(CUDA_ERROR_INVALID_VALUE));
  CHECK_FALSE(is_sticky_cuda_error(CUDA_SUCCESS));
}
