// pch_bench.cpp (metrale-pch-bench): NVRTC compile time per instantiation with and without the
// automatic precompiled headers of compile_with_nvrtc (jit/nvrtc_pch.hpp), in this process.
// Two kinds: `cub`, an engine kernel that includes CUB's block reduce and cooperative groups (one
// instantiation per block size), and `templates`, the library's own fp8_act_quant template (its
// headers are the set's own, so PCH is only asked of it with --pch all). Run it twice for a
// second process's numbers (tools/bench/pch_bench.sh). Prints one line per compile:
//   <kind> pch=<on|off|all> i=<n> ms=<time> pch_use=<none|created|used>
// A tool, not a test: it exits 1 when a compile fails.
#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "jit/nvrtc_compiler.hpp"

using namespace metrale;

namespace {

SourceSet cub_sources() {
  SourceSet sources;
  sources.add_source("cub_engine.cu",
                     "#include <cub/block/block_reduce.cuh>\n"
                     "#include <cooperative_groups.h>\n"
                     "template <int kThreads>\n"
                     "__global__ void block_sum(const float* in, float* out) {\n"
                     "  using Reduce = cub::BlockReduce<float, kThreads>;\n"
                     "  __shared__ typename Reduce::TempStorage storage;\n"
                     "  const float total = Reduce(storage).Sum(in[blockIdx.x * kThreads + threadIdx.x]);\n"
                     "  cooperative_groups::this_thread_block().sync();\n"
                     "  if (threadIdx.x == 0) out[blockIdx.x] = total;\n"
                     "}\n");
  return sources;
}

int usage() {
  std::fputs("usage: metrale-pch-bench cub|templates on|off|all [count=4] [arch=sm_90]\n", stderr);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    return usage();
  }
  const std::string_view kind = argv[1];
  const std::string_view mode = argv[2];
  const int count = argc > 3 ? std::atoi(argv[3]) : 4;
  const std::string arch = argc > 4 ? argv[4] : "sm_90";
  if ((kind != "cub" && kind != "templates") || (mode != "on" && mode != "off" && mode != "all") || count < 1) {
    return usage();
  }
  SourceSet sources;
  if (kind == "cub") {
    sources = cub_sources();
  } else {
    sources.add_embedded_templates();
  }
  const PchChoice choice = mode == "off" ? PchChoice::kOff : mode == "all" ? PchChoice::kAll : PchChoice::kAuto;
  for (int i = 0; i < count; ++i) {
    CompileRequest request;
    request.sources = &sources;
    request.arch = arch;
    request.pch = choice;
    if (kind == "cub") {
      request.source_name = "cub_engine.cu";
      request.name_expressions = {fmt::format("block_sum<{}>", 64 + 32 * i)};
    } else {
      request.source_name = "fp8_act_quant.cuh";
      request.name_expressions = {fmt::format("metrale::kernels::per_token_group_quant_fp8<16u, {}u>", 1u << (i % 6))};
      if (i >= 6) {
        request.name_expressions[0] =
            fmt::format("metrale::kernels::per_token_group_quant_fp8_hopper<16u, {}u>", 1u << (i % 6));
      }
    }
    const CompileResult result = compile_with_nvrtc(request);
    if (!result.ok) {
      std::fprintf(stderr, "%s failed:\n%s\n", request.name_expressions[0].c_str(), result.log.c_str());
      return 1;
    }
    std::printf("%s pch=%s i=%d ms=%.0f pch_use=%s\n", argv[1], argv[2], i, result.compile_ms,
                std::string(pch_use_name(result.pch)).c_str());
    std::fflush(stdout);
  }
  return 0;
}
