// host/access_trace.cpp: the access callbacks a profiled translation unit calls and the
// per-OS-thread trace they write to.
// The asynchronous copy hooks (profile::async_*) write the same trace, per thread.
// The profiled units are compiled with g++'s kernel AddressSanitizer in outline mode
// (cmake/profiled_host.cmake): every load and store becomes a call to __asan_{load,store}N_noabort
// with its address. No sanitizer runtime is linked for them: the callbacks are defined here and
// only record. They keep the fixed names the compiler emits, so a build under the real
// AddressSanitizer (make sanitize) must not define what its runtime needs: there the runtime's
// __asan_handle_no_return stays, and the _noabort callbacks, which code built with
// -fno-sanitize-recover never calls, are ours.
// Merge rule: g++ may split a 16-byte vector load into word loads, in any order and interleaved
// with the matching stores; a thread's access adjacent to its previous access of the same kind
// (load or store) and inside the same aligned 16-byte window extends it, as the GPU's one vector
// instruction would.
#include "access_trace.hpp"

#include <algorithm>
#include <cstddef>

#include "metrale/host/thread_context.hpp"

namespace metrale::host {
namespace {

thread_local BlockTrace* tls_trace = nullptr;

constexpr std::uint32_t kWidestVector = 16;

void note_access(std::uintptr_t address, std::size_t bytes, bool write) noexcept {
  BlockTrace* trace = tls_trace;
  if (trace != nullptr && bytes != 0) {
    trace->note(address, static_cast<std::uint32_t>(bytes), write);
  }
}

}  // namespace

AddressRanges::AddressRanges(std::vector<std::pair<std::uint64_t, std::uint64_t>> ranges) : ranges_(std::move(ranges)) {
  std::sort(ranges_.begin(), ranges_.end());
}

bool AddressRanges::contains(std::uint64_t address) const {
  auto after = std::upper_bound(ranges_.begin(), ranges_.end(), address,
                                [](std::uint64_t a, const auto& range) { return a < range.first; });
  return after != ranges_.begin() && address < std::prev(after)->second;
}

void AsyncCopies::clear() {
  open_bytes = 0;
  pending.clear();  // keeps its capacity for the next block
  bytes = 0;
  in_flight_sum = 0;
  waits = 0;
}

void AsyncCopies::commit() {
  pending.push_back(open_bytes);
  open_bytes = 0;
}

void AsyncCopies::wait(std::uint32_t pending_after) {
  std::uint64_t in_flight = 0;
  for (std::uint64_t group : pending) {
    in_flight += group;
  }
  if (in_flight != 0) {
    in_flight_sum += in_flight;
    ++waits;
  }
  if (pending.size() > pending_after) {
    pending.erase(pending.begin(), pending.end() - static_cast<std::ptrdiff_t>(pending_after));
  }
}

double AsyncCopies::mean_in_flight() const {
  return waits != 0 ? static_cast<double>(in_flight_sum) / static_cast<double>(waits) : 0.0;
}

void BlockTrace::reset(std::uint32_t threads) {
  records.clear();
  next_ordinal.assign(threads, 0);
  last_load.assign(threads, 0);
  last_store.assign(threads, 0);
  ops.fill(0);
  async.resize(threads);
  for (AsyncCopies& thread : async) {
    thread.clear();
  }
}

std::optional<std::uint32_t> BlockTrace::current_thread() const {
  const detail::FiberCoordinates* coords = detail::current_coordinates;
  if (coords == nullptr) {
    return std::nullopt;
  }
  const std::uint32_t thread =
      coords->thread_idx.x + coords->block_dim.x * (coords->thread_idx.y + coords->block_dim.y * coords->thread_idx.z);
  if (thread >= next_ordinal.size()) {
    return std::nullopt;
  }
  return thread;
}

double BlockTrace::async_in_flight() const {
  double sum = 0;
  for (const AsyncCopies& thread : async) {
    sum += thread.mean_in_flight();
  }
  return sum;
}

std::uint64_t BlockTrace::async_bytes() const {
  std::uint64_t sum = 0;
  for (const AsyncCopies& thread : async) {
    sum += thread.bytes;
  }
  return sum;
}

void BlockTrace::note(std::uint64_t address, std::uint32_t bytes, bool write) {
  if (device == nullptr || !device->contains(address)) {
    return;
  }
  const std::optional<std::uint32_t> current = current_thread();
  if (!current) {
    return;
  }
  const std::uint32_t thread = *current;
  std::uint32_t& last = (write ? last_store : last_load)[thread];
  if (last != 0) {
    AccessRecord& previous = records[last - 1];
    const std::uint32_t total = previous.bytes + bytes;
    const bool after = previous.address + previous.bytes == address;
    const bool before = address + bytes == previous.address;
    const std::uint64_t start = before ? address : previous.address;
    if ((after || before) && start / kWidestVector == (start + total - 1) / kWidestVector) {
      previous.address = start;
      previous.bytes = total;
      return;
    }
  }
  records.push_back({address, thread, next_ordinal[thread]++, bytes, write});
  last = static_cast<std::uint32_t>(records.size());
}

BlockTrace* set_thread_trace(BlockTrace* trace) noexcept { return std::exchange(tls_trace, trace); }

namespace profile {

void count(Op op) noexcept {
  if (BlockTrace* trace = tls_trace) {
    ++trace->ops[static_cast<std::size_t>(op)];
  }
}

namespace {

// The running thread's copy groups in the installed trace; null outside a profiled block.
AsyncCopies* current_async() noexcept {
  BlockTrace* trace = tls_trace;
  if (trace == nullptr) {
    return nullptr;
  }
  const std::optional<std::uint32_t> thread = trace->current_thread();
  return thread ? &trace->async[*thread] : nullptr;
}

}  // namespace

void async_copy(std::uint32_t bytes) noexcept {
  if (AsyncCopies* copies = current_async()) {
    copies->copy(bytes);
  }
}

// A commit appends to a vector: its allocation is the one way these can throw, and a host
// process out of memory there has no better answer than terminate.
void async_commit() noexcept {
  if (AsyncCopies* copies = current_async()) {
    copies->commit();
  }
}

void async_wait(std::uint32_t pending) noexcept {
  if (AsyncCopies* copies = current_async()) {
    copies->wait(pending);
  }
}

void access(std::uintptr_t address, std::size_t bytes, bool write) noexcept { note_access(address, bytes, write); }

}  // namespace profile
}  // namespace metrale::host

// The callbacks g++ emits for -fsanitize=kernel-address with
// --param asan-instrumentation-with-call-threshold=0. Reserved names by necessity.
// NOLINTBEGIN(bugprone-reserved-identifier,readability-identifier-naming)
extern "C" {
#define METRALE_ACCESS_CALLBACKS(n)                                                                        \
  void __asan_load##n##_noabort(std::uintptr_t address) { metrale::host::note_access(address, n, false); } \
  void __asan_store##n##_noabort(std::uintptr_t address) { metrale::host::note_access(address, n, true); }
METRALE_ACCESS_CALLBACKS(1)
METRALE_ACCESS_CALLBACKS(2)
METRALE_ACCESS_CALLBACKS(4)
METRALE_ACCESS_CALLBACKS(8)
METRALE_ACCESS_CALLBACKS(16)
#undef METRALE_ACCESS_CALLBACKS
void __asan_loadN_noabort(std::uintptr_t address, std::size_t bytes) {
  metrale::host::note_access(address, bytes, false);
}
void __asan_storeN_noabort(std::uintptr_t address, std::size_t bytes) {
  metrale::host::note_access(address, bytes, true);
}
#if !defined(__SANITIZE_ADDRESS__)
void __asan_handle_no_return() {}
#endif
}
// NOLINTEND(bugprone-reserved-identifier,readability-identifier-naming)
