// op_argument_rules_test.cpp: the argument rules every caller meets. An output overlapping an
// input or another output is refused naming both (run_op, so by name, by values and through the
// C ABI alike), unless declared in place at the input's address; explain and run apply one
// validation: over a table of shapes per library op (zero, one, each rule's edge, unaligned,
// overflowing, out of range), explain refuses exactly what run refuses, with run's message.
#include <algorithm>
#include <array>
#include <catch2/catch.hpp>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "metrale/error.hpp"
#include "metrale/ops/fp8_act_quant.hpp"
#include "metrale/ops/ssm_ba_gates.hpp"
#include "metrale/runtime.hpp"
#include "ops/fp8_act_quant/fp8_act_quant.hpp"
#include "ref/bf16.hpp"
#include "support/isolated_runtime.hpp"

using namespace metrale;

namespace {

std::unique_ptr<Runtime> host_runtime() {
  RuntimeOptions options = test::isolated_runtime_options(BackendChoice::kHost, 2, "hopper");
  options.host_worker_threads = 2;
  return Runtime::open(options);
}

// The ArgumentError `call` throws, "" when it returns.
template <typename Call>
std::string refusal_of(Call&& call) {
  try {
    call();
  } catch (const ArgumentError& error) {
    return error.what();
  }
  return "";
}

// fp8_act_quant at M 4, K 256 over one allocation holding x, then q and scales at the byte offsets
// given (in bytes from the allocation's start); the allocation is large enough for any offset used.
std::string fp8_in_one_buffer(Runtime& runtime, std::uint64_t q_at, std::uint64_t scales_at) {
  GpuBackend& gpu = *runtime.backend();
  const DevicePtr all = gpu.alloc(1 << 16);
  const std::vector<ops::NamedArg> args{
      {"x", all.address}, {"q", all.address + q_at}, {"scales", all.address + scales_at}, {"m", 4},
      {"k", 256},         {"x_row_stride", 256}};
  const std::string refusal = refusal_of([&] { runtime.run("fp8_act_quant", args); });
  gpu.free(all);
  return refusal;
}

}  // namespace

TEST_CASE("an output that overlaps an input or another output is refused naming both and the rule", "[ops][aliasing]") {
  auto runtime = host_runtime();
  constexpr std::uint64_t kX = 4 * 256 * 2;  // x's bytes: M 4 rows of 256 bf16
  constexpr std::uint64_t kQ = 4 * 256;      // q's bytes
  // q over x's last row: the kernel would overwrite activations it still reads.
  const std::string over_x = fp8_in_one_buffer(*runtime, kX - 512, kX + kQ + 256);
  INFO(over_x);
  CHECK(over_x.find("fp8_act_quant: output 'q'") == 0);
  CHECK(over_x.find("overlaps input 'x'") != std::string::npos);
  CHECK(over_x.find("an output may not share bytes with an input it reads") != std::string::npos);
  // scales over q's tail: two outputs in the same bytes.
  const std::string over_q = fp8_in_one_buffer(*runtime, kX, kX + kQ - 16);
  INFO(over_q);
  CHECK(over_q.find("output 'q'") != std::string::npos);
  CHECK(over_q.find("overlaps output 'scales'") != std::string::npos);
  // By value list (OpRef::run_values) the same rule.
  GpuBackend& gpu = *runtime->backend();
  const DevicePtr all = gpu.alloc(1 << 16);
  const std::vector<std::uint64_t> values{all.address, all.address, all.address + kX + kQ, 4, 256, 256, 0, 0, 0};
  CHECK_THROWS_WITH(runtime->op("fp8_act_quant").run_values(values), Catch::Contains("overlaps input 'x'"));
  gpu.free(all);

  SECTION("tensors that only touch are accepted and give the reference's bytes") {
    const std::vector<std::uint16_t> x = ref::random_bf16(4 * 256, 0xa11a5, 4.0F);
    const ref::Fp8RefResult expected = ref::fp8_act_quant_reference(x, {4, 256, 256, false});
    const DevicePtr one = gpu.alloc(kX + kQ + 8 * 4);
    gpu.copy_to_device(one, x.data(), kX);
    const std::vector<std::uint8_t> poison(kQ + 8 * 4, 0xAB);
    gpu.copy_to_device(DevicePtr{one.address + kX}, poison.data(), poison.size());
    const std::vector<ops::NamedArg> args{
        {"x", one.address}, {"q", one.address + kX}, {"scales", one.address + kX + kQ}, {"m", 4},
        {"k", 256},         {"x_row_stride", 256}};
    runtime->run("fp8_act_quant", args);
    std::vector<std::uint8_t> q(kQ);
    std::vector<float> scales(8);
    gpu.copy_to_host(q.data(), DevicePtr{one.address + kX}, q.size());
    gpu.copy_to_host(scales.data(), DevicePtr{one.address + kX + kQ}, scales.size() * sizeof(float));
    gpu.free(one);
    CHECK(q == expected.q);
    CHECK(scales == expected.scales);
  }
}

TEST_CASE("the typed entry points refuse an output over an input as a call by name does", "[ops][aliasing]") {
  auto runtime = host_runtime();
  GpuBackend& gpu = *runtime->backend();
  const DevicePtr all = gpu.alloc(1 << 16);
  // ops::fp8_act_quant(host, args): q over x's second row (x: 4 rows of 256 bf16, 2048 bytes).
  ops::Fp8QuantArgs fp8;
  fp8.x = all;
  fp8.q = DevicePtr{all.address + 512};
  fp8.scales = DevicePtr{all.address + 8192};
  fp8.m = 4;
  fp8.k = 256;
  fp8.x_row_stride = 256;
  const std::string fp8_refusal = refusal_of([&] { (void)ops::fp8_act_quant(*runtime, fp8); });
  INFO(fp8_refusal);
  CHECK(fp8_refusal.find("fp8_act_quant: output 'q'") == 0);
  CHECK(fp8_refusal.find("overlaps input 'x'") != std::string::npos);
  // ops::ssm_ba_gates(host, args): gate_out inside the weights (8 rows of 64 bf16, 1024 bytes).
  ops::BaGatesArgs ba;
  ba.x = all;
  ba.weight = DevicePtr{all.address + 4096};
  ba.a_log = DevicePtr{all.address + 12288};
  ba.dt_bias = DevicePtr{all.address + 12800};
  ba.gate_out = DevicePtr{all.address + 4096 + 256};
  ba.m = 4;
  ba.n = 8;
  ba.k = 64;
  ba.vheads_per_group = 1;
  const std::string ba_refusal = refusal_of([&] { (void)ops::ssm_ba_gates(*runtime, ba); });
  INFO(ba_refusal);
  CHECK(ba_refusal.find("ssm_ba_gates: output") == 0);
  CHECK(ba_refusal.find("overlaps input 'weight'") != std::string::npos);
  gpu.free(all);
}

namespace {

// A context over `op` (checked), whose run counts its calls in `ran` and launches nothing.
ops::OpContext counting_context(ops::OpDeclaration& op, int& ran) {
  op.run = [&ran](const ops::OpContext&, const ops::OpCall&) {
    ++ran;
    return ops::Pick{};
  };
  ops::check_declaration(op);
  ops::OpContext context;
  context.op = &op;
  return context;
}

}  // namespace

TEST_CASE("an output declared in place of an input may start at its address and nowhere else", "[ops][aliasing]") {
  ops::OpDeclaration op;
  op.name = "scale_in_place";
  op.roles = {ops::RoleDecl{"parent", "k", {}, "", ""}};
  op.args = {ops::tensor_arg("x", ops::ArgKind::kInput, ops::DType::kFp32, 4, {"n"}, "in"),
             ops::tensor_arg("y", ops::ArgKind::kOutput, ops::DType::kFp32, 4, {"n"}, "out, in place of x"),
             ops::scalar_arg("n", std::nullopt, UINT32_MAX, "length")};
  op.args[1].in_place_of = "x";
  int ran = 0;
  const ops::OpContext context = counting_context(op, ran);
  const std::vector<std::uint64_t> same{0x10000, 0x10000, 64};
  ops::run_op(context, ops::OpCall{same, 0, {}});
  CHECK(ran == 1);
  const std::vector<std::uint64_t> shifted{0x10000, 0x10010, 64};
  CHECK_THROWS_WITH(ops::run_op(context, ops::OpCall{shifted, 0, {}}),
                    Catch::Contains("scale_in_place: output 'y' [0x10010, 0x10110) overlaps input 'x' [0x10000, "
                                    "0x10100)"));
  CHECK(ran == 1);
  op.args[1].in_place_of = "n";  // a scalar is no tensor to overwrite
  CHECK_THROWS_WITH(ops::check_declaration(op), Catch::Contains("in_place_of 'n' needs an output naming an input"));
}

TEST_CASE(
    "a column-major output spans its columns of column stride, and layout and multiple_of are declared and checked",
    "[ops][aliasing]") {
  using ops::ArgKind;
  using ops::DType;
  ops::OpDeclaration op;
  op.name = "column_major_out";
  op.roles = {ops::RoleDecl{"parent", "k", {}, "", ""}};
  op.args = {ops::tensor_arg("x", ArgKind::kInput, DType::kFp32, 4, {"r", "c"}, "in"),
             ops::tensor_arg("s", ArgKind::kOutput, DType::kFp32, 4, {"r", "c"}, "out, [c][stride] when column-major")
                 .with_column_major("layout", "stride"),
             ops::scalar_arg("r", std::nullopt, UINT32_MAX, "rows"),
             ops::scalar_arg("c", std::nullopt, UINT32_MAX, "columns"),
             ops::scalar_arg("layout", 0, 1, "1: column-major"),
             ops::scalar_arg("stride", 0, UINT32_MAX, "the column stride").with_multiple_of(4)};
  int ran = 0;
  const ops::OpContext context = counting_context(op, ran);
  // s at 0x10000, x 32 bytes on. Row-major s [3][2] floats: 24 bytes, clear of x.
  const std::vector<std::uint64_t> row_major{0x10020, 0x10000, 3, 2, 0, 0};
  ops::run_op(context, ops::OpCall{row_major, 0, {}});
  CHECK(ran == 1);
  // Column-major with stride 8: a column of 8, then the last one's 3 rows: 11 floats, over x.
  const std::vector<std::uint64_t> column_major{0x10020, 0x10000, 3, 2, 1, 8};
  CHECK_THROWS_WITH(ops::run_op(context, ops::OpCall{column_major, 0, {}}),
                    Catch::Contains("column_major_out: output 's' [0x10000, 0x1002c) overlaps input 'x' [0x10020, "
                                    "0x10038)"));
  // Stride 4: 4 + 3 floats, 28 bytes: clear of x again.
  const std::vector<std::uint64_t> tight{0x10020, 0x10000, 3, 2, 1, 4};
  ops::run_op(context, ops::OpCall{tight, 0, {}});
  CHECK(ran == 2);
  const std::vector<std::uint64_t> odd_stride{0x10020, 0x10000, 3, 2, 1, 6};
  // The values' rules (bind_args and check_values, every caller's way in) hold multiple_of.
  CHECK_THROWS_WITH(ops::check_values(op, odd_stride),
                    Catch::Contains("column_major_out: stride=6 is not a multiple of 4"));
  CHECK_NOTHROW(ops::check_values(op, tight));

  op.args[1].layout_by = "r";  // a selector must be a scalar in [0, 1]
  CHECK_THROWS_WITH(ops::check_declaration(op), Catch::Contains("layout_by 'r' and column_stride 'stride' need"));
  op.args[1].layout_by = "layout";
  op.args[1].column_stride = "x";  // a tensor is no stride
  CHECK_THROWS_WITH(ops::check_declaration(op), Catch::Contains("column_stride 'x' need"));
  op.args[1].column_stride = "stride";
  op.args[0].multiple_of = 4;
  CHECK_THROWS_WITH(ops::check_declaration(op), Catch::Contains("tensor 'x': multiple_of is a scalar's rule"));
}

namespace {

// A shape's scalar values by name, and how it prints in a failure.
using Shape = std::vector<ops::NamedArg>;
std::string text_of(const Shape& shape) {
  std::ostringstream out;
  for (const ops::NamedArg& arg : shape) {
    out << arg.name << "=" << arg.value << " ";
  }
  return out.str();
}

// The shapes of one op's table: the base, then each scalar at 0, 1, its base -1/+1/+8/+128,
// doubled, 100, 2^31 and 2^32 - 1 (each rule's edges, unaligned and overflowing sizes), and past
// its range (2^32).
std::vector<Shape> table_of(const Shape& base) {
  std::vector<Shape> shapes{base};
  for (std::size_t i = 0; i < base.size(); ++i) {
    const std::uint64_t b = base[i].value;
    for (const std::uint64_t value :
         {std::uint64_t{0}, std::uint64_t{1}, b - 1, b + 1, b + 8, b + 128, 2 * b, std::uint64_t{100},
          std::uint64_t{1} << 31, std::uint64_t{UINT32_MAX}, std::uint64_t{1} << 32}) {
      if (value == b || (b == 0 && value == UINT64_MAX)) {
        continue;
      }
      Shape shape = base;
      shape[i].value = value;
      shapes.push_back(shape);
    }
  }
  return shapes;
}

// The bytes a tensor needs at these values: its dims' product times its dtype's size (a scalar
// of 0 takes its zero_means), and column-major scales' m_aligned rows; nullopt past 2^64.
std::optional<std::uint64_t> dim_of(const ops::OpDeclaration& op, const std::vector<std::uint64_t>& v,
                                    const std::string& dim) {
  const auto slash = dim.find('/');
  const std::string name = dim.substr(0, slash);
  const std::uint64_t divisor = slash == std::string::npos ? 1 : std::stoull(dim.substr(slash + 1));
  const std::size_t i = *op.arg_index(name);
  if (v[i] == 0 && !op.args[i].zero_means.empty()) {
    const auto meant = dim_of(op, v, op.args[i].zero_means);
    return meant ? std::optional<std::uint64_t>(*meant / divisor) : std::nullopt;
  }
  return v[i] / divisor;
}

std::optional<std::uint64_t> bytes_of(const ops::OpDeclaration& op, const std::vector<std::uint64_t>& v,
                                      std::size_t t) {
  std::uint64_t bytes = ops::dtype_bytes(op.args[t].dtype);
  for (std::size_t d = 0; d < op.args[t].dims.size(); ++d) {
    std::optional<std::uint64_t> extent = dim_of(op, v, op.args[t].dims[d]);
    if (d == 0 && op.args[t].name == "scales" && v[*op.arg_index("scale_layout")] == 1) {
      extent = std::max(*extent, v[*op.arg_index("m_aligned")]);
    }
    if (!extent || (*extent != 0 && bytes > UINT64_MAX / *extent)) {
      return std::nullopt;
    }
    bytes *= *extent;
  }
  return bytes;
}

}  // namespace

TEST_CASE("explain and run refuse the same shapes of every library op with the same message", "[ops][explain]") {
  auto runtime = host_runtime();
  GpuBackend& gpu = *runtime->backend();
  const std::vector<std::pair<std::string, Shape>> bases{
      {"fp8_act_quant",
       {{"m", 5}, {"k", 256}, {"x_row_stride", 264}, {"scale_layout", 0}, {"m_aligned", 0}, {"pow2_scales", 0}}},
      {"fp8_act_quant", {{"m", 5}, {"k", 384}, {"scale_layout", 1}, {"m_aligned", 8}, {"pow2_scales", 1}}},
      {"silu_mul_fp8_quant", {{"m", 5}, {"k", 256}, {"gate_row_stride", 264}, {"up_row_stride", 256}}},
      {"silu_mul_fp8_quant", {{"m", 3}, {"k", 128}, {"scale_layout", 1}, {"m_aligned", 4}}},
      {"ssm_ba_gates",
       {{"m", 5}, {"n", 8}, {"k", 64}, {"k_stride", 72}, {"gate_stride", 8}, {"nv", 4}, {"vheads_per_group", 2}}},
      {"ssm_ba_gates", {{"m", 3}, {"n", 12}, {"k", 40}, {"vheads_per_group", 3}}},
      {"fused_add_rmsnorm", {{"m", 5}, {"hidden", 256}, {"x_row_stride", 264}, {"residual_row_stride", 256}}},
      {"fused_add_rmsnorm", {{"m", 3}, {"hidden", 204}}},
  };
  constexpr std::uint64_t kMostBytes = std::uint64_t{64} << 20;  // what one shape may allocate here
  std::map<std::string, std::array<int, 3>> counts;              // accepted, refused, too big to run here
  for (const auto& [name, base] : bases) {
    const ops::OpDeclaration& op = runtime->ops().get(name);
    for (const Shape& shape : table_of(base)) {
      INFO(name << " " << text_of(shape));
      const std::string explained = refusal_of([&] { static_cast<void>(runtime->explain(name, shape, true)); });
      // run: the same scalars, each tensor its own poisoned allocation (a small stand-in when the
      // shape needs more than kMostBytes: run must then refuse before touching it).
      std::vector<std::uint64_t> values(op.args.size());
      const std::string bound = refusal_of([&] { ops::bind_shape(op, shape, values); });
      std::uint64_t total = 0;
      bool fits = bound.empty();
      for (std::size_t t = 0; fits && t < op.args.size(); ++t) {
        if (op.args[t].tensor() && !op.args[t].optional) {
          const std::optional<std::uint64_t> bytes = bytes_of(op, values, t);
          fits = bytes && *bytes <= kMostBytes - total;
          total += fits ? *bytes : 0;
        }
      }
      if (!fits && explained.empty()) {
        ++counts[name][2];  // a valid shape too large to run here
        continue;
      }
      std::vector<ops::NamedArg> call = shape;
      std::vector<DevicePtr> buffers;
      for (std::size_t t = 0; t < op.args.size(); ++t) {
        if (!op.args[t].tensor() || op.args[t].optional) {
          continue;
        }
        const std::uint64_t bytes = fits ? std::max<std::uint64_t>(*bytes_of(op, values, t), 1) : 4096;
        buffers.push_back(gpu.alloc(bytes));
        const std::vector<std::uint16_t> random = ref::random_bf16(bytes / 2 + 1, 0x7ab1e + t, 2.0F);
        gpu.copy_to_device(buffers.back(), random.data(), bytes);
        call.push_back({op.args[t].name, buffers.back().address});
      }
      const std::string ran = refusal_of([&] { runtime->run(name, call); });
      for (const DevicePtr buffer : buffers) {
        gpu.free(buffer);
      }
      CHECK(explained == ran);
      ++counts[name][ran.empty() ? 0 : 1];
    }
  }
  for (const auto& [name, count] : counts) {
    INFO(name << ": " << count[0] << " accepted, " << count[1] << " refused, " << count[2] << " too large here");
    CHECK(count[0] > 0);
    CHECK(count[1] > 0);
  }
  CHECK(counts.size() == runtime->ops().ops().size());  // every library op has its table
}

TEST_CASE("explain refuses fp8_act_quant at M 0 K 0 and K 100 with run's message", "[ops][explain]") {
  auto runtime = host_runtime();
  const std::vector<std::pair<Shape, std::string>> refused{
      {{{"m", 0}, {"k", 1024}}, "fp8_act_quant: empty shape M=0 K=1024: M and K must be positive"},
      {{{"m", 64}, {"k", 0}}, "fp8_act_quant: empty shape M=64 K=0: M and K must be positive"},
      {{{"m", 64}, {"k", 100}}, "fp8_act_quant: K=100 is not a multiple of the group size 128"},
  };
  for (const auto& [shape, message] : refused) {
    INFO(text_of(shape));
    CHECK_THROWS_WITH(runtime->explain("fp8_act_quant", shape, true), message);
  }
  // Without M, explain answers every M: the rules between the other sizes still hold.
  CHECK_THROWS_WITH(runtime->explain("fp8_act_quant", Shape{{"k", 100}}, false),
                    "fp8_act_quant: K=100 is not a multiple of the group size 128");
  CHECK(runtime->explain("fp8_act_quant", Shape{{"k", 1024}}, false).roles.size() == 1);
}
