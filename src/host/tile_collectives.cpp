// host/tile_collectives.cpp: the wmma emulation's collective bodies. Each runs once per warp,
// on the scheduler's stack while all 32 lanes are suspended, so it may read and write every
// lane's fragment. The private per-lane layout: lane l holds elements 8l .. 8l+7 of its tile in
// the order A[r][c] (r major), B[k][n] (k major), D[r][c] (r major); bf16 element 2j is the low
// half of word j. Kernels never see this: they only pass fragments back to these functions.
#include <fmt/format.h>

#include <atomic>
#include <bit>
#include <cmath>
#include <cstring>
#include <string>

#include "metrale/host/thread_context.hpp"

namespace metrale::host {
namespace {

constexpr std::uint32_t kTile = 16;
constexpr std::uint32_t kPerLane = 8;
constexpr std::uint32_t kLanes = 32;

// One lane's operands; `value` of its WarpSyncRequest points here (on the lane's fiber stack).
struct LaneOperands {
  const void* src = nullptr;  // memory tile (loads) or fragment A (mma)
  void* dst = nullptr;        // fragment (loads, mma) or memory tile (store)
  const void* b = nullptr;    // mma: fragment B
  const void* c = nullptr;    // mma: fragment C; store: fragment D
  std::uint32_t ldm = 0;
};

std::atomic<std::uint64_t> g_tile_mmas{0};

const LaneOperands& lane(void* const* operands, std::uint32_t index) {
  return *static_cast<const LaneOperands*>(operands[index]);
}

float bf16_bits_to_float(std::uint32_t bits16) { return std::bit_cast<float>(bits16 << 16); }

// The memory tile a lane named: the source of a load, the destination of a store.
const void* memory_tile(const LaneOperands& operands, bool store) { return store ? operands.dst : operands.src; }

// "" when every lane named the same tile and ldm, the tile is 32-byte aligned and ldm a whole
// number of 16-byte rows of at least 16 elements; else the rule the warp broke.
std::string check_memory_tile(void* const* operands, bool store, std::uint32_t element_bytes) {
  const LaneOperands& first = lane(operands, 0);
  const void* tile = memory_tile(first, store);
  for (std::uint32_t l = 1; l < kLanes; ++l) {
    const LaneOperands& other = lane(operands, l);
    if (memory_tile(other, store) != tile || other.ldm != first.ldm) {
      return fmt::format("lane {} passed tile {} ldm {}, lane 0 tile {} ldm {}: both must be warp-uniform", l,
                         memory_tile(other, store), other.ldm, tile, first.ldm);
    }
  }
  if (reinterpret_cast<std::uintptr_t>(tile) % 32 != 0) {
    return fmt::format("tile address {} is not 32-byte aligned", tile);
  }
  if (first.ldm < kTile || (first.ldm * element_bytes) % 16 != 0) {
    return fmt::format("ldm {} must be >= 16 and a multiple of {} elements (16 bytes)", first.ldm, 16 / element_bytes);
  }
  return {};
}

// Gathers a bf16 operand tile: element (i, j) (A: row, col; B: k, n) is at tile[i * ldm + j]
// when `i_major`, else at tile[j * ldm + i].
std::string load_bf16(void* const* operands, bool i_major) {
  const LaneOperands& first = lane(operands, 0);
  if (std::string problem = check_memory_tile(operands, false, 2); !problem.empty()) {
    return problem;
  }
  const auto* tile = static_cast<const std::uint16_t*>(first.src);
  const std::uint32_t ldm = first.ldm;
  for (std::uint32_t l = 0; l < kLanes; ++l) {
    auto* words = static_cast<std::uint32_t*>(lane(operands, l).dst);
    for (std::uint32_t w = 0; w < kPerLane / 2; ++w) {
      std::uint32_t packed = 0;
      for (std::uint32_t half = 0; half < 2; ++half) {
        const std::uint32_t e = l * kPerLane + 2 * w + half;
        const std::uint32_t i = e / kTile;
        const std::uint32_t j = e % kTile;
        const std::size_t at = i_major ? std::size_t{i} * ldm + j : std::size_t{j} * ldm + i;
        packed |= std::uint32_t{tile[at]} << (16 * half);
      }
      words[w] = packed;
    }
  }
  return {};
}

std::string load_a_row(void* const* operands) { return load_bf16(operands, true); }   // A[r][c] at r*ldm + c
std::string load_b_col(void* const* operands) { return load_bf16(operands, false); }  // B[k][n] at n*ldm + k

std::string mma(void* const* operands) {
  float a[kTile][kTile];
  float b[kTile][kTile];
  float c[kTile][kTile];
  for (std::uint32_t l = 0; l < kLanes; ++l) {
    const LaneOperands& ops = lane(operands, l);
    const auto* a_words = static_cast<const std::uint32_t*>(ops.src);
    const auto* b_words = static_cast<const std::uint32_t*>(ops.b);
    const auto* c_vals = static_cast<const float*>(ops.c);
    for (std::uint32_t i = 0; i < kPerLane; ++i) {
      const std::uint32_t e = l * kPerLane + i;
      const std::uint32_t shift = 16 * (i % 2);
      a[e / kTile][e % kTile] = bf16_bits_to_float((a_words[i / 2] >> shift) & 0xffffU);
      b[e / kTile][e % kTile] = bf16_bits_to_float((b_words[i / 2] >> shift) & 0xffffU);
      c[e / kTile][e % kTile] = c_vals[i];
    }
  }
  for (std::uint32_t l = 0; l < kLanes; ++l) {
    auto* d = static_cast<float*>(lane(operands, l).dst);
    for (std::uint32_t i = 0; i < kPerLane; ++i) {
      const std::uint32_t e = l * kPerLane + i;
      const std::uint32_t r = e / kTile;
      const std::uint32_t col = e % kTile;
      float acc = c[r][col];
      for (std::uint32_t k = 0; k < kTile; ++k) {
        acc = std::fma(a[r][k], b[k][col], acc);
      }
      d[i] = acc;
    }
  }
  record_tile_mma();
  return {};
}

std::string store_row(void* const* operands) {
  const LaneOperands& first = lane(operands, 0);
  if (std::string problem = check_memory_tile(operands, true, 4); !problem.empty()) {
    return problem;
  }
  auto* tile = static_cast<float*>(first.dst);
  for (std::uint32_t l = 0; l < kLanes; ++l) {
    const auto* d = static_cast<const float*>(lane(operands, l).c);
    for (std::uint32_t i = 0; i < kPerLane; ++i) {
      const std::uint32_t e = l * kPerLane + i;
      tile[std::size_t{e / kTile} * first.ldm + e % kTile] = d[i];
    }
  }
  return {};
}

void arrive(TileCollectiveFn body, LaneOperands& operands, const ::metrale::host::CallSite& site) {
  WarpSyncRequest request;
  request.op = WarpOp::kTile;
  request.mask = 0xffffffffU;
  request.value = static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(&operands));
  request.width = static_cast<std::int32_t>(kLanes);
  request.site = site;
  request.tile = body;
  warp_sync(request);
}

}  // namespace

void tile_load_a_bf16_row(TileBf16Fragment& a, const void* tile, std::uint32_t ldm, ::metrale::host::CallSite site) {
  LaneOperands operands{tile, a, nullptr, nullptr, ldm};
  arrive(&load_a_row, operands, site);
}

void tile_load_b_bf16_col(TileBf16Fragment& b, const void* tile, std::uint32_t ldm, ::metrale::host::CallSite site) {
  LaneOperands operands{tile, b, nullptr, nullptr, ldm};
  arrive(&load_b_col, operands, site);
}

void tile_mma_bf16_f32(TileF32Fragment& d, const TileBf16Fragment& a, const TileBf16Fragment& b,
                       const TileF32Fragment& c, ::metrale::host::CallSite site) {
  // d may alias c: the body reads every C before it writes any D.
  LaneOperands operands{a, d, b, c, 0};
  arrive(&mma, operands, site);
}

void tile_store_f32_row(float* tile, const TileF32Fragment& d, std::uint32_t ldm, ::metrale::host::CallSite site) {
  LaneOperands operands{nullptr, tile, nullptr, d, ldm};
  arrive(&store_row, operands, site);
}

void record_tile_mma() { g_tile_mmas.fetch_add(1, std::memory_order_relaxed); }

std::uint64_t tile_mma_count() { return g_tile_mmas.load(std::memory_order_relaxed); }

}  // namespace metrale::host
