// host_jit_partial_file_test.cpp: a file's kernels load independently on the host backend
// (issue 38 item 2): in tests/data/corpus/partly_host.cu, a helper with inline PTX, a plain helper
// over __dp4a (which the host prelude lacks), a template whose instantiation needs it and an
// explicitly instantiated kernel template over it cost only the kernels that reach them: `affine` loads and computes
// its reference, and each other kernel is an absent handle whose reason names the function it needs and why.
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "host/host_backend.hpp"
#include "metrale/error.hpp"
#include "metrale/gpu/kernel_launch.hpp"
#include "support/corpus_test_support.hpp"
#include "support/temp_dir.hpp"

namespace {

metrale::KernelHandle load_partly(metrale::HostBackend& gpu, const corpus::Sources& sources,
                                  const std::string& expression) {
  return gpu.load(metrale::LoadRequest{"partly_" + expression,
                                       {},
                                       "corpus_partly::" + expression,
                                       {},
                                       {},
                                       metrale::ImageKind::kCubin,
                                       "partly_host.cu",
                                       &sources});
}

std::string refusal_of(metrale::HostBackend& gpu, const corpus::Sources& sources, const std::string& expression) {
  try {
    load_partly(gpu, sources, expression);
  } catch (const metrale::BackendError& error) {
    return error.what();
  }
  FAIL("loaded " << expression);
  return {};
}

}  // namespace

TEST_CASE("a file's kernels load independently: what one function cannot build costs only its callers",
          "[host][jit][prelude]") {
  metrale::test::TempDir cache("metrale-host-jit-partial");
  metrale::HostBackendOptions options;
  options.worker_threads = 2;
  options.jit_cache_dir = cache.path();
  metrale::HostBackend gpu(options);
  const corpus::Sources sources = corpus::corpus_sources(corpus::test::corpus_dir());

  // The kernel that needs nothing missing runs, on random input, over NaN.
  const metrale::KernelHandle affine = load_partly(gpu, sources, "affine");
  constexpr unsigned kCount = 1000;
  std::mt19937 rng(38);
  std::uniform_real_distribution<float> dist(-3.0F, 3.0F);
  std::vector<float> x(kCount);
  for (float& v : x) {
    v = dist(rng);
  }
  const metrale::DevicePtr in = gpu.alloc(kCount * sizeof(float));
  const metrale::DevicePtr out = gpu.alloc(kCount * sizeof(float));
  gpu.copy_to_device(in, x.data(), kCount * sizeof(float));
  const std::vector<float> poison(kCount, std::numeric_limits<float>::quiet_NaN());
  gpu.copy_to_device(out, poison.data(), kCount * sizeof(float));
  metrale::KernelLaunch(gpu, affine)
      .grid({(kCount + 63) / 64, 1, 1})
      .block({64, 1, 1})
      .arg_ptr(in)
      .arg_ptr(out)
      .arg_u32(kCount)
      .arg_f32(2.0F)
      .arg_f32(0.25F)
      .launch();
  std::vector<float> got(kCount);
  gpu.copy_to_host(got.data(), out, kCount * sizeof(float));
  for (unsigned i = 0; i < kCount; ++i) {
    INFO("affine[" << i << "]");
    REQUIRE(got[i] == x[i] * 2.0F + 0.25F);
  }

  // Each other kernel: absent, naming the function it needs (its line) and what the host lacks there.
  const std::string lanes = refusal_of(gpu, sources, "lane_ids");
  CHECK_THAT(lanes,
             Catch::Contains("host JIT of partly_lane_ids") &&
                 Catch::Contains("it needs lane_id_ptx at partly_host.cu:10 (inline PTX (asm) at partly_host.cu:12)"));
  const std::string dot = refusal_of(gpu, sources, "dot_rows");
  CHECK_THAT(
      dot, Catch::Contains("it needs dot4_int8 at partly_host.cu:17 (partly_host.cu:17:") && Catch::Contains("__dp4a"));
  // The template's error is charged to the function that instantiated it, not the template; here
  // that is the kernel asked for, whose own failure is the compiler's whole log, as for any kernel.
  const std::string accumulate = refusal_of(gpu, sources, "dot_accumulate");
  CHECK_THAT(accumulate, Catch::Contains("failed (exit") && Catch::Contains("partly_host.cu:39") &&
                             Catch::Contains("partly_host.cu:21:") && Catch::Contains("__dp4a"));
  // An explicitly instantiated kernel template: its instantiation stands in no body, so the
  // template's is stubbed for the others (affine loaded above), and asking for it is its own failure.
  const std::string typed = refusal_of(gpu, sources, "dot_typed<int>");
  CHECK_THAT(typed,
             Catch::Contains("failed (exit") && Catch::Contains("partly_host.cu:53") && Catch::Contains("__dp4a"));
  for (const std::string& reason : {lanes, dot}) {
    CHECK(reason.find(".work-") == std::string::npos);  // the engine's names, not the work folder's
  }
  CHECK(gpu.jit_stats().failures == 4);
  gpu.free(in);
  gpu.free(out);
}
