// fuzz_npy.cpp: the .npy reader never crashes or reads out of bounds; a file it accepts
// serialises back to bytes it accepts again with the same content.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>

#include "ground/npy.hpp"
#include "metrale/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  try {
    const metrale::NpyArray array = metrale::parse_npy(bytes, "fuzz.npy");
    const metrale::NpyArray again = metrale::parse_npy(metrale::serialize_npy(array), "again.npy");
    if (again.data != array.data || again.shape != array.shape || again.dtype != array.dtype) {
      std::abort();
    }
  } catch (const metrale::ArgumentError&) {
    // A named refusal is the expected outcome for most inputs.
  }
  return 0;
}
