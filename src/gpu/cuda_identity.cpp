// cuda_identity.cpp: driver version text, UUID text and the sticky errors (pure).
#include "gpu/cuda_identity.hpp"

#include <cuda.h>
#include <fmt/format.h>

#include <array>
#include <cctype>

namespace metrale {

std::optional<std::string> nvidia_driver_version(std::string_view proc_text) {
  const std::size_t module = proc_text.find("Kernel Module");
  if (module == std::string_view::npos) {
    return std::nullopt;
  }
  std::size_t at = module + std::string_view("Kernel Module").size();
  while (at < proc_text.size() && std::isdigit(static_cast<unsigned char>(proc_text[at])) == 0) {
    if (proc_text[at] == '\n') {
      return std::nullopt;
    }
    ++at;
  }
  std::size_t end = at;
  while (end < proc_text.size() &&
         (std::isdigit(static_cast<unsigned char>(proc_text[end])) != 0 || proc_text[end] == '.')) {
    ++end;
  }
  if (end == at || proc_text.substr(at, end - at).find('.') == std::string_view::npos) {
    return std::nullopt;
  }
  return std::string(proc_text.substr(at, end - at));
}

std::string cuda_version_text(int version) { return fmt::format("CUDA {}.{}", version / 1000, (version % 1000) / 10); }

std::string uuid_text(const unsigned char (&bytes)[16]) {
  std::string out = "GPU-";
  for (std::size_t i = 0; i < 16; ++i) {
    out += fmt::format("{:02x}", bytes[i]);
    if (i == 3 || i == 5 || i == 7 || i == 9) {
      out += '-';
    }
  }
  return out;
}

bool is_sticky_cuda_error(int result) {
  // The errors the driver documents as leaving the context in an inconsistent state.
  constexpr std::array<CUresult, 9> kSticky = {CUDA_ERROR_ILLEGAL_ADDRESS,      CUDA_ERROR_LAUNCH_FAILED,
                                               CUDA_ERROR_HARDWARE_STACK_ERROR, CUDA_ERROR_ILLEGAL_INSTRUCTION,
                                               CUDA_ERROR_MISALIGNED_ADDRESS,   CUDA_ERROR_INVALID_ADDRESS_SPACE,
                                               CUDA_ERROR_INVALID_PC,           CUDA_ERROR_ASSERT,
                                               CUDA_ERROR_ECC_UNCORRECTABLE};
  for (const CUresult sticky : kSticky) {
    if (static_cast<int>(sticky) == result) {
      return true;
    }
  }
  return false;
}

}  // namespace metrale
