// gpu_capture_test.cpp: op calls captured into a CUDA graph on a real device (issue 25 part 2):
// prepare each op's shapes, capture a decode-like sequence (BA gates at M = 1 and at a
// tensor-core M, then the FP8 quant) on a stream with the driver API, instantiate, replay, and
// compare every output with the CPU references; then new inputs in the same buffers and a second
// replay, so a graph that recorded nothing (or ran eagerly at capture time) fails. A captured call
// of an op never prepared raises CaptureError and leaves the capture valid.
#include <catch2/catch.hpp>
#include <cstring>

#include "gpu/cuda_backend.hpp"
#include "gpu/cuda_graph_api.hpp"
#include "metrale/error.hpp"
#include "metrale/ops/fp8_act_quant.hpp"
#include "metrale/ops/ssm_ba_gates.hpp"
#include "support/ba_gates_check.hpp"
#include "support/kernels_support.hpp"

using namespace metrale;
using kernels_test::BaCase;
using kernels_test::DeviceBuffer;
using kernels_test::Fp8Case;

namespace {

// One BA-gates problem in device buffers the graph keeps pointing at.
struct BaSlot {
  BaCase c;
  DeviceBuffer x, w, a_log, dt_bias, out;
  BaSlot(GpuBackend& gpu, const BaCase& problem)
      : c(problem),
        x(gpu, c.x),
        w(gpu, c.w),
        a_log(gpu, c.a_log),
        dt_bias(gpu, c.dt_bias),
        out(gpu, std::vector<float>(c.out_size(), kernels_test::poison_float())) {}
  [[nodiscard]] ops::BaGatesArgs args() const {
    const ref::BaGatesRefShape& s = c.shape;
    return {x.ptr(), w.ptr(), a_log.ptr(), dt_bias.ptr(), out.ptr(), s.m,
            s.n,     s.k,     s.k_stride,  s.gate_stride, s.nv,      s.vheads_per_group};
  }
  void refill(GpuBackend& gpu, const BaCase& next) {
    c = next;
    gpu.copy_to_device(x.ptr(), c.x.data(), c.x.size() * 2);
    gpu.copy_to_device(w.ptr(), c.w.data(), c.w.size() * 2);
    gpu.copy_to_device(a_log.ptr(), c.a_log.data(), c.a_log.size() * 4);
    gpu.copy_to_device(dt_bias.ptr(), c.dt_bias.data(), c.dt_bias.size() * 4);
    const std::vector<float> poison(c.out_size(), kernels_test::poison_float());
    gpu.copy_to_device(out.ptr(), poison.data(), poison.size() * 4);
  }
  void check(bool tensor_core) const {
    const std::vector<float> got = out.read<float>(c.out_size());
    if (tensor_core) {
      CHECK(kernels_test::ba_relative_frobenius_error(c.shape, got, c.oracle()) < 1e-5);
    } else {
      CHECK(kernels_test::ba_worst_relative_gap(c.shape, got, c.reference()) <= check::kBaGatesMaxRelativeGap);
    }
  }
};

ref::BaGatesRefShape ba_shape(std::uint32_t m) { return {m, 96, 5120, 5120, 96, 48, 3}; }

std::vector<ops::NamedArg> ba_shape_args(std::uint32_t m) {
  return {{"m", m}, {"n", 96}, {"k", 5120}, {"vheads_per_group", 3}};
}

}  // namespace

TEST_CASE("GPU: op calls captured into a CUDA graph replay to the references", "[gpu][capture]") {
  auto runtime = Runtime::open(kernels_test::runtime_options(BackendChoice::kCuda));
  REQUIRE(runtime->has_device());
  GpuBackend& gpu = *runtime->backend();
  const CudaGraphApi& api = CudaGraphApi::load();
  const auto scope = dynamic_cast<CudaBackend&>(gpu).make_current();
  // The tensor-core kernel's smallest M on this device, from explain: the capture covers it.
  const ops::Explanation floors = runtime->explain("ssm_ba_gates", ba_shape_args(0), false);
  std::uint32_t mma_m = 1024;
  for (const ops::RoleExplanation& role : floors.roles) {
    if (role.role == "tensor_core" && role.min_m) {
      mma_m = std::max(*role.min_m, 1U);
    }
  }
  BaSlot decode(gpu, BaCase(ba_shape(1), 9100));
  BaSlot prefill(gpu, BaCase::normal(ba_shape(mma_m), 9200));
  const Fp8Case fp8(1, 5120, 5120, 9300);
  DeviceBuffer fx(gpu, fp8.x);
  DeviceBuffer fq(gpu, std::vector<std::uint8_t>(std::size_t{fp8.m} * fp8.k, kernels_test::kPoisonCode));
  DeviceBuffer fs(gpu, std::vector<float>(fp8.scale_slots(), kernels_test::poison_float()));

  runtime->prepare("ssm_ba_gates", ba_shape_args(1));
  runtime->prepare("ssm_ba_gates", ba_shape_args(mma_m));
  runtime->prepare("fp8_act_quant", std::vector<ops::NamedArg>{{"m", 1}, {"k", 5120}});

  CUstream stream = nullptr;
  check_cuda_call(api.stream_create(&stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  const auto handle = reinterpret_cast<std::uint64_t>(stream);
  check_cuda_call(api.begin_capture(stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL), "cuStreamBeginCapture");
  REQUIRE(gpu.is_capturing(handle));
  const ops::BaGatesPick small = ops::ssm_ba_gates(*runtime, decode.args(), handle);
  const ops::BaGatesPick large = ops::ssm_ba_gates(*runtime, prefill.args(), handle);
  const ops::Fp8QuantPick quant = ops::fp8_act_quant(*runtime, fp8.args(fx.ptr(), fq.ptr(), fs.ptr()), handle);
  // An op never prepared: refused by name before anything launches, and the capture stays valid.
  const std::vector<ops::NamedArg> silu = {{"gate", fx.ptr().address},
                                           {"up", fx.ptr().address},
                                           {"q", fq.ptr().address},
                                           {"scales", fs.ptr().address},
                                           {"scratch", fx.ptr().address},
                                           {"m", 1},
                                           {"k", 5120}};
  CHECK_THROWS_AS(runtime->run("silu_mul_fp8_quant", silu, handle), CaptureError);
  CHECK_THROWS_WITH(runtime->run("silu_mul_fp8_quant", silu, handle), Catch::Contains("call prepare"));
  CUgraph graph = nullptr;
  check_cuda_call(api.end_capture(stream, &graph), "cuStreamEndCapture");
  CHECK(large.mma);
  CUgraphExec exec = nullptr;
  check_cuda_call(api.instantiate(&exec, graph, 0), "cuGraphInstantiateWithFlags");
  // Nothing ran at capture time: the outputs still hold their poison.
  CHECK(kernels_test::is_poison(decode.out.read<float>(1).front()));
  for (int replay = 0; replay < 2; ++replay) {
    INFO("replay " << replay);
    check_cuda_call(api.launch(exec, stream), "cuGraphLaunch");
    check_cuda_call(api.stream_synchronize(stream), "cuStreamSynchronize");
    decode.check(small.mma);
    prefill.check(large.mma);
    const std::vector<std::uint8_t> q = fq.read<std::uint8_t>(std::size_t{fp8.m} * fp8.k);
    CHECK(q == kernels_test::fp8_reference(fp8).q);
    static_cast<void>(quant);
    // New inputs in the same buffers: the second replay must compute them.
    decode.refill(gpu, BaCase(ba_shape(1), 9500 + replay));
    prefill.refill(gpu, BaCase::normal(ba_shape(mma_m), 9600 + replay));
  }
  api.exec_destroy(exec);
  api.graph_destroy(graph);
  api.stream_destroy(stream);
}
