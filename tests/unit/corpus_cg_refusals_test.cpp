// corpus_cg_refusals_test.cpp: what the host backend's cooperative groups refuse, each by name:
// a static tile wider than 1024 threads is a compile error of the host JIT (an absent handle whose
// reason quotes the rule), a dynamic tiled_partition of a size that is not a power of two up to
// 32 stops the launch naming the size. (this_grid().sync() without a cooperative launch is
// corpus_cg_host_test.cpp's.)
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "data/host/host_test_support.hpp"
#include "metrale/error.hpp"
#include "metrale/gpu/kernel_launch.hpp"
#include "support/corpus_cg_support.hpp"

namespace {

// A tile wider than any block (CUDA's multi-warp tiles stop at 1024): one value per tile rank.
constexpr const char* kWideTile = R"(#include <cooperative_groups.h>
namespace cg = cooperative_groups;
__global__ void wide_tile(int* out) {
  cg::thread_block_tile<2048> tile = cg::tiled_partition<2048>(cg::this_thread_block());
  out[threadIdx.x] = static_cast<int>(tile.thread_rank());
}
)";

constexpr const char* kDynamicTile = R"(#include <cooperative_groups.h>
namespace cg = cooperative_groups;
__global__ void dynamic_tile(int* out, unsigned size) {
  cg::thread_group tile = cg::tiled_partition(cg::this_thread_block(), size);
  out[threadIdx.x] = static_cast<int>(tile.thread_rank() * 100 + tile.size());
}
)";

}  // namespace

TEST_CASE("corpus cg: a static tile wider than 1024 threads is refused by the host JIT, naming the rule",
          "[corpus][cg][host][jit]") {
  corpus_cg_test::HostCorpus corpus;
  const auto loaded = corpus.try_load("wide_tile.cuh", "cg_wide_tile", "wide_tile", kWideTile);
  CHECK_FALSE(loaded.handle.present());
  CHECK_THAT(loaded.reason, Catch::Contains("host JIT of cg_wide_tile") &&
                                Catch::Contains("Size must be a power of two up to 1024") &&
                                Catch::Contains("wide_tile.cuh:4"));
}

TEST_CASE("corpus cg: a dynamic tiled_partition runs, and one of 48 threads stops the launch by name",
          "[corpus][cg][host][jit]") {
  corpus_cg_test::HostCorpus corpus;
  const metrale::KernelHandle kernel = corpus.load("dynamic_tile.cuh", "cg_dynamic_tile", "dynamic_tile", kDynamicTile);
  constexpr unsigned kThreads = 80;  // two whole warps and half of one: its tiles stop at the block's end
  const metrale::DevicePtr out = metrale_test::upload(corpus.gpu(), std::vector<int>(kThreads, -1));
  auto launch = [&](unsigned size) {
    metrale::KernelLaunch(corpus.gpu(), kernel)
        .grid({1, 1, 1})
        .block({kThreads, 1, 1})
        .arg_ptr(out)
        .arg_u32(size)
        .launch();
  };
  launch(8);
  const std::vector<int> got = metrale_test::download<int>(corpus.gpu(), out, kThreads);
  for (unsigned t = 0; t < kThreads; ++t) {
    INFO("thread " << t);
    CHECK(got[t] == static_cast<int>(t % 8 * 100 + 8));
  }
  CHECK_THROWS_WITH(launch(48), Catch::Contains("kernel cg_dynamic_tile") &&
                                    Catch::Contains("tiled_partition(group, 48)") &&
                                    Catch::Contains("power of two up to 32"));
}
