// gpu/cuda_identity.hpp: the pure parts of a CUDA device's identity and health as verification
// reports them: the NVIDIA driver's version from /proc/driver/nvidia/version ("580.159.04"), the
// CUDA version cuDriverGetVersion gives (12080 -> "CUDA 12.8"), a UUID as text, and which driver
// errors are sticky (they lose the context: every later call fails the same way).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace metrale {

// The first dotted number after "Kernel Module" in /proc/driver/nvidia/version's text; nullopt
// when there is none. Pure.
std::optional<std::string> nvidia_driver_version(std::string_view proc_text);
// "CUDA 12.8" for cuDriverGetVersion's 12080. Pure.
std::string cuda_version_text(int version);
// "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", nvidia-smi's spelling of 16 UUID bytes. Pure.
std::string uuid_text(const unsigned char (&bytes)[16]);
// Whether a CUresult (as an int) is one of the errors that leave the context unusable. Pure.
bool is_sticky_cuda_error(int result);

}  // namespace metrale
