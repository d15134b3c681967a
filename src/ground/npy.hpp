// ground/npy.hpp: reading and writing NumPy .npy files, how a user hands tensors to the
// CLI's `run` command and takes its outputs back.
// Invariants: only what the ops exchange is accepted (little-endian uint8, uint16 and
// float32, C order); a file is parsed defensively (every length checked, no read past the
// buffer) and any defect is an ArgumentError naming the file and what is wrong.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace metrale {

enum class NpyDtype { kUint8, kUint16, kFloat32 };

std::string_view to_string(NpyDtype dtype);  // "uint8", "uint16", "float32"
std::size_t dtype_bytes(NpyDtype dtype);

struct NpyArray {
  NpyDtype dtype = NpyDtype::kUint8;
  std::vector<std::uint64_t> shape;
  std::vector<std::byte> data;  // C order, little-endian

  [[nodiscard]] std::uint64_t element_count() const;
};

// Parses the bytes of a .npy file; `name` is used in error messages.
NpyArray parse_npy(std::span<const std::byte> bytes, std::string_view name);
NpyArray read_npy(const std::filesystem::path& path);

std::vector<std::byte> serialize_npy(const NpyArray& array);
void write_npy(const std::filesystem::path& path, const NpyArray& array);

}  // namespace metrale
