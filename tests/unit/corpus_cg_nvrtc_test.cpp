// corpus_cg_nvrtc_test.cpp: the cooperative-groups kernels the host backend runs
// (corpus_cg_host_test.cpp) are the same sources NVRTC compiles for sm_80, sm_90 and sm_100 (the
// archs the ordinary corpus cases compile for) through the registry, with the toolkit's own
// <cooperative_groups.h> (no GPU needed). On CUDA 13 that header needs
// libcu++ under include/cccl; corpus_cg_support.hpp passes it until the registry adds it itself.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "jit/compiled_entry.hpp"
#include "support/corpus_cg_support.hpp"

namespace {

struct CorpusVariant {
  const char* file;
  const char* kernel;
  const char* expression;
};

// Every variant corpus_cg_host_test.cpp runs.
const std::vector<CorpusVariant>& cg_variants() {
  static const std::vector<CorpusVariant> variants = {
      {"cg_block_reduce.cuh", "cg_block_reduce", "corpus_cg::block_reduce<256>"},
      {"cg_block_reduce.cuh", "cg_tile_extrema_8", "corpus_cg::tile_extrema<8>"},
      {"cg_block_reduce.cuh", "cg_tile_extrema_32", "corpus_cg::tile_extrema<32>"},
      {"cg_ladder_tile16.cuh", "cg_ladder_tile16", "corpus_cg::ladder_tile16<128>"},
      {"cg_warp_aggregated.cuh", "cg_compact_positive", "corpus_cg::compact_positive"},
      {"cg_tile_vote.cuh", "cg_tile_vote_8", "corpus_cg::tile_vote<8>"},
      {"cg_tile_vote.cuh", "cg_tile_vote_32", "corpus_cg::tile_vote<32>"},
      {"cg_grid_sync.cuh", "cg_grid_two_phase_sum", "corpus_cg::grid_two_phase_sum"},
      {"cg_group_tour.cuh", "cg_group_tour_16", "corpus_cg::group_tour<16>"},
      {"cg_group_tour.cuh", "cg_group_tour_32", "corpus_cg::group_tour<32>"},
      // corpus_host_constructs_test.cpp and corpus_host_cg_wide_test.cpp
      {"arch_guarded.cu", "arch_macros", "corpus_arch::compiler_macros"},
      {"cg_labeled_partition.cuh", "cg_label_sums", "corpus_cg::label_sums"},
      {"cg_multi_warp.cuh", "cg_multi_warp_128_64", "corpus_cg::multi_warp_tile<128, 64>"},
      {"cg_multi_warp.cuh", "cg_multi_warp_256_256", "corpus_cg::multi_warp_tile<256, 256>"},
      {"cg_multi_warp.cuh", "cg_warp_scans", "corpus_cg::warp_scans"},
      {"cg_memcpy_async.cuh", "cg_staged_mirror", "corpus_cg::staged_mirror<64>"},
      {"warp_shuffle_wide.cuh", "shfl_wide", "corpus_shfl::wide_shuffles"},
      // C headers NVRTC lacks (stdio.h, assert.h, string.h, stdint.h, cstdint): jit/nvrtc_c_headers
      {"mixed_includes.cuh", "mixed_axpy_half_scale", "corpus_mixed::axpy_half_scale"},
  };
  return variants;
}

}  // namespace

TEST_CASE(
    "corpus cg: every cooperative-groups kernel compiles with NVRTC for sm_80, sm_90 and sm_100 through the "
    "registry",
    "[corpus][cg][nvrtc]") {
  metrale::SourceSet sources;
  for (const char* file : {"cg_block_reduce.cuh", "cg_ladder_tile16.cuh", "cg_warp_aggregated.cuh", "cg_tile_vote.cuh",
                           "cg_grid_sync.cuh", "cg_group_tour.cuh", "arch_guarded.cu", "cg_labeled_partition.cuh",
                           "cg_multi_warp.cuh", "cg_memcpy_async.cuh", "warp_shuffle_wide.cuh", "mixed_includes.cuh"}) {
    sources.add_source(file, corpus_cg_test::corpus_text(file));
  }
  metrale::KernelRegistry registry(std::move(sources), corpus_cg_test::private_registry_options(/*disk_store=*/true));
  std::vector<metrale::VariantId> ids;
  for (const CorpusVariant& variant : cg_variants()) {
    ids.push_back(registry.declare({variant.kernel, variant.file, variant.expression, {}, false}));
  }
  for (const std::string arch : {"sm_80", "sm_90", "sm_100"}) {
    const std::vector<metrale::BuildRecord> records = registry.build(arch, ids);
    REQUIRE(records.size() == ids.size());
    for (const metrale::BuildRecord& record : records) {
      INFO(record.kernel << " for " << arch);
      REQUIRE(record.entry != nullptr);
      INFO(record.entry->log);
      CHECK(record.ok());
      CHECK(record.arch == arch);
    }
  }
}
