// corpus_host_constructs_test.cpp: CUDA constructs engines write that the host backend must run
// as the GPU does (tests/data/corpus/): the compiler macros of the device pass (__CUDA_ARCH__ as
// the backend's capability, __CUDACC__, __CUDACC_RTC__ as NVRTC: arch_guarded.cu, whose body under
// `#if __CUDA_ARCH__ >= 700` is also the corpus table's case arch_guarded_scale), labeled_partition
// under that guard, and a kernel keeping a .cu file's includes (<cuda_runtime.h>, C headers).
// Random inputs, outputs poisoned first, references written here.
#include <catch2/catch.hpp>
#include <cstdint>
#include <limits>
#include <map>
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

std::vector<int> compiler_macros(HostCorpus& corpus, const std::string& name) {
  const metrale::KernelHandle kernel = corpus.load("arch_guarded.cu", name, "corpus_arch::compiler_macros");
  const DevicePtr out = upload(corpus.gpu(), std::vector<int>(4, kPoison));
  KernelLaunch(corpus.gpu(), kernel).grid({1, 1, 1}).block({32, 1, 1}).arg_ptr(out).launch();
  return download<int>(corpus.gpu(), out, 4);
}

}  // namespace

TEST_CASE("host constructs: __CUDA_ARCH__ is the backend's capability and __CUDACC__ __CUDACC_RTC__ are defined",
          "[corpus][host][jit][constructs]") {
  HostCorpus sm90;
  CHECK(compiler_macros(sm90, "arch_macros_90") == std::vector<int>{900, 1, 1, 0});
  HostCorpus sm80(metrale::ComputeCapability{8, 0});
  CHECK(compiler_macros(sm80, "arch_macros_80") == std::vector<int>{800, 1, 1, 0});
}

TEST_CASE("host constructs: labeled_partition groups a warp's lanes by label", "[corpus][host][jit][constructs][cg]") {
  HostCorpus corpus;
  constexpr unsigned kThreads = 96;
  constexpr unsigned kBlocks = 3;
  constexpr unsigned kN = kThreads * kBlocks;
  const metrale::KernelHandle kernel =
      corpus.load("cg_labeled_partition.cuh", "cg_label_sums", "corpus_cg::label_sums");
  // Few labels, some negative, so every warp has groups of several lanes and of one.
  const std::vector<int> labels = random_ints<int>(kN, 72, -2, 3);
  const std::vector<int> values = random_ints<int>(kN, 73, -1000, 1000);
  const DevicePtr dlabels = upload(corpus.gpu(), labels);
  const DevicePtr dvalues = upload(corpus.gpu(), values);
  const DevicePtr dsums = upload(corpus.gpu(), std::vector<int>(kN, kPoison));
  const DevicePtr dranks = upload(corpus.gpu(), std::vector<int>(kN, kPoison));
  KernelLaunch(corpus.gpu(), kernel)
      .grid({kBlocks, 1, 1})
      .block({kThreads, 1, 1})
      .arg_ptr(dlabels)
      .arg_ptr(dvalues)
      .arg_ptr(dsums)
      .arg_ptr(dranks)
      .launch();
  const std::vector<int> sums = download<int>(corpus.gpu(), dsums, kN);
  const std::vector<int> ranks = download<int>(corpus.gpu(), dranks, kN);
  std::size_t wrong = 0;
  for (unsigned warp = 0; warp < kN / 32; ++warp) {
    std::map<int, int> sum;
    std::map<int, int> size;
    for (unsigned i = warp * 32; i < warp * 32 + 32; ++i) {
      sum[labels[i]] += values[i];
      ++size[labels[i]];
    }
    std::map<int, int> seen;
    for (unsigned i = warp * 32; i < warp * 32 + 32; ++i) {
      const int rank = seen[labels[i]]++;
      wrong += sums[i] == sum[labels[i]] ? 0 : 1;
      wrong += ranks[i] == rank * 100 + size[labels[i]] ? 0 : 1;
    }
  }
  CHECK(wrong == 0);
}

TEST_CASE("host constructs: a kernel including cuda_runtime.h cuda_fp16.h and C headers runs on the host backend",
          "[corpus][host][jit][constructs]") {
  HostCorpus corpus;
  constexpr unsigned kThreads = 64;
  constexpr unsigned kN = 4 * kThreads - 5;
  const metrale::KernelHandle kernel =
      corpus.load("mixed_includes.cuh", "mixed_axpy_half_scale", "corpus_mixed::axpy_half_scale");
  const std::vector<float> x = metrale_test::random_floats(kN, 74);
  const std::vector<float> y = metrale_test::random_floats(kN, 75);
  const DevicePtr dx = upload(corpus.gpu(), x);
  const DevicePtr dy = upload(corpus.gpu(), y);
  constexpr float kA = 1.375F;  // exact in __half
  KernelLaunch(corpus.gpu(), kernel)
      .grid({(kN + kThreads - 1) / kThreads, 1, 1})
      .block({kThreads, 1, 1})
      .arg_ptr(dx)
      .arg_ptr(dy)
      .arg_f32(kA)
      .arg_u32(kN)
      .launch();
  const std::vector<float> got = download<float>(corpus.gpu(), dy, kN);
  std::size_t wrong = 0;
  for (unsigned i = 0; i < kN; ++i) {
    wrong += got[i] == kA * x[i] + y[i] ? 0 : 1;
  }
  CHECK(wrong == 0);
}
