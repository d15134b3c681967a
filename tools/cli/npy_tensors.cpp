// npy_tensors.cpp: dtype, rank and extent checks of the tensors `run` reads.
#include "npy_tensors.hpp"

#include <fmt/format.h>

#include "metrale/error.hpp"

namespace metrale::cli {

namespace {
// Extents past this would overflow the ops' 32-bit shape fields.
constexpr std::uint64_t kMaxExtent = std::uint64_t{1} << 31;
}  // namespace

NpyArray read_tensor(const std::filesystem::path& dir, std::string_view file, NpyDtype dtype, std::size_t rank) {
  const std::filesystem::path path = dir / file;
  if (!std::filesystem::is_regular_file(path)) {
    throw ArgumentError(
        fmt::format("{}: missing (expected {} with {} dimensions)", path.string(), to_string(dtype), rank));
  }
  NpyArray array = read_npy(path);
  if (array.dtype != dtype) {
    throw ArgumentError(fmt::format("{}: dtype {}, expected {}{}", path.string(), to_string(array.dtype),
                                    to_string(dtype), dtype == NpyDtype::kUint16 ? " (bf16 bit patterns)" : ""));
  }
  if (array.shape.size() != rank) {
    throw ArgumentError(fmt::format("{}: shape has {} dimensions ({}), expected {}", path.string(), array.shape.size(),
                                    fmt::join(array.shape, ", "), rank));
  }
  for (std::size_t axis = 0; axis < rank; ++axis) {
    if (array.shape[axis] == 0 || array.shape[axis] >= kMaxExtent) {
      throw ArgumentError(fmt::format("{}: dimension {} is {}, expected 1 to {}", path.string(), axis,
                                      array.shape[axis], kMaxExtent - 1));
    }
  }
  return array;
}

void require_dim(const NpyArray& array, std::string_view file, std::size_t axis, std::uint64_t expected,
                 std::string_view why) {
  if (array.shape.at(axis) != expected) {
    throw ArgumentError(
        fmt::format("{}: dimension {} is {}, expected {} ({})", file, axis, array.shape[axis], expected, why));
  }
}

std::uint32_t dim(const NpyArray& array, std::size_t axis) { return static_cast<std::uint32_t>(array.shape.at(axis)); }

}  // namespace metrale::cli
