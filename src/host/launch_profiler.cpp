// host/launch_profiler.cpp: per-block folding of access records and the grid-wide totals.
#include "launch_profiler.hpp"

#include <algorithm>
#include <tuple>

namespace metrale::host {
namespace {

constexpr std::uint32_t kWarpSize = 32;

struct SectorKey {
  std::uint32_t warp;
  std::uint32_t ordinal;
  bool write;
  std::uint64_t sector;
  friend bool operator<(const SectorKey& a, const SectorKey& b) {
    return std::tie(a.warp, a.ordinal, a.write, a.sector) < std::tie(b.warp, b.ordinal, b.write, b.sector);
  }
  friend bool operator==(const SectorKey&, const SectorKey&) = default;
};

void sort_unique(std::vector<std::uint64_t>& values) {
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
}

}  // namespace

BlockTraffic summarize_block(std::span<const AccessRecord> records) {
  std::vector<SectorKey> keys;
  keys.reserve(records.size());
  BlockTraffic out;
  for (const AccessRecord& record : records) {
    const std::uint64_t first = record.address / kSectorBytes;
    const std::uint64_t last = (record.address + record.bytes - 1) / kSectorBytes;
    for (std::uint64_t sector = first; sector <= last; ++sector) {
      keys.push_back({record.thread / kWarpSize, record.ordinal, record.write, sector});
      (record.write ? out.written_sectors : out.read_sectors).push_back(sector);
    }
  }
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const SectorKey& key = keys[i];
    const bool new_request =
        i == 0 || keys[i - 1].warp != key.warp || keys[i - 1].ordinal != key.ordinal || keys[i - 1].write != key.write;
    (key.write ? out.store_sectors : out.load_sectors) += 1;
    if (new_request) {
      (key.write ? out.store_requests : out.load_requests) += 1;
    }
  }
  sort_unique(out.read_sectors);
  sort_unique(out.written_sectors);
  return out;
}

LaunchProfiler::LaunchProfiler(const AddressRanges& device, const GridSample& sample, const Dim3& block,
                               unsigned workers)
    : device_(device), sample_(sample), block_(block), workers_(workers) {}

void LaunchProfiler::begin_block(unsigned worker, std::uint64_t /*linear_block*/, const Dim3& block_idx) {
  Worker& slot = workers_.at(worker);
  slot.trace.device = &device_;
  slot.trace.reset(static_cast<std::uint32_t>(block_.volume()));
  slot.combo = sample_.combo_mask(block_idx);
  set_thread_trace(&slot.trace);
}

void LaunchProfiler::end_block(unsigned worker, std::uint64_t /*linear_block*/) {
  set_thread_trace(nullptr);
  Worker& slot = workers_.at(worker);
  const BlockTraffic block = summarize_block(slot.trace.records);
  slot.totals.load_requests += block.load_requests;
  slot.totals.store_requests += block.store_requests;
  slot.totals.load_sectors += block.load_sectors;
  slot.totals.store_sectors += block.store_sectors;
  slot.l2_read_sectors += block.read_sectors.size();
  slot.l2_written_sectors += block.written_sectors.size();
  for (std::size_t op = 0; op < slot.ops.size(); ++op) {
    slot.ops[op] += slot.trace.ops[op];
  }
  slot.async_bytes += slot.trace.async_bytes();
  slot.async_in_flight += slot.trace.async_in_flight();
  ++slot.blocks;
  for (std::uint64_t sector : block.read_sectors) {
    slot.sectors[sector] |= slot.combo;
  }
  for (std::uint64_t sector : block.written_sectors) {
    slot.sectors[sector] |= static_cast<std::uint16_t>(slot.combo << 8U);
  }
}

// One 16x16x16 MMA: 16^3 multiply-adds.
constexpr double kTileMmaFlops = 2.0 * 16 * 16 * 16;

LaunchTraffic LaunchProfiler::finish(std::string kernel, const Dim3& grid) const {
  LaunchTraffic out;
  out.kernel = std::move(kernel);
  out.grid = grid;
  out.block = block_;
  out.total_blocks = sample_.total_blocks;
  out.sampled_blocks = sample_.sampled_blocks;
  const double scale = sample_.block_scale();
  std::unordered_map<std::uint64_t, std::uint16_t> sectors;
  std::array<std::uint64_t, profile::kOpKinds> ops{};
  double l2_read = 0, l2_written = 0;
  double async_bytes = 0, async_in_flight = 0, blocks = 0;
  for (const Worker& slot : workers_) {
    async_bytes += static_cast<double>(slot.async_bytes);
    async_in_flight += slot.async_in_flight;
    blocks += static_cast<double>(slot.blocks);
    out.load_requests += static_cast<double>(slot.totals.load_requests);
    out.store_requests += static_cast<double>(slot.totals.store_requests);
    out.load_sectors += static_cast<double>(slot.totals.load_sectors);
    out.store_sectors += static_cast<double>(slot.totals.store_sectors);
    l2_read += static_cast<double>(slot.l2_read_sectors);
    l2_written += static_cast<double>(slot.l2_written_sectors);
    for (std::size_t op = 0; op < ops.size(); ++op) {
      ops[op] += slot.ops[op];
    }
    for (const auto& [sector, combos] : slot.sectors) {
      sectors[sector] |= combos;
    }
  }
  out.load_requests *= scale;
  out.store_requests *= scale;
  out.load_sectors *= scale;
  out.store_sectors *= scale;
  out.l2_read_bytes = l2_read * kSectorBytes * scale;
  out.l2_write_bytes = l2_written * kSectorBytes * scale;
  std::array<std::uint64_t, 8> read_per_combo{}, written_per_combo{};
  for (const auto& [sector, combos] : sectors) {
    for (unsigned combo = 0; combo < 8; ++combo) {
      read_per_combo[combo] += (combos >> combo) & 1U;
      written_per_combo[combo] += (combos >> (combo + 8)) & 1U;
    }
  }
  out.dram_read_bytes = sample_.extrapolate_distinct(read_per_combo) * kSectorBytes;
  out.dram_write_bytes = sample_.extrapolate_distinct(written_per_combo) * kSectorBytes;
  auto op = [&](profile::Op kind) { return static_cast<double>(ops[static_cast<std::size_t>(kind)]) * scale; };
  out.fma = op(profile::Op::kFma);
  out.flops = 2 * out.fma + op(profile::Op::kAdd) + op(profile::Op::kMul) + op(profile::Op::kDiv);
  out.special_functions = op(profile::Op::kSpecial);
  out.shuffles = op(profile::Op::kShuffle);
  out.votes = op(profile::Op::kVote);
  out.tensor_flops = op(profile::Op::kTileMma) * kTileMmaFlops;
  out.async_bytes = async_bytes * scale;
  out.async_in_flight_bytes = blocks > 0 ? async_in_flight / blocks : 0.0;
  return out;
}

}  // namespace metrale::host
