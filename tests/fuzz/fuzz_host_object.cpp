// fuzz_host_object.cpp: the host-JIT object trailer (src/host/host_object_file.hpp). Hostile
// bytes never crash the check or read out of bounds; a sealed object always passes for its own
// key and for no other; any one byte changed or any cut makes it fail (the trailer is the only
// thing between a damaged cache file and dlopen).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "host/host_object_file.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  const metrale::host::HostObjectCheck raw = metrale::host::check_host_object(bytes, {});
  if (raw.problem.empty() && raw.object_bytes + metrale::host::kHostObjectTrailerBytes != size) {
    std::abort();
  }
  // Seal the input as an object under a key made of hex digits from it.
  std::string key(metrale::host::kHostObjectKeyChars, '0');
  for (std::size_t i = 0; i < key.size() && i < size; ++i) {
    key[i] = "0123456789abcdef"[data[i] & 0xFu];
  }
  const std::string sealed = metrale::host::seal_host_object(bytes, key);
  const metrale::host::HostObjectCheck good = metrale::host::check_host_object(sealed, key);
  if (!good.problem.empty() || good.object_bytes != size || good.key != key) {
    std::abort();
  }
  std::string other = key;
  other[0] = other[0] == 'f' ? 'e' : 'f';
  if (metrale::host::check_host_object(sealed, other).problem.empty()) {
    std::abort();
  }
  if (size == 0) {
    return 0;
  }
  // One byte flipped where the input says, and the seal cut where it says: both must fail.
  const std::size_t at = (static_cast<std::size_t>(data[0]) * 131 + size) % sealed.size();
  std::string flipped = sealed;
  flipped[at] = static_cast<char>(flipped[at] ^ (data[size - 1] | 1));
  if (metrale::host::check_host_object(flipped, key).problem.empty()) {
    std::abort();
  }
  if (metrale::host::check_host_object(std::string_view(sealed).substr(0, at), key).problem.empty()) {
    std::abort();
  }
  return 0;
}
