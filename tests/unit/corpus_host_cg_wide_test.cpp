// corpus_host_cg_wide_test.cpp: the cooperative-groups and warp constructs beyond one warp and 32
// bits, run on the host backend from tests/data/corpus/ (cg_multi_warp.cuh, warp_shuffle_wide.cuh,
// cg_memcpy_async.cuh): multi-warp tiles over a block_tile_memory, the scans, memcpy_async + wait,
// and shuffles of 8-, 16- and 24-byte values and of __half2 and __nv_bfloat162. Random inputs,
// outputs poisoned first, references written here from CUDA's rules.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "data/host/host_test_support.hpp"
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

// Mismatches of multi_warp_tile<kBlock, Tile> against the reference.
template <unsigned kBlock, unsigned kTile>
std::size_t wrong_multi_warp(HostCorpus& corpus) {
  constexpr unsigned kBlocks = 3;
  constexpr unsigned kN = kBlock * kBlocks;
  constexpr unsigned kTiles = kN / kTile;
  constexpr int kLimit = 990;
  const std::string expression =
      "corpus_cg::multi_warp_tile<" + std::to_string(kBlock) + ", " + std::to_string(kTile) + ">";
  const metrale::KernelHandle kernel = corpus.load(
      "cg_multi_warp.cuh", "cg_multi_warp_" + std::to_string(kBlock) + "_" + std::to_string(kTile), expression);
  const std::vector<int> in = random_ints<int>(kN, 80 + kTile, -1000, 1000);
  const DevicePtr din = upload(corpus.gpu(), in);
  const DevicePtr sums = upload(corpus.gpu(), std::vector<int>(kTiles, kPoison));
  const DevicePtr flags = upload(corpus.gpu(), std::vector<int>(kTiles, kPoison));
  const DevicePtr rotated = upload(corpus.gpu(), std::vector<int>(kN, kPoison));
  const DevicePtr inclusive = upload(corpus.gpu(), std::vector<int>(kN, kPoison));
  const DevicePtr exclusive = upload(corpus.gpu(), std::vector<int>(kN, kPoison));
  KernelLaunch(corpus.gpu(), kernel)
      .grid({kBlocks, 1, 1})
      .block({kBlock, 1, 1})
      .arg_ptr(din)
      .arg_ptr(sums)
      .arg_ptr(flags)
      .arg_ptr(rotated)
      .arg_ptr(inclusive)
      .arg_ptr(exclusive)
      .arg_i32(kLimit)
      .launch();
  const std::vector<int> got_sums = download<int>(corpus.gpu(), sums, kTiles);
  const std::vector<int> got_flags = download<int>(corpus.gpu(), flags, kTiles);
  const std::vector<int> got_rotated = download<int>(corpus.gpu(), rotated, kN);
  const std::vector<int> got_inclusive = download<int>(corpus.gpu(), inclusive, kN);
  const std::vector<int> got_exclusive = download<int>(corpus.gpu(), exclusive, kN);
  std::size_t wrong = 0;
  for (unsigned t = 0; t < kTiles; ++t) {
    int sum = 0;
    int any = 0;
    int all = 1;
    for (unsigned r = 0; r < kTile; ++r) {
      const unsigned i = t * kTile + r;
      wrong += got_exclusive[i] == sum ? 0 : 1;
      sum += in[i];
      wrong += got_inclusive[i] == sum ? 0 : 1;
      wrong += got_rotated[i] == in[t * kTile + (r + 37) % kTile] ? 0 : 1;
      any |= in[i] > kLimit ? 1 : 0;
      all &= in[i] > -kLimit ? 1 : 0;
    }
    wrong += got_sums[t] == sum ? 0 : 1;
    wrong += got_flags[t] == any * 2 + all ? 0 : 1;
  }
  return wrong;
}

}  // namespace

TEST_CASE("host constructs: multi-warp tiles of 64 and 256 over a block_tile_memory reduce shfl vote and scan",
          "[corpus][host][jit][constructs][cg]") {
  HostCorpus corpus;
  CHECK(wrong_multi_warp<128, 64>(corpus) == 0);
  CHECK(wrong_multi_warp<256, 256>(corpus) == 0);
}

TEST_CASE("host constructs: a multi-warp tile of a block that is not a multiple of it is refused by name",
          "[corpus][host][jit][constructs][cg]") {
  HostCorpus corpus;
  const metrale::KernelHandle kernel =
      corpus.load("cg_multi_warp.cuh", "cg_multi_warp_ragged", "corpus_cg::multi_warp_tile<256, 64>");
  const DevicePtr buffer = upload(corpus.gpu(), std::vector<int>(1024, 1));
  auto launch = [&] {
    KernelLaunch(corpus.gpu(), kernel)
        .grid({1, 1, 1})
        .block({96, 1, 1})
        .arg_ptr(buffer)
        .arg_ptr(buffer)
        .arg_ptr(buffer)
        .arg_ptr(buffer)
        .arg_ptr(buffer)
        .arg_ptr(buffer)
        .arg_i32(0)
        .launch();
  };
  CHECK_THROWS_WITH(launch(), Catch::Contains("tiled_partition<64>(block)") && Catch::Contains("a multiple of 64") &&
                                  Catch::Contains("96 threads"));
}

TEST_CASE("host constructs: inclusive_scan over a 16-lane tile and exclusive_scan over a coalesced group",
          "[corpus][host][jit][constructs][cg]") {
  HostCorpus corpus;
  constexpr unsigned kThreads = 96;
  constexpr unsigned kBlocks = 2;
  constexpr unsigned kN = kThreads * kBlocks;
  const metrale::KernelHandle kernel = corpus.load("cg_multi_warp.cuh", "cg_warp_scans", "corpus_cg::warp_scans");
  const std::vector<int> in = random_ints<int>(kN, 90, -1000, 1000);
  const DevicePtr din = upload(corpus.gpu(), in);
  const DevicePtr tile_max = upload(corpus.gpu(), std::vector<int>(kN, kPoison));
  const DevicePtr odd = upload(corpus.gpu(), std::vector<int>(kN, kPoison));
  KernelLaunch(corpus.gpu(), kernel)
      .grid({kBlocks, 1, 1})
      .block({kThreads, 1, 1})
      .arg_ptr(din)
      .arg_ptr(tile_max)
      .arg_ptr(odd)
      .launch();
  const std::vector<int> got_max = download<int>(corpus.gpu(), tile_max, kN);
  const std::vector<int> got_odd = download<int>(corpus.gpu(), odd, kN);
  std::size_t wrong = 0;
  for (unsigned i = 0; i < kN; ++i) {
    const unsigned first = i & ~15U;
    wrong += got_max[i] == *std::max_element(in.begin() + first, in.begin() + i + 1) ? 0 : 1;
    int before = 0;
    for (unsigned l = i & ~31U; l < i; ++l) {
      before += in[l] % 2 != 0 ? in[l] : 0;
    }
    wrong += got_odd[i] == (in[i] % 2 != 0 ? before : -1) ? 0 : 1;
  }
  CHECK(wrong == 0);
}

TEST_CASE("host constructs: memcpy_async and wait stage a block's slice in shared memory",
          "[corpus][host][jit][constructs][cg]") {
  HostCorpus corpus;
  constexpr unsigned kBlock = 64;
  constexpr unsigned kBlocks = 4;
  const metrale::KernelHandle kernel =
      corpus.load("cg_memcpy_async.cuh", "cg_staged_mirror", "corpus_cg::staged_mirror<64>");
  const std::vector<float> in = metrale_test::random_floats(kBlock * kBlocks, 91);
  const DevicePtr din = upload(corpus.gpu(), in);
  const DevicePtr dout =
      upload(corpus.gpu(), std::vector<float>(kBlock * kBlocks, std::numeric_limits<float>::quiet_NaN()));
  KernelLaunch(corpus.gpu(), kernel).grid({kBlocks, 1, 1}).block({kBlock, 1, 1}).arg_ptr(din).arg_ptr(dout).launch();
  const std::vector<float> got = download<float>(corpus.gpu(), dout, kBlock * kBlocks);
  std::size_t wrong = 0;
  for (unsigned b = 0; b < kBlocks; ++b) {
    for (unsigned t = 0; t < kBlock; ++t) {
      wrong += got[b * kBlock + t] == in[b * kBlock + kBlock - 1 - t] * 2.0F ? 0 : 1;
    }
  }
  CHECK(wrong == 0);
}

TEST_CASE("host constructs: shuffles of uint4 double __half2 __nv_bfloat162 and a 24-byte struct",
          "[corpus][host][jit][constructs]") {
  HostCorpus corpus;
  constexpr unsigned kThreads = 64;
  constexpr unsigned kBlocks = 2;
  constexpr unsigned kN = kThreads * kBlocks;
  constexpr int kLaneMask = 5;
  struct Triple {
    double a;
    float b;
    int c;
    long long d;
  };
  const metrale::KernelHandle kernel = corpus.load("warp_shuffle_wide.cuh", "shfl_wide", "corpus_shfl::wide_shuffles");
  // Random bits for every type: the shuffles move bytes, so the references compare bytes.
  const std::vector<std::uint32_t> words4 = random_ints<std::uint32_t>(4 * kN, 92, 0, 0xffffffffU);
  const std::vector<double> doubles = [&] {
    std::vector<double> d(kN);
    const std::vector<float> f = metrale_test::random_floats(kN, 93);
    std::transform(f.begin(), f.end(), d.begin(), [](float v) { return static_cast<double>(v) / 3.0; });
    return d;
  }();
  const std::vector<std::uint32_t> halves = random_ints<std::uint32_t>(kN, 94, 0, 0x7bff7bffU);
  const std::vector<std::uint32_t> bfloats = random_ints<std::uint32_t>(kN, 95, 0, 0x7f007f00U);
  std::vector<Triple> triples(kN);
  const std::vector<int> ints = random_ints<int>(3 * kN, 96, -100000, 100000);
  for (unsigned i = 0; i < kN; ++i) {
    triples[i] = {ints[3 * i] / 7.0, static_cast<float>(ints[3 * i + 1]), ints[3 * i + 2],
                  static_cast<long long>(ints[3 * i]) << 20};
  }
  const DevicePtr in4 = upload(corpus.gpu(), words4);
  const DevicePtr out4 = upload(corpus.gpu(), std::vector<std::uint32_t>(4 * kN, 0xdeadbeefU));
  const DevicePtr ind = upload(corpus.gpu(), doubles);
  const DevicePtr outd = upload(corpus.gpu(), std::vector<double>(kN, -7.0));
  const DevicePtr inh = upload(corpus.gpu(), halves);
  const DevicePtr outh = upload(corpus.gpu(), std::vector<std::uint32_t>(kN, 0xdeadbeefU));
  const DevicePtr inb = upload(corpus.gpu(), bfloats);
  const DevicePtr outb = upload(corpus.gpu(), std::vector<std::uint32_t>(kN, 0xdeadbeefU));
  const DevicePtr int3 = upload(corpus.gpu(), triples);
  const DevicePtr outt = upload(corpus.gpu(), std::vector<Triple>(kN, Triple{-1.0, -1.0F, -1, -1}));
  KernelLaunch(corpus.gpu(), kernel)
      .grid({kBlocks, 1, 1})
      .block({kThreads, 1, 1})
      .arg_ptr(in4)
      .arg_ptr(out4)
      .arg_ptr(ind)
      .arg_ptr(outd)
      .arg_ptr(inh)
      .arg_ptr(outh)
      .arg_ptr(inb)
      .arg_ptr(outb)
      .arg_ptr(int3)
      .arg_ptr(outt)
      .arg_i32(kLaneMask)
      .launch();
  const std::vector<std::uint32_t> got4 = download<std::uint32_t>(corpus.gpu(), out4, 4 * kN);
  const std::vector<double> gotd = download<double>(corpus.gpu(), outd, kN);
  const std::vector<std::uint32_t> goth = download<std::uint32_t>(corpus.gpu(), outh, kN);
  const std::vector<std::uint32_t> gotb = download<std::uint32_t>(corpus.gpu(), outb, kN);
  const std::vector<Triple> gott = download<Triple>(corpus.gpu(), outt, kN);
  std::size_t wrong = 0;
  for (unsigned i = 0; i < kN; ++i) {
    const unsigned src = i ^ static_cast<unsigned>(kLaneMask);
    for (unsigned w = 0; w < 4; ++w) {
      wrong += got4[4 * i + w] == words4[4 * src + w] ? 0 : 1;
    }
    wrong += gotd[i] == doubles[src] ? 0 : 1;
    wrong += goth[i] == halves[src] ? 0 : 1;
    wrong += gotb[i] == bfloats[src] ? 0 : 1;
    const Triple& want = i % 16 + 3 < 16 ? triples[i + 3] : triples[i];
    wrong += std::memcmp(&gott[i], &want, sizeof(Triple)) == 0 ? 0 : 1;
  }
  CHECK(wrong == 0);
}
