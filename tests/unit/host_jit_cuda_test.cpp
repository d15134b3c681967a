// host_jit_cuda_test.cpp: CUDA as written, through the host JIT (src/host/cuda_source_rewrite.hpp
// and the prelude): `extern __shared__` in its forms, printf to the launch's log, assert and
// __trap as failed launches, nvcc's implicit names; and bad input: what the host cannot run
// (inline PTX, textures, surfaces, launches from a kernel) is an absent handle whose reason names
// the construct and its line, and threads that never reach a barrier others wait at are
// reported, not hung.
#include <spdlog/logger.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "ground/log.hpp"
#include "host/host_backend.hpp"
#include "metrale/error.hpp"
#include "metrale/gpu/kernel_launch.hpp"
#include "support/cache_test_support.hpp"
#include "support/isolated_runtime.hpp"
#include "support/temp_dir.hpp"

namespace {

using Sources = std::map<std::string, std::string, std::less<>>;

metrale::HostBackendOptions jit_options(const std::filesystem::path& cache) {
  metrale::HostBackendOptions options;
  options.worker_threads = 2;
  options.jit_cache_dir = cache;
  return options;
}

metrale::KernelHandle load(metrale::HostBackend& gpu, const Sources& sources, const std::string& source,
                           const std::string& kernel, const std::string& expression) {
  return gpu.load(metrale::LoadRequest{kernel, {}, expression, {}, {}, metrale::ImageKind::kCubin, source, &sources});
}

template <typename T>
std::vector<T> download(metrale::GpuBackend& gpu, metrale::DevicePtr ptr, std::size_t count) {
  std::vector<T> values(count);
  gpu.copy_to_host(values.data(), ptr, count * sizeof(T));
  return values;
}

// The reason the host backend gives for not loading `expression` of `text`.
std::string refusal(const std::string& text, const std::string& expression) {
  metrale::test::TempDir cache("metrale-host-jit-refusal");
  metrale::HostBackend gpu(jit_options(cache.path()));
  const Sources sources{{"bad.cu", text}};
  try {
    load(gpu, sources, "bad.cu", "bad", expression);
  } catch (const metrale::BackendError& error) {
    CHECK(gpu.jit_stats().failures == 1);
    return error.what();
  }
  FAIL("loaded " << expression);
  return {};
}

constexpr const char* kExternForms = R"(// Every form of extern __shared__ people write.
extern __shared__ float at_namespace_scope[];

template <class T>
struct SharedMemory {
  __device__ operator T*() {
    extern __shared__ int __smem[];
    return (T*)__smem;
  }
};

__device__ unsigned int* as_words() {
  extern __shared__ unsigned int words[];
  return words;
}

// out[b * 8 + k]: what each view of block b's buffer read back.
__global__ void views(float* out) {
  extern __shared__ __align__(16) unsigned char bytes[];
  extern __shared__ float rows[][4];
  float* via_template = SharedMemory<float>();
  const unsigned t = threadIdx.x;
  rows[t][0] = (float)(blockIdx.x * 100 + t);
  rows[t][1] = 0.5f;
  rows[t][2] = 0.25f;
  rows[t][3] = 1.0f;
  __syncthreads();
  if (t == 0) {
    out[blockIdx.x * 8 + 0] = at_namespace_scope[4 * (blockDim.x - 1)];
    out[blockIdx.x * 8 + 1] = via_template[1];
    out[blockIdx.x * 8 + 2] = reinterpret_cast<float4*>(bytes)[1].x;
    out[blockIdx.x * 8 + 3] = (float)(as_words()[3] == 0x3f800000u);
    out[blockIdx.x * 8 + 4] = (float)((void*)rows == (void*)bytes && (void*)at_namespace_scope == (void*)words_alias());
  }
}
)";

}  // namespace

TEST_CASE("extern __shared__ of any type and name, at block and namespace scope, aliases the launch's buffer",
          "[host][jit][prelude]") {
  metrale::test::TempDir cache("metrale-host-jit-extern");
  // words_alias() is defined after the kernel's text, as a second namespace-scope view.
  const Sources sources{
      {"extern_forms.cu", std::string("__device__ unsigned int* words_alias();\n") + kExternForms +
                              "extern __shared__ unsigned int second_namespace_view[];\n"
                              "__device__ unsigned int* words_alias() { return second_namespace_view; }\n"}};
  metrale::HostBackend gpu(jit_options(cache.path()));
  const metrale::KernelHandle kernel = load(gpu, sources, "extern_forms.cu", "extern_forms", "views");
  REQUIRE(kernel.present());
  // Two launches with different sizes: the second buffer is another allocation, and each OS
  // thread's pointers follow it.
  for (const std::uint32_t threads : {16U, 300U}) {
    INFO(threads << " threads");
    constexpr std::uint32_t kBlocks = 5;
    const metrale::DevicePtr out = metrale::test::upload(gpu, std::vector<float>(kBlocks * 8, -1.0F));
    metrale::KernelLaunch(gpu, kernel)
        .grid({kBlocks, 1, 1})
        .block({threads, 1, 1})
        .dynamic_shared(threads * 16)
        .arg_ptr(out)
        .launch();
    const std::vector<float> got = download<float>(gpu, out, kBlocks * 8);
    for (std::uint32_t b = 0; b < kBlocks; ++b) {
      INFO("block " << b);
      CHECK(got[b * 8 + 0] == static_cast<float>(b * 100 + threads - 1));
      CHECK(got[b * 8 + 1] == 0.5F);
      CHECK(got[b * 8 + 2] == static_cast<float>(b * 100 + 1));
      CHECK(got[b * 8 + 3] == 1.0F);
      CHECK(got[b * 8 + 4] == 1.0F);
    }
    gpu.free(out);
  }
}

TEST_CASE("a write through extern __shared__ of a launch that asked for no bytes is reported", "[host][jit][prelude]") {
  metrale::test::TempDir cache("metrale-host-jit-extern-none");
  const Sources sources{{"k.cu",
                         "__global__ void forgot(int n) {\n"
                         "  extern __shared__ int scratch[];\n"
                         "  if (n > 0) scratch[threadIdx.x] = n;\n"
                         "}\n"}};
  metrale::HostBackend gpu(jit_options(cache.path()));
  const metrale::KernelHandle kernel = load(gpu, sources, "k.cu", "forgot", "forgot");
  // Declared and unused: no error.
  metrale::KernelLaunch(gpu, kernel).grid({2, 1, 1}).block({32, 1, 1}).arg_i32(0).launch();
  CHECK_THROWS_WITH(metrale::KernelLaunch(gpu, kernel).grid({2, 1, 1}).block({32, 1, 1}).arg_i32(1).launch(),
                    Catch::Contains("wrote past its dynamic shared memory: byte 0 of a block that asked for 0"));
}

TEST_CASE("printf in a kernel is a line of the launch's log, nvcc's implicit names are there", "[host][jit][prelude]") {
  metrale::test::TempDir cache("metrale-host-jit-printf");
  const Sources sources{{"hello.cu",
                         "__global__ void hello(const float* x) {\n"
                         "  size_t i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                         "  uint u = (uint)i;\n"
                         "  const float* none = NULL;\n"
                         "  if (x != none) printf(\"block %d thread %u: %.2f\\n\", blockIdx.x, u, x[i]);\n"
                         "  if (i == 0) std::printf(\"qualified %s\\n\", \"too\");\n"
                         "}\n"}};
  metrale::HostBackend gpu(jit_options(cache.path()));
  const metrale::KernelHandle kernel = load(gpu, sources, "hello.cu", "hello", "hello");
  const metrale::DevicePtr x = metrale::test::upload(gpu, std::vector<float>{0.25F, 0.5F, 0.75F, 1.0F});
  auto sink = std::make_shared<metrale::cache_test::RecordingSink>();
  metrale::logger().sinks().push_back(sink);
  metrale::KernelLaunch(gpu, kernel).grid({2, 1, 1}).block({2, 1, 1}).arg_ptr(x).launch();
  metrale::logger().sinks().pop_back();
  std::vector<std::string> lines;
  for (const auto& record : sink->records) {
    if (record.text.starts_with("kernel hello")) {
      lines.push_back(record.text);
      CHECK(record.level == spdlog::level::info);
    }
  }
  std::sort(lines.begin(), lines.end());
  REQUIRE(lines.size() == 5);
  CHECK(lines[0] == "kernel hello<default>, block (0,0,0), thread (0,0,0): block 0 thread 0: 0.25");
  CHECK(lines[1] == "kernel hello<default>, block (0,0,0), thread (0,0,0): qualified too");
  CHECK(lines[4] == "kernel hello<default>, block (1,0,0), thread (1,0,0): block 1 thread 3: 1.00");
  gpu.free(x);
}

TEST_CASE("a failed assert or __trap in a kernel fails the launch naming the thread and the line",
          "[host][jit][prelude]") {
  metrale::test::TempDir cache("metrale-host-jit-trap");
  const Sources sources{{"checks.cu",
                         "#include <assert.h>\n"
                         "__global__ void checked(int limit) {\n"
                         "  assert(threadIdx.x < limit);\n"
                         "}\n"
                         "__global__ void trapped(int which) {\n"
                         "  if (threadIdx.x == which) __trap();\n"
                         "}\n"}};
  metrale::HostBackend gpu(jit_options(cache.path()));
  const metrale::KernelHandle checked = load(gpu, sources, "checks.cu", "checked", "checked");
  const metrale::KernelHandle trapped = load(gpu, sources, "checks.cu", "trapped", "trapped");
  metrale::KernelLaunch(gpu, checked).grid({1, 1, 1}).block({8, 1, 1}).arg_i32(8).launch();
  CHECK_THROWS_WITH(metrale::KernelLaunch(gpu, checked).grid({1, 1, 1}).block({8, 1, 1}).arg_i32(5).launch(),
                    Catch::Contains("thread (5,0,0): assertion 'threadIdx.x < limit' failed at checks.cu:3"));
  CHECK_THROWS_WITH(metrale::KernelLaunch(gpu, trapped).grid({2, 1, 1}).block({8, 1, 1}).arg_i32(6).launch(),
                    Catch::Contains("thread (6,0,0): __trap() at checks.cu:6"));
  // The backend runs on after a failed launch.
  metrale::KernelLaunch(gpu, trapped).grid({2, 1, 1}).block({8, 1, 1}).arg_i32(-1).launch();
}

TEST_CASE("what the host cannot run is an absent handle whose reason names the construct and its line",
          "[host][jit][prelude]") {
  const std::string ptx = refusal(
      "__global__ void lane_ids(unsigned* out) {\n"
      "  unsigned lane;\n"
      "  asm volatile(\"mov.u32 %0, %%laneid;\" : \"=r\"(lane));\n"
      "  out[threadIdx.x] = lane;\n"
      "}\n",
      "lane_ids");
  CHECK_THAT(ptx, Catch::Contains("host JIT of bad") && Catch::Contains("inline PTX (asm) at bad.cu:3"));

  const std::string texture = refusal(
      "texture<float, 1, cudaReadModeElementType> tex;\n"
      "__global__ void fetch(float* out) {\n"
      "  out[threadIdx.x] = tex1Dfetch(tex, threadIdx.x);\n"
      "}\n"
      "__global__ void fetch_object(cudaTextureObject_t t, float* out) {\n"
      "  out[threadIdx.x] = tex2D<float>(t, 0.5f, 0.5f);\n"
      "}\n",
      "fetch");
  CHECK_THAT(texture, Catch::Contains("a texture reference (texture<...>) at bad.cu:1") &&
                          Catch::Contains("a texture fetch (tex1Dfetch) at bad.cu:3") &&
                          Catch::Contains("a texture object (cudaTextureObject_t) at bad.cu:5") &&
                          Catch::Contains("a texture fetch (tex2D) at bad.cu:6"));

  const std::string surface = refusal(
      "__global__ void store(cudaSurfaceObject_t s) {\n"
      "  surf2Dwrite(1.0f, s, threadIdx.x * 4, 0);\n"
      "}\n",
      "store");
  CHECK_THAT(surface, Catch::Contains("a surface object (cudaSurfaceObject_t) at bad.cu:1") &&
                          Catch::Contains("a surface access (surf2Dwrite) at bad.cu:2"));

  const std::string nested = refusal(
      "__global__ void child(int* p) { p[threadIdx.x] = 1; }\n"
      "__global__ void parent(int* p) {\n"
      "  if (threadIdx.x == 0) child<<<1, 32>>>(p);\n"
      "}\n",
      "parent");
  CHECK_THAT(nested, Catch::Contains("a kernel launch inside a kernel (<<<...>>>, dynamic parallelism) at bad.cu:3"));

  // A macro's expansion is the line that uses it.
  const std::string macro = refusal(
      "#define LANE_ID(x) asm(\"mov.u32 %0, %%laneid;\" : \"=r\"(x))\n"
      "\n"
      "__global__ void via_macro(unsigned* out) {\n"
      "  unsigned lane;\n"
      "  LANE_ID(lane);\n"
      "  out[threadIdx.x] = lane;\n"
      "}\n",
      "via_macro");
  CHECK_THAT(macro, Catch::Contains("inline PTX (asm) at bad.cu:5"));
}

TEST_CASE("the library's own device-only inline PTX does not count against an engine kernel", "[host][jit][prelude]") {
  // metrale_arith.cuh keeps its PTX under __CUDA_ARCH__; the preprocessor removes it first.
  std::ifstream in(std::string(METRALE_SOURCE_DIR) + "/templates/metrale_arith.cuh");
  REQUIRE(in.good());
  std::ostringstream arith;
  arith << in.rdbuf();
  std::ifstream types_in(std::string(METRALE_SOURCE_DIR) + "/templates/metrale_types.cuh");
  std::ostringstream types;
  types << types_in.rdbuf();
  const Sources sources{{"metrale_arith.cuh", arith.str()},
                        {"metrale_types.cuh", types.str()},
                        {"engine.cu",
                         "#include \"metrale_arith.cuh\"\n"
                         "__global__ void stage(float* out) {\n"
                         "  float* buffer = reinterpret_cast<float*>(metrale::kernels::dynamic_shared_memory());\n"
                         "  buffer[threadIdx.x] = 2.0f * threadIdx.x;\n"
                         "  __syncthreads();\n"
                         "  out[threadIdx.x] = buffer[blockDim.x - 1 - threadIdx.x];\n"
                         "}\n"}};
  metrale::test::TempDir cache("metrale-host-jit-library");
  metrale::HostBackend gpu(jit_options(cache.path()));
  const metrale::KernelHandle kernel = load(gpu, sources, "engine.cu", "stage", "stage");
  const metrale::DevicePtr out = metrale::test::upload(gpu, std::vector<float>(64, -1.0F));
  metrale::KernelLaunch(gpu, kernel).grid({1, 1, 1}).block({64, 1, 1}).dynamic_shared(256).arg_ptr(out).launch();
  const std::vector<float> got = download<float>(gpu, out, 64);
  CHECK(got[0] == 126.0F);
  CHECK(got[63] == 0.0F);
  gpu.free(out);
}

TEST_CASE("threads of a host-JIT kernel that never reach a barrier the others wait at are reported, not hung",
          "[host][jit][prelude]") {
  metrale::test::TempDir cache("metrale-host-jit-barrier");
  // The classic mistake: the bounds check returns before the block's barrier.
  const Sources sources{{"early_exit.cu",
                         "__global__ void scale_rows(float* data, int n) {\n"
                         "  __shared__ float row[256];\n"
                         "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                         "  if (i >= n) return;\n"
                         "  row[threadIdx.x] = data[i];\n"
                         "  __syncthreads();\n"
                         "  data[i] = row[blockDim.x - 1 - threadIdx.x];\n"
                         "}\n"}};
  metrale::HostBackend gpu(jit_options(cache.path()));
  const metrale::KernelHandle kernel = load(gpu, sources, "early_exit.cu", "scale_rows", "scale_rows");
  const metrale::DevicePtr data = metrale::test::upload(gpu, std::vector<float>(300, 1.0F));
  metrale::KernelLaunch(gpu, kernel).grid({1, 1, 1}).block({256, 1, 1}).arg_ptr(data).arg_i32(256).launch();
  CHECK_THROWS_WITH(
      metrale::KernelLaunch(gpu, kernel).grid({2, 1, 1}).block({256, 1, 1}).arg_ptr(data).arg_i32(300).launch(),
      Catch::Contains("kernel scale_rows") && Catch::Contains("block (1,0,0)") &&
          Catch::Contains("waits at __syncthreads() at early_exit.cu:6") &&
          Catch::Contains("thread (44,0,0) exited without reaching it"));
  gpu.free(data);
}
