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
  // The first word of that line made of digits and dots only, with a dot: "for x86_64" (the open
  // module's line) and the build date's numbers are not it.
  std::string_view line = proc_text.substr(module);
  line = line.substr(0, line.find('\n'));
  std::size_t at = 0;
  while (at < line.size()) {
    while (at < line.size() && std::isspace(static_cast<unsigned char>(line[at])) != 0) {
      ++at;
    }
    std::size_t end = at;
    while (end < line.size() && std::isspace(static_cast<unsigned char>(line[end])) == 0) {
      ++end;
    }
    const std::string_view word = line.substr(at, end - at);
    const bool dotted_number = !word.empty() && word.find('.') != std::string_view::npos &&
                               std::isdigit(static_cast<unsigned char>(word.front())) != 0 &&
                               word.find_first_not_of("0123456789.") == std::string_view::npos;
    if (dotted_number) {
      return std::string(word);
    }
    at = end;
  }
  return std::nullopt;
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
