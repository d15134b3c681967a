// runtime_capture_test.cpp: op calls on a stream capturing into a CUDA graph (src/ops/op_capture.hpp,
// Runtime::prepare), without a GPU: the pure decisions, the host backend's simulated capture
// (outputs checked against the CPU reference), a counting backend that shows a capture asks the
// device nothing but the prepared launches, and the driver-table capture query over a fake driver.
#include <cuda.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstring>
#include <vector>

#include "gpu/cuda_capture.hpp"
#include "host/host_backend.hpp"
#include "metrale/error.hpp"
#include "metrale/ops/ssm_ba_gates.hpp"
#include "metrale/runtime.hpp"
#include "ops/op_capture.hpp"
#include "ops/ssm_ba_gates/ssm_ba_gates.hpp"
#include "ref/bf16.hpp"
#include "support/counting_gpu.hpp"
#include "support/isolated_runtime.hpp"

using namespace metrale;
using metrale::test::upload;

namespace {

constexpr std::uint64_t kStream = 0x5151;  // the stream the tests "capture"

// One BA-gates problem on `gpu`: random inputs, a poisoned output, and the named arguments.
struct BaProblem {
  std::uint32_t m, n = 96, k = 512, nv = 48, vpg = 3;
  std::vector<std::uint16_t> x, w;
  std::vector<float> a_log, dt_bias;
  DevicePtr dx, dw, da, dd, dout;
  std::vector<ops::NamedArg> args;

  BaProblem(GpuBackend& gpu, std::uint32_t tokens, std::uint32_t seed) : m(tokens) {
    x = ref::random_bf16(static_cast<std::size_t>(m) * k, seed);
    w = ref::random_bf16(static_cast<std::size_t>(n) * k, seed + 1, 0.05f);
    a_log = ref::random_floats(nv, seed + 2, -1.0f, 1.0f);
    dt_bias = ref::random_floats(nv, seed + 3, -1.0f, 1.0f);
    dx = upload(gpu, x);
    dw = upload(gpu, w);
    da = upload(gpu, a_log);
    dd = upload(gpu, dt_bias);
    dout = upload(gpu, std::vector<float>(static_cast<std::size_t>(m) * 2 * nv, -12345.0f));  // poison
    args = {{"x", dx.address},
            {"weight", dw.address},
            {"a_log", da.address},
            {"dt_bias", dd.address},
            {"gate_out", dout.address},
            {"m", m},
            {"n", n},
            {"k", k},
            {"vheads_per_group", vpg}};
  }
  [[nodiscard]] std::vector<ops::NamedArg> shape() const {
    return {{"m", m}, {"n", n}, {"k", k}, {"vheads_per_group", vpg}};
  }
  [[nodiscard]] std::vector<float> output(GpuBackend& gpu) const {
    std::vector<float> out(static_cast<std::size_t>(m) * 2 * nv);
    gpu.copy_to_host(out.data(), dout, out.size() * sizeof(float));
    return out;
  }
  [[nodiscard]] std::vector<float> reference() const {
    std::vector<float> expected(static_cast<std::size_t>(m) * 2 * nv, 0.0f);
    ref::ssm_ba_gates_reference({x, w, a_log, dt_bias}, {m, n, k, k, 2 * nv, nv, vpg}, expected);
    return expected;
  }
};

bool bytes_equal(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace

TEST_CASE("capture decisions: only prepared kernels are offered, the declined ones named", "[capture]") {
  const ops::OpDeclaration& op = ops::library_ops().get("ssm_ba_gates");
  ops::OpContext context;
  context.op = &op;
  for (std::size_t i = 0; i < op.roles.size(); ++i) {
    context.kernels[i] = ops::OpKernel{op.roles[i].role, op.roles[i].kernel, true, {}, KernelHandle{10 + i}, {}};
  }
  ops::PreparedHandles prepared{};
  SECTION("nothing prepared: a refusal naming prepare") {
    ops::OpContext masked = context;
    const ops::CaptureMask mask = ops::mask_for_capture(masked, prepared);
    CHECK(mask.offered == 0);
    const auto refusal = ops::capture_refusal(masked, mask, "");
    REQUIRE(refusal);
    CHECK_THAT(*refusal, Catch::Contains("ssm_ba_gates") && Catch::Contains("call prepare"));
  }
  SECTION("the parent prepared: the others declined, a forced unprepared role refused") {
    const std::size_t parent = *op.role_index("parent");
    const std::size_t twin = *op.role_index("twin");
    prepared[parent].generic = KernelHandle{10 + parent};
    ops::OpContext masked = context;
    const ops::CaptureMask mask = ops::mask_for_capture(masked, prepared);
    CHECK(mask.offered == 1);
    CHECK_FALSE(mask.declined[parent]);
    CHECK(mask.declined[twin]);
    CHECK(masked.kernels[parent].handle == KernelHandle{10 + parent});
    CHECK_FALSE(masked.kernels[twin].handle.present());
    CHECK_FALSE(ops::capture_refusal(masked, mask, ""));
    CHECK_FALSE(ops::capture_refusal(masked, mask, "parent"));
    const auto forced = ops::capture_refusal(masked, mask, "twin");
    REQUIRE(forced);
    CHECK_THAT(*forced, Catch::Contains("'twin' is not prepared") && Catch::Contains("prepare"));
    ops::Pick pick;
    pick.add_verdict("twin", std::string_view("kernel absent from this image (kernels/hopper only)"));
    pick.add_verdict("parent", std::nullopt);
    ops::name_capture_declines(pick, masked, mask);
    REQUIRE(pick.verdict("twin") != nullptr);
    CHECK(pick.verdict("twin")->reason == ops::kNotPreparedForCapture);
    CHECK_FALSE(pick.verdict("parent")->reason.has_value());
  }
  SECTION("a kernel that arrived after prepare is not taken: the snapshot's handle is") {
    const std::size_t twin = *op.role_index("twin");
    prepared[twin].generic = KernelHandle{99};  // what prepare saw; the live handle is now another
    ops::OpContext masked = context;
    const ops::CaptureMask mask = ops::mask_for_capture(masked, prepared);
    CHECK(masked.kernels[twin].handle == KernelHandle{99});
    CHECK(mask.offered == 1);
  }
}

TEST_CASE("capture decisions: a shape-specialised variant is offered only at the shape it was prepared at",
          "[capture][shape]") {
  const ops::OpDeclaration& op = ops::library_ops().get("ssm_ba_gates");
  const std::size_t mma = *op.role_index("tensor_core");
  ops::OpContext context;
  context.op = &op;
  for (std::size_t i = 0; i < op.roles.size(); ++i) {
    context.kernels[i] = ops::OpKernel{op.roles[i].role, op.roles[i].kernel, true, {}, KernelHandle{10 + i}, {}};
  }
  ops::PreparedHandles prepared{};
  REQUIRE(prepared[mma].keep(6, KernelHandle{60}));  // prepared at 6 tiles
  // The live lookup found the 6-tile variant: it is offered, shape kept.
  ops::OpContext at_six = context;
  at_six.kernels[mma].handle = KernelHandle{60};
  at_six.kernels[mma].params.shape = 6;
  ops::CaptureMask mask = ops::mask_for_capture(at_six, prepared);
  CHECK(at_six.kernels[mma].handle == KernelHandle{60});
  CHECK(at_six.kernels[mma].params.shape == 6);
  CHECK_FALSE(mask.declined[mma]);
  // The 3-tile variant was published after prepare: never offered; no generic prepared -> declined.
  ops::OpContext at_three = context;
  at_three.kernels[mma].handle = KernelHandle{30};
  at_three.kernels[mma].params.shape = 3;
  mask = ops::mask_for_capture(at_three, prepared);
  CHECK_FALSE(at_three.kernels[mma].handle.present());
  CHECK(mask.declined[mma]);
  // With the generic form prepared too, a shape without its own prepared variant runs the generic,
  // its shape reset (the launcher of a specialised variant refuses another N).
  REQUIRE(prepared[mma].keep(0, KernelHandle{13}));
  at_three = context;
  at_three.kernels[mma].handle = KernelHandle{30};
  at_three.kernels[mma].params.shape = 3;
  mask = ops::mask_for_capture(at_three, prepared);
  CHECK(at_three.kernels[mma].handle == KernelHandle{13});
  CHECK(at_three.kernels[mma].params.shape == 0);
  CHECK_FALSE(mask.declined[mma]);
  // A role keeps at most kMaxPreparedShapes variants; one more is refused, the kept ones intact.
  ops::PreparedRole role;
  for (std::uint32_t shape = 1; shape <= ops::kMaxPreparedShapes; ++shape) {
    REQUIRE(role.keep(shape, KernelHandle{100 + shape}));
  }
  CHECK_FALSE(role.keep(ops::kMaxPreparedShapes + 1, KernelHandle{999}));
  CHECK(role.keep(2, KernelHandle{202}));  // an already-kept shape is replaced, not added
  CHECK(role.at(2) == KernelHandle{202});
  CHECK(role.at(1) == KernelHandle{101});
  CHECK_FALSE(role.at(ops::kMaxPreparedShapes + 1).present());
  CHECK_FALSE(role.at(0).present());
}

TEST_CASE("capture decisions: a launch configuration is prepared by everything but its grid", "[capture]") {
  LaunchConfig config;
  config.grid = Dim3{7, 1, 1};
  config.block = Dim3{256, 1, 1};
  config.dynamic_shared_bytes = 193536;
  config.cluster_blocks = 4;
  std::vector<ops::PreparedLaunch> records = {ops::launch_key(KernelHandle{3}, config)};
  LaunchConfig other_grid = config;
  other_grid.grid = Dim3{70, 1, 1};
  CHECK(ops::find_prepared(records, ops::launch_key(KernelHandle{3}, other_grid)) != nullptr);
  LaunchConfig other_cluster = config;
  other_cluster.cluster_blocks = 2;
  CHECK(ops::find_prepared(records, ops::launch_key(KernelHandle{3}, other_cluster)) == nullptr);
  LaunchConfig other_shared = config;
  other_shared.dynamic_shared_bytes = 1024;
  CHECK(ops::find_prepared(records, ops::launch_key(KernelHandle{3}, other_shared)) == nullptr);
  CHECK(ops::find_prepared(records, ops::launch_key(KernelHandle{4}, config)) == nullptr);
}

TEST_CASE("host backend: a capture without prepare throws CaptureError naming prepare and launches nothing",
          "[capture][runtime]") {
  auto runtime = Runtime::open(test::isolated_runtime_options(BackendChoice::kHost, 2));
  auto& host = dynamic_cast<HostBackend&>(*runtime->backend());
  const BaProblem problem(host, 5, 41);
  host.simulate_capture(kStream);
  CHECK_THROWS_AS(runtime->run("ssm_ba_gates", problem.args, kStream), CaptureError);
  CHECK_THROWS_WITH(runtime->run("ssm_ba_gates", problem.args, kStream),
                    Catch::Contains("call prepare") && Catch::Contains("ssm_ba_gates"));
  const std::vector<float> out = problem.output(host);
  CHECK(std::all_of(out.begin(), out.end(), [](float v) { return v == -12345.0f; }));  // untouched
  // Another stream is not capturing: the call runs as ever.
  const ops::Pick eager = runtime->run("ssm_ba_gates", problem.args, 0);
  CHECK(eager.role == "twin");
  CHECK(bytes_equal(problem.output(host), problem.reference()));
}

TEST_CASE("host backend: after prepare a capture runs the guards' pick to the reference's bytes",
          "[capture][runtime]") {
  auto runtime = Runtime::open(test::isolated_runtime_options(BackendChoice::kHost, 2));
  auto& host = dynamic_cast<HostBackend&>(*runtime->backend());
  const BaProblem problem(host, 5, 43);
  const std::vector<ops::Pick> picks = runtime->prepare("ssm_ba_gates", problem.shape());
  REQUIRE_FALSE(picks.empty());
  CHECK(picks.front().role == "twin");  // the guards' pick at M = 5 on 2 SMs
  const std::vector<float> before = problem.output(host);
  CHECK(std::all_of(before.begin(), before.end(), [](float v) { return v == -12345.0f; }));  // prepare ran nothing
  host.simulate_capture(kStream);
  const ops::Pick pick = runtime->run("ssm_ba_gates", problem.args, kStream);
  CHECK(pick.role == "twin");
  CHECK(bytes_equal(problem.output(host), problem.reference()));
  // The typed entry takes the same path.
  const BaProblem again(host, 5, 47);
  ops::BaGatesArgs typed{again.dx, again.dw, again.da, again.dd, again.dout, 5, 96, 512, 512, 96, 48, 3};
  CHECK(ops::ssm_ba_gates(*runtime, typed, kStream).twin);
  CHECK(bytes_equal(again.output(host), again.reference()));
}

TEST_CASE("host backend: a capture declines an unprepared kernel by name and takes a prepared one",
          "[capture][runtime]") {
  auto runtime = Runtime::open(test::isolated_runtime_options(BackendChoice::kHost, 2));
  auto& host = dynamic_cast<HostBackend&>(*runtime->backend());
  const BaProblem problem(host, 5, 53);
  const std::vector<ops::Pick> picks = runtime->prepare("ssm_ba_gates", problem.shape(), "parent");
  REQUIRE(picks.size() == 1);
  CHECK(picks.front().role == "parent");
  host.simulate_capture(kStream);
  const ops::Pick pick = runtime->run("ssm_ba_gates", problem.args, kStream);
  CHECK(pick.role == "parent");
  REQUIRE(pick.verdict("twin") != nullptr);
  CHECK(pick.verdict("twin")->reason == ops::kNotPreparedForCapture);
  CHECK(bytes_equal(problem.output(host), problem.reference()));  // the parent's bytes are the twin's
  CHECK_THROWS_AS(runtime->run("ssm_ba_gates", problem.args, kStream, "twin"), CaptureError);
  CHECK_THROWS_WITH(runtime->run("ssm_ba_gates", problem.args, kStream, "twin"),
                    Catch::Contains("'twin' is not prepared"));
  host.simulate_capture(0);
  CHECK(runtime->run("ssm_ba_gates", problem.args, kStream).role == "twin");  // the capture ended
}

TEST_CASE("a capture asks the device for nothing but the prepared launches", "[capture][runtime]") {
  auto owned = std::make_unique<test::CountingGpu>(16);
  test::CountingGpu& gpu = *owned;
  RuntimeOptions options = test::isolated_runtime_options(BackendChoice::kHost);
  auto runtime = Runtime::open_with(std::move(owned), std::move(options));
  // K 5120 at M 128 on 16 SMs: the tensor-core kernel, one token tile split over a cluster of 8,
  // which asks the device's occupancy before it launches.
  const std::vector<ops::NamedArg> shape = {{"m", 128}, {"n", 96}, {"k", 5120}, {"vheads_per_group", 3}};
  const std::vector<ops::Pick> picks = runtime->prepare("ssm_ba_gates", shape);
  REQUIRE_FALSE(picks.empty());
  CHECK(picks.front().role == "tensor_core");
  CHECK(gpu.launches == 0);
  CHECK(gpu.prepared >= 3);  // every loaded role's launch made ready
  CHECK(gpu.occupancy >= 1);
  const int loads = gpu.loads, occupancy = gpu.occupancy, prepared = gpu.prepared;
  std::vector<ops::NamedArg> args = shape;
  std::uint64_t address = std::uint64_t{1} << 30;  // never dereferenced; 4 GiB apart, so none overlap
  for (const char* tensor : {"x", "weight", "a_log", "dt_bias", "gate_out"}) {
    args.push_back({tensor, address});
    address += std::uint64_t{1} << 32;
  }
  gpu.capturing_stream = kStream;
  CHECK(runtime->run("ssm_ba_gates", args, kStream).role == "tensor_core");
  CHECK(gpu.launches == 1);
  CHECK(gpu.last_config.cluster_blocks == 8);
  CHECK(gpu.loads == loads);
  CHECK(gpu.occupancy == occupancy);
  CHECK(gpu.prepared == prepared);
  CHECK(gpu.allocs == 0);
  // M 8192: 64 tiles, so no cluster, a configuration prepare never saw: refused before the
  // device is asked anything.
  args[0].value = 8192;
  CHECK_THROWS_AS(runtime->run("ssm_ba_gates", args, kStream), CaptureError);
  CHECK_THROWS_WITH(runtime->run("ssm_ba_gates", args, kStream), Catch::Contains("not prepared"));
  CHECK(gpu.launches == 1);
  CHECK(gpu.occupancy == occupancy);
  // Prepared at that shape too, it runs.
  gpu.capturing_stream = 0;
  runtime->prepare("ssm_ba_gates",
                   std::vector<ops::NamedArg>{{"m", 8192}, {"n", 96}, {"k", 5120}, {"vheads_per_group", 3}});
  gpu.capturing_stream = kStream;
  CHECK(runtime->run("ssm_ba_gates", args, kStream).role == "tensor_core");
  CHECK(gpu.launches == 2);
  CHECK(gpu.last_config.cluster_blocks == 1);
}

namespace {

CUstreamCaptureStatus fake_status = CU_STREAM_CAPTURE_STATUS_NONE;
CUresult fake_result = CUDA_SUCCESS;
int fake_calls = 0;

CUresult fake_capture_info(CUstream /*stream*/, CUstreamCaptureStatus* status, cuuint64_t* id) {
  ++fake_calls;
  *status = fake_status;
  *id = 1;
  return fake_result;
}

CUresult fake_is_capturing(CUstream /*stream*/, CUstreamCaptureStatus* status) {
  ++fake_calls;
  *status = fake_status;
  return fake_result;
}

}  // namespace

TEST_CASE("the CUDA capture query over a fake driver table", "[capture][cuda]") {
  CudaDriver driver;
  CHECK_FALSE(cuda_stream_is_capturing(driver, kStream));  // neither entry point: never capturing
  for (const bool info : {true, false}) {
    INFO((info ? "cuStreamGetCaptureInfo" : "cuStreamIsCapturing"));
    driver = CudaDriver{};
    if (info) {
      driver.stream_get_capture_info = &fake_capture_info;
    } else {
      driver.stream_is_capturing = &fake_is_capturing;
    }
    fake_result = CUDA_SUCCESS;
    fake_status = CU_STREAM_CAPTURE_STATUS_ACTIVE;
    fake_calls = 0;
    CHECK(cuda_stream_is_capturing(driver, kStream));
    CHECK_FALSE(cuda_stream_is_capturing(driver, 0));  // the legacy stream is never asked
    CHECK(fake_calls == 1);
    fake_status = CU_STREAM_CAPTURE_STATUS_INVALIDATED;
    CHECK(cuda_stream_is_capturing(driver, kStream));
    fake_status = CU_STREAM_CAPTURE_STATUS_NONE;
    CHECK_FALSE(cuda_stream_is_capturing(driver, kStream));
    fake_result = CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
    CHECK(cuda_stream_is_capturing(driver, kStream));
    fake_result = CUDA_ERROR_INVALID_HANDLE;
    CHECK_FALSE(cuda_stream_is_capturing(driver, kStream));
  }
}
