// fuzz_cuda_rewrite.cpp: the host JIT's reading of what a compiler hands back is total: hostile
// bytes as a preprocessed unit (after a marker naming the engine's file) and as a compiler's log
// never crash the rewrite, the function-body finder or the log readers, and a rewrite that refuses
// nothing keeps every newline where it was (the invariant of src/host/cuda_source_rewrite.hpp).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "host/compile_log_locations.hpp"
#include "host/cuda_source_rewrite.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  const metrale::host::SourceNameFn engine = [](std::string_view path) -> std::optional<std::string> {
    return path == "/e/k.cu" ? std::optional<std::string>("k.cu") : std::nullopt;
  };
  const std::string unit = "# 1 \"/e/k.cu\"\n" + std::string(bytes);
  // The same bytes as a log: whatever lines it names are fed back as failed lines.
  const std::vector<metrale::host::FailedLine> failed = metrale::host::failed_engine_lines(bytes, engine, "/e/");
  const std::vector<std::size_t> called = metrale::host::unavailable_stubs_called(bytes);
  if (!std::is_sorted(called.begin(), called.end())) {
    std::abort();
  }
  const metrale::host::CudaSourceRewrite out = metrale::host::rewrite_cuda_source(unit, engine, failed);
  if (out.refusal.empty() &&
      std::count(out.text.begin(), out.text.end(), '\n') != std::count(unit.begin(), unit.end(), '\n')) {
    std::abort();
  }
  return 0;
}
