// host/access_trace.hpp: what a profiled host block records: every global access its threads
// make (through the compiler-inserted callbacks of access_trace.cpp) and the arithmetic the
// prelude's intrinsics count (profile_counters.hpp).
// Invariants: a trace is installed on one OS thread for one block at a time; only accesses
// inside the launch's device allocations are kept (stack, arguments and the runtime's own
// memory are not device memory); a thread's accesses are numbered in program order (its access
// ordinal), which is how lanes are grouped into one warp-level request.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "metrale/host/thread_context.hpp"

namespace metrale::host {

// [start, end) of every live device allocation, sorted by start.
class AddressRanges {
 public:
  AddressRanges() = default;
  explicit AddressRanges(std::vector<std::pair<std::uint64_t, std::uint64_t>> ranges);
  [[nodiscard]] bool contains(std::uint64_t address) const;

 private:
  std::vector<std::pair<std::uint64_t, std::uint64_t>> ranges_;
};

struct AccessRecord {
  std::uint64_t address = 0;
  std::uint32_t thread = 0;   // linear thread index in the block
  std::uint32_t ordinal = 0;  // this thread's n-th global access
  std::uint32_t bytes = 0;
  bool write = false;
};

struct BlockTrace {
  const AddressRanges* device = nullptr;
  std::vector<AccessRecord> records;
  std::vector<std::uint32_t> next_ordinal;  // per thread
  std::vector<std::uint32_t> last_load;     // per thread: index into records + 1, 0 = none
  std::vector<std::uint32_t> last_store;
  std::array<std::uint64_t, profile::kOpKinds> ops{};

  void reset(std::uint32_t threads);
  // Appends one access of the current fiber's thread; see access_trace.cpp for the merge rule.
  void note(std::uint64_t address, std::uint32_t bytes, bool write);
};

// Installs `trace` as the recorder of this OS thread (nullptr: none) and returns the previous.
BlockTrace* set_thread_trace(BlockTrace* trace) noexcept;

}  // namespace metrale::host
