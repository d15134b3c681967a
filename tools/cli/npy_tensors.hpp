// npy_tensors.hpp: the .npy checks of `run`: a tensor's dtype, rank and extents, each
// refusal an ArgumentError naming the file and what it expected (exit 1: a bad input file).
#pragma once

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string_view>
#include <vector>

#include "ground/npy.hpp"

namespace metrale::cli {

// DIR/file read and checked to hold `dtype` with `rank` dimensions, each in [1, 2^31).
NpyArray read_tensor(const std::filesystem::path& dir, std::string_view file, NpyDtype dtype, std::size_t rank);

// Dimension `axis` of `array` (read from `file`) must equal `expected`; `why` says where that comes from.
void require_dim(const NpyArray& array, std::string_view file, std::size_t axis, std::uint64_t expected,
                 std::string_view why);

// Dimension `axis` as a 32-bit extent (read_tensor bounded it).
std::uint32_t dim(const NpyArray& array, std::size_t axis);

template <typename T>
std::vector<T> tensor_values(const NpyArray& array) {
  std::vector<T> values(array.data.size() / sizeof(T));
  std::memcpy(values.data(), array.data.data(), values.size() * sizeof(T));
  return values;
}

template <typename T>
NpyArray make_tensor(NpyDtype dtype, std::vector<std::uint64_t> shape, const std::vector<T>& values) {
  NpyArray array{dtype, std::move(shape), std::vector<std::byte>(values.size() * sizeof(T))};
  std::memcpy(array.data.data(), values.data(), array.data.size());
  return array;
}

}  // namespace metrale::cli
