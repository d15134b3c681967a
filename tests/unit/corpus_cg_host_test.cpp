// corpus_cg_host_test.cpp: the cooperative-groups kernels of tests/data/corpus/ (cg_*.cuh),
// written as for nvcc, run unchanged on the host backend through the registry and the host JIT
// (whose <cooperative_groups.h> is metrale/host/cuda_include/), each against a reference written
// here from CUDA's rules; random inputs, outputs poisoned first. A ladder whose tile is too
// narrow for its shuffles shows the reference catches a wrong width; the grid-synchronising
// kernel is refused by name, as the host backend has no cooperative launch.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "data/host/host_test_support.hpp"
#include "metrale/error.hpp"
#include "metrale/gpu/kernel_launch.hpp"
#include "support/corpus_cg_support.hpp"

using corpus_cg_test::HostCorpus;
using metrale::DevicePtr;
using metrale::KernelLaunch;
using metrale_test::download;
using metrale_test::random_ints;
using metrale_test::upload;

namespace {

constexpr int kPoison = 0x7eadbeef;

// Blocks whose ladder sum differs from the reference, for the kernel loaded as `kernel_name` from
// `text` (a backend loads one name once, so another text needs another name).
std::size_t wrong_ladder_blocks(HostCorpus& corpus, const std::string& kernel_name, const std::string& text) {
  constexpr unsigned kBlock = 128;
  constexpr unsigned kBlocks = 9;
  constexpr unsigned kN = 2 * kBlock * kBlocks - 77;  // the last block's tail reads zeros
  const metrale::KernelHandle kernel =
      corpus.load("cg_ladder_tile16.cuh", kernel_name, "corpus_cg::ladder_tile16<128>", text);
  const std::vector<int> in = random_ints<int>(kN, 23, -1000, 1000);
  const DevicePtr din = upload(corpus.gpu(), in);
  const DevicePtr dout = upload(corpus.gpu(), std::vector<int>(kBlocks, kPoison));
  KernelLaunch(corpus.gpu(), kernel)
      .grid({kBlocks, 1, 1})
      .block({kBlock, 1, 1})
      .arg_ptr(din)
      .arg_ptr(dout)
      .arg_u32(kN)
      .launch();
  const std::vector<int> got = download<int>(corpus.gpu(), dout, kBlocks);
  std::size_t wrong = 0;
  for (unsigned b = 0; b < kBlocks; ++b) {
    long long expect = 0;
    for (unsigned i = b * 2 * kBlock; i < std::min(kN, (b + 1) * 2 * kBlock); ++i) {
      expect += in[i];
    }
    wrong += got[b] == expect ? 0 : 1;
  }
  return wrong;
}

std::string replace_all(std::string text, const std::string& from, const std::string& to) {
  for (std::size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
  return text;
}

}  // namespace

TEST_CASE("corpus cg: a grid-stride block sum with cg::reduce over tiled_partition<32>", "[corpus][cg][host][jit]") {
  HostCorpus corpus;
  constexpr unsigned kBlock = 256;
  constexpr unsigned kBlocks = 7;
  constexpr unsigned kN = kBlock * kBlocks * 3 + 45;  // three strides and a ragged tail
  const metrale::KernelHandle kernel =
      corpus.load("cg_block_reduce.cuh", "cg_block_reduce", "corpus_cg::block_reduce<256>");
  const std::vector<float> in = metrale_test::random_floats(kN, 11);
  const DevicePtr din = upload(corpus.gpu(), in);
  const DevicePtr dout = upload(corpus.gpu(), std::vector<float>(kBlocks, std::numeric_limits<float>::quiet_NaN()));
  KernelLaunch(corpus.gpu(), kernel)
      .grid({kBlocks, 1, 1})
      .block({kBlock, 1, 1})
      .arg_ptr(din)
      .arg_ptr(dout)
      .arg_u32(kN)
      .launch();
  const std::vector<float> got = download<float>(corpus.gpu(), dout, kBlocks);
  for (unsigned b = 0; b < kBlocks; ++b) {
    double expect = 0.0;
    double magnitude = 0.0;
    for (unsigned i = b * kBlock; i < kN; i += kBlock * kBlocks) {
      for (unsigned t = 0; t < kBlock && i + t < kN; ++t) {
        expect += in[i + t];
        magnitude += std::fabs(in[i + t]);
      }
    }
    INFO("block " << b);
    CHECK(std::fabs(got[b] - expect) <= 1e-5 * magnitude);
  }
}

TEST_CASE("corpus cg: tile extrema and bits with cg::less, cg::greater and cg::bit_xor", "[corpus][cg][host][jit]") {
  HostCorpus corpus;
  constexpr unsigned kThreads = 96;
  constexpr unsigned kBlocks = 5;
  const std::vector<int> in =
      random_ints<int>(kThreads * kBlocks, 31, std::numeric_limits<int>::min(), std::numeric_limits<int>::max());
  for (const unsigned tile : {8U, 32U}) {
    INFO("tile " << tile);
    const std::string expression = "corpus_cg::tile_extrema<" + std::to_string(tile) + ">";
    const metrale::KernelHandle kernel =
        corpus.load("cg_block_reduce.cuh", "cg_tile_extrema_" + std::to_string(tile), expression);
    const unsigned tiles = kThreads * kBlocks / tile;
    const DevicePtr din = upload(corpus.gpu(), in);
    const DevicePtr lows = upload(corpus.gpu(), std::vector<int>(tiles, kPoison));
    const DevicePtr highs = upload(corpus.gpu(), std::vector<int>(tiles, kPoison));
    const DevicePtr bits = upload(corpus.gpu(), std::vector<unsigned>(tiles, 0xdeadbeefU));
    KernelLaunch(corpus.gpu(), kernel)
        .grid({kBlocks, 1, 1})
        .block({kThreads, 1, 1})
        .arg_ptr(din)
        .arg_ptr(lows)
        .arg_ptr(highs)
        .arg_ptr(bits)
        .launch();
    const std::vector<int> got_low = download<int>(corpus.gpu(), lows, tiles);
    const std::vector<int> got_high = download<int>(corpus.gpu(), highs, tiles);
    const std::vector<unsigned> got_bits = download<unsigned>(corpus.gpu(), bits, tiles);
    std::size_t wrong = 0;
    for (unsigned t = 0; t < tiles; ++t) {
      const auto first = in.begin() + static_cast<std::ptrdiff_t>(t * tile);
      unsigned x = 0;
      std::for_each(first, first + tile, [&x](int v) { x ^= static_cast<unsigned>(v); });
      wrong += got_low[t] == *std::min_element(first, first + tile) ? 0 : 1;
      wrong += got_high[t] == *std::max_element(first, first + tile) ? 0 : 1;
      wrong += got_bits[t] == x ? 0 : 1;
    }
    CHECK(wrong == 0);
  }
}

TEST_CASE("corpus cg: the reduction ladder finished by thread_block_tile<16>::shfl_down", "[corpus][cg][host][jit]") {
  HostCorpus corpus;
  CHECK(wrong_ladder_blocks(corpus, "cg_ladder_tile16", {}) == 0);
  // The mistake the test must see: a tile of 8 where the shuffles' offsets assume 16. shfl_down
  // by 8 then leaves each lane its own value (the source is outside its 8-lane segment).
  const std::string text = corpus_cg_test::corpus_text("cg_ladder_tile16.cuh");
  const std::string narrow = replace_all(replace_all(text, "thread_block_tile<16>", "thread_block_tile<8>"),
                                         "tiled_partition<16>", "tiled_partition<8>");
  REQUIRE(narrow != text);
  CHECK(wrong_ladder_blocks(corpus, "cg_ladder_tile16_planted_tile8", narrow) == 9);
}

TEST_CASE("corpus cg: a warp-aggregated atomic counter over coalesced_threads()", "[corpus][cg][host][jit]") {
  HostCorpus corpus;
  constexpr unsigned kThreads = 64;
  constexpr unsigned kN = 37 * kThreads + 13;
  constexpr unsigned kBlocks = (kN + kThreads - 1) / kThreads;
  const metrale::KernelHandle kernel =
      corpus.load("cg_warp_aggregated.cuh", "cg_compact_positive", "corpus_cg::compact_positive");
  // in[i] = +-(i + 1): a value names the thread that held it.
  const std::vector<int> signs = random_ints<int>(kN, 5, 0, 2);
  std::vector<int> in(kN);
  for (unsigned i = 0; i < kN; ++i) {
    in[i] = signs[i] != 0 ? static_cast<int>(i + 1) : -static_cast<int>(i + 1);
  }
  const DevicePtr din = upload(corpus.gpu(), in);
  const DevicePtr dout = upload(corpus.gpu(), std::vector<int>(kN, kPoison));
  const DevicePtr dcount = upload(corpus.gpu(), std::vector<int>{0});  // the counter starts at zero
  KernelLaunch(corpus.gpu(), kernel)
      .grid({kBlocks, 1, 1})
      .block({kThreads, 1, 1})
      .arg_ptr(din)
      .arg_ptr(dout)
      .arg_ptr(dcount)
      .arg_u32(kN)
      .launch();
  const std::vector<int> out = download<int>(corpus.gpu(), dout, kN);
  const int count = download<int>(corpus.gpu(), dcount, 1)[0];
  const auto positives = static_cast<int>(std::count_if(in.begin(), in.end(), [](int v) { return v > 0; }));
  REQUIRE(count == positives);
  REQUIRE(positives > static_cast<int>(kN) / 4);
  // Where each positive thread's value landed: every one exactly once, nothing past the count.
  std::vector<int> where(kN, -1);
  std::size_t misplaced = 0;
  for (int at = 0; at < static_cast<int>(kN); ++at) {
    const int v = out[static_cast<std::size_t>(at)];
    if (at >= count) {
      misplaced += v == kPoison ? 0 : 1;
    } else if (v < 1 || v > static_cast<int>(kN) || in[static_cast<std::size_t>(v - 1)] != v ||
               where[static_cast<std::size_t>(v - 1)] != -1) {
      ++misplaced;
    } else {
      where[static_cast<std::size_t>(v - 1)] = at;
    }
  }
  CHECK(misplaced == 0);
  // One warp, one reservation: its positive lanes fill one run, in lane order.
  std::size_t broken_runs = 0;
  for (unsigned warp = 0; warp * 32 < kN; ++warp) {
    int next = -1;
    for (unsigned i = warp * 32; i < std::min(kN, warp * 32 + 32); ++i) {
      if (in[i] <= 0) {
        continue;
      }
      broken_runs += next == -1 || where[i] == next ? 0 : 1;
      next = where[i] + 1;
    }
  }
  CHECK(broken_runs == 0);
}

TEST_CASE("corpus cg: tile votes any, all and ballot", "[corpus][cg][host][jit]") {
  HostCorpus corpus;
  constexpr unsigned kThreads = 128;
  constexpr unsigned kBlocks = 4;
  constexpr int kLimit = 0;
  for (const unsigned tile : {8U, 32U}) {
    INFO("tile " << tile);
    const metrale::KernelHandle kernel = corpus.load("cg_tile_vote.cuh", "cg_tile_vote_" + std::to_string(tile),
                                                     "corpus_cg::tile_vote<" + std::to_string(tile) + ">");
    const unsigned tiles = kThreads * kBlocks / tile;
    // Each tile all above the limit, all at or below it, or mixed, so every vote takes both values.
    const std::vector<int> modes = random_ints<int>(tiles, 40 + tile, 0, 2);
    std::vector<int> in = random_ints<int>(kThreads * kBlocks, 41 + tile, -50, 50);
    for (unsigned i = 0; i < in.size(); ++i) {
      const int mode = modes[i / tile];
      in[i] = mode == 0 ? std::abs(in[i]) + 1 : mode == 1 ? -std::abs(in[i]) : in[i];
    }
    const DevicePtr din = upload(corpus.gpu(), in);
    const DevicePtr anys = upload(corpus.gpu(), std::vector<int>(tiles, kPoison));
    const DevicePtr alls = upload(corpus.gpu(), std::vector<int>(tiles, kPoison));
    const DevicePtr ballots = upload(corpus.gpu(), std::vector<unsigned>(tiles, 0xdeadbeefU));
    KernelLaunch(corpus.gpu(), kernel)
        .grid({kBlocks, 1, 1})
        .block({kThreads, 1, 1})
        .arg_ptr(din)
        .arg_i32(kLimit)
        .arg_ptr(anys)
        .arg_ptr(alls)
        .arg_ptr(ballots)
        .launch();
    const std::vector<int> got_any = download<int>(corpus.gpu(), anys, tiles);
    const std::vector<int> got_all = download<int>(corpus.gpu(), alls, tiles);
    const std::vector<unsigned> got_ballot = download<unsigned>(corpus.gpu(), ballots, tiles);
    std::size_t wrong = 0;
    for (unsigned t = 0; t < tiles; ++t) {
      unsigned ballot = 0;
      for (unsigned r = 0; r < tile; ++r) {
        ballot |= in[t * tile + r] > kLimit ? 1U << r : 0U;
      }
      const unsigned full = tile == 32 ? 0xffffffffU : (1U << tile) - 1U;
      wrong += got_ballot[t] == ballot ? 0 : 1;
      wrong += got_any[t] == (ballot != 0 ? 1 : 0) ? 0 : 1;
      wrong += got_all[t] == (ballot == full ? 1 : 0) ? 0 : 1;
    }
    CHECK(wrong == 0);
    CHECK(std::count(modes.begin(), modes.end(), 0) > 0);
    CHECK(std::count(modes.begin(), modes.end(), 1) > 0);
  }
}

TEST_CASE("corpus cg: this_grid().sync() is refused by name without a cooperative launch", "[corpus][cg][host][jit]") {
  HostCorpus corpus;
  const std::string text = corpus_cg_test::corpus_text("cg_grid_sync.cuh");
  const metrale::KernelHandle kernel =
      corpus.load("cg_grid_sync.cuh", "cg_grid_two_phase_sum", "corpus_cg::grid_two_phase_sum");
  const std::size_t at = text.find("grid.sync();");
  REQUIRE(at != std::string::npos);
  const auto line = 1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(at), '\n');
  constexpr unsigned kThreads = 64;
  constexpr unsigned kBlocks = 3;
  const DevicePtr din = upload(corpus.gpu(), metrale_test::random_floats(kThreads * kBlocks, 3));
  const DevicePtr partial = upload(corpus.gpu(), std::vector<float>(kBlocks, -7.0F));
  const DevicePtr out = upload(corpus.gpu(), std::vector<float>{-7.0F});
  auto launch = [&] {
    KernelLaunch(corpus.gpu(), kernel)
        .grid({kBlocks, 1, 1})
        .block({kThreads, 1, 1})
        .arg_ptr(din)
        .arg_ptr(partial)
        .arg_ptr(out)
        .arg_u32(kThreads * kBlocks)
        .launch();
  };
  CHECK_THROWS_AS(launch(), metrale::BackendError);
  CHECK_THROWS_WITH(
      launch(), Catch::Contains("this_grid().sync()") && Catch::Contains("cg_grid_sync.cuh:" + std::to_string(line)) &&
                    Catch::Contains("needs a cooperative launch") && Catch::Contains("kernel cg_grid_two_phase_sum"));
  // Nothing ran past the barrier: the total keeps its poison.
  CHECK(download<float>(corpus.gpu(), out, 1)[0] == -7.0F);
}

TEST_CASE("corpus cg: what the groups say in a 2-D block, and a coalesced group of the odd values",
          "[corpus][cg][host][jit]") {
  HostCorpus corpus;
  constexpr unsigned kFields = 16;  // corpus_cg::kGroupTourFields
  constexpr unsigned kBx = 16;
  constexpr unsigned kBy = 4;
  constexpr unsigned kThreads = kBx * kBy;
  constexpr unsigned kGx = 3;
  constexpr unsigned kGy = 2;
  constexpr unsigned kTotal = kThreads * kGx * kGy;
  for (const unsigned tile : {16U, 32U}) {
    INFO("tile " << tile);
    const metrale::KernelHandle kernel = corpus.load("cg_group_tour.cuh", "cg_group_tour_" + std::to_string(tile),
                                                     "corpus_cg::group_tour<" + std::to_string(tile) + ">");
    const std::vector<int> in = random_ints<int>(kTotal, 60 + tile, -1000, 1000);
    const DevicePtr din = upload(corpus.gpu(), in);
    const DevicePtr dout = upload(corpus.gpu(), std::vector<int>(kTotal * kFields, kPoison));
    KernelLaunch(corpus.gpu(), kernel).grid({kGx, kGy, 1}).block({kBx, kBy, 1}).arg_ptr(din).arg_ptr(dout).launch();
    const std::vector<int> out = download<int>(corpus.gpu(), dout, std::size_t{kTotal} * kFields);
    std::size_t wrong = 0;
    for (unsigned b = 0; b < kGx * kGy; ++b) {
      for (unsigned r = 0; r < kThreads; ++r) {
        const unsigned i = b * kThreads + r;
        const unsigned base = r & ~(tile - 1);  // the tile's first thread in the block
        const auto at = [&](unsigned rank) { return in[b * kThreads + rank]; };
        std::vector<int> expect = {at(base + tile - 1),
                                   r - base >= 1 ? at(r - 1) : at(r),
                                   r - base + 2 < tile ? at(r + 2) : at(r),
                                   at(r ^ 1U),
                                   static_cast<int>(r - base),
                                   static_cast<int>(r / tile * 1000 + kThreads / tile),
                                   static_cast<int>(r % (tile / 2) * 1000 + tile / 2),
                                   static_cast<int>(r * 1000 + kThreads),
                                   static_cast<int>(r / kBx * 1000 + b / kGx),
                                   static_cast<int>(b * 1000 + kGx * kGy * 10)};
        // The coalesced group: the odd values' lanes of this thread's warp, by lane order.
        std::vector<int> odd;
        int rank = -1;
        for (unsigned l = r & ~31U; l < (r & ~31U) + 32; ++l) {
          if (at(l) % 2 != 0) {
            rank = l == r ? static_cast<int>(odd.size()) : rank;
            odd.push_back(at(l));
          }
        }
        if (at(r) % 2 != 0) {
          const auto k = static_cast<std::size_t>(rank);
          unsigned ballot = 0;
          int sum = 0;
          for (std::size_t j = 0; j < odd.size(); ++j) {
            ballot |= odd[j] > 0 ? 1U << j : 0U;
            sum += odd[j];
          }
          expect.insert(expect.end(), {rank, static_cast<int>(odd.size()), sum, static_cast<int>(ballot),
                                       k + 1 < odd.size() ? odd[k + 1] : odd[k], odd[0]});
        } else {
          expect.insert(expect.end(), 6, -1);
        }
        for (unsigned f = 0; f < kFields; ++f) {
          if (out[std::size_t{i} * kFields + f] != expect[f]) {
            UNSCOPED_INFO("block " << b << " thread " << r << " field " << f << ": "
                                   << out[std::size_t{i} * kFields + f] << " != " << expect[f]);
            ++wrong;
          }
        }
      }
    }
    CHECK(wrong == 0);
  }
}
