// fuzz_tuning_table.cpp: the tuning-table reader either accepts a file or refuses it with a
// ConfigError that names the file; it never crashes. An accepted table is written again and read
// back: the writer's text of the copy is the same (one spelling), so nothing the reader accepts
// is lost or changed on its way through.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "metrale/error.hpp"
#include "metrale/ops/tuning_table.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const metrale::ops::TuningTable table = metrale::ops::read_tuning_table(text, "fuzz/t.toml");
    const std::string written = metrale::ops::write_tuning_table(table);
    if (metrale::ops::write_tuning_table(metrale::ops::read_tuning_table(written, "fuzz/again.toml")) != written) {
      std::abort();  // an accepted table does not survive its own writer and reader
    }
  } catch (const metrale::ConfigError& e) {
    if (std::string_view(e.what()).find("fuzz/") == std::string_view::npos) {
      std::abort();  // every refusal names the file
    }
  }
  return 0;
}
