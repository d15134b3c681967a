// host/access_trace.hpp: what a profiled host block records: every global access its threads
// make (through the compiler-inserted callbacks of access_trace.cpp), the arithmetic the
// prelude's intrinsics count (profile_counters.hpp) and each thread's asynchronous copy groups.
// Invariants: a trace is installed on one OS thread for one block at a time; only accesses
// inside the launch's device allocations are kept (stack, arguments and the runtime's own
// memory are not device memory); a thread's accesses are numbered in program order (its access
// ordinal), which is how lanes are grouped into one warp-level request.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
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

// One thread's asynchronous copies (profile::async_*). A wait's bytes in flight are those of every
// committed group still pending when it began (what the thread had outstanding while it waited);
// copies not yet committed are not waited on, so not counted. Waits with nothing in flight (the
// empty groups past a pipeline's end) are not counted: they wait on no memory.
struct AsyncCopies {
  std::uint64_t open_bytes = 0;        // issued since the last commit
  std::vector<std::uint64_t> pending;  // committed groups' bytes, oldest first
  std::uint64_t bytes = 0;             // every copy's bytes
  std::uint64_t in_flight_sum = 0;     // summed over the counted waits
  std::uint64_t waits = 0;

  void clear();
  void copy(std::uint32_t n) {
    open_bytes += n;
    bytes += n;
  }
  void commit();
  void wait(std::uint32_t pending_after);
  // Mean bytes in flight at a wait; 0 without one.
  [[nodiscard]] double mean_in_flight() const;
};

struct BlockTrace {
  const AddressRanges* device = nullptr;
  std::vector<AccessRecord> records;
  std::vector<std::uint32_t> next_ordinal;  // per thread
  std::vector<std::uint32_t> last_load;     // per thread: index into records + 1, 0 = none
  std::vector<std::uint32_t> last_store;
  std::array<std::uint64_t, profile::kOpKinds> ops{};
  std::vector<AsyncCopies> async;  // per thread

  void reset(std::uint32_t threads);
  // The current fiber's linear thread index in the block; nullopt outside one of its threads.
  [[nodiscard]] std::optional<std::uint32_t> current_thread() const;
  // The block's bytes in flight at a wait: the sum over its threads of each one's mean.
  [[nodiscard]] double async_in_flight() const;
  [[nodiscard]] std::uint64_t async_bytes() const;
  // Appends one access of the current fiber's thread; see access_trace.cpp for the merge rule.
  void note(std::uint64_t address, std::uint32_t bytes, bool write);
};

// Installs `trace` as the recorder of this OS thread (nullptr: none) and returns the previous.
BlockTrace* set_thread_trace(BlockTrace* trace) noexcept;

}  // namespace metrale::host
