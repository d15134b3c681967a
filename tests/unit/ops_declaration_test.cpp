// The op layer as data: declarations are checked, named arguments bound (every refusal naming
// the op, the argument and the rule), the library's ops run by name and by alias through
// Runtime::run with the bytes their references give, forced roles by name, levers by key with
// provenance, and an engine's op declared in C++ served by the same call.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstring>
#include <functional>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "metrale/error.hpp"
#include "metrale/ops/fp8_act_quant.hpp"
#include "metrale/ops/op_declaration.hpp"
#include "metrale/ops/ssm_ba_gates.hpp"
#include "metrale/runtime.hpp"
#include "ops/fp8_act_quant/fp8_act_quant.hpp"
#include "ref/bf16.hpp"
#include "support/isolated_runtime.hpp"

using namespace metrale;
using metrale::test::upload;

namespace {

std::string error_of(const std::function<void()>& call) {
  try {
    call();
  } catch (const Error& error) {
    return error.what();
  }
  return "";
}

ops::OpDeclaration tiny_op() {
  ops::OpDeclaration op;
  op.name = "tiny";
  op.aliases = {"tiny-op"};
  op.roles = {ops::RoleDecl{"parent", "tiny_kernel", {"plain"}, "", ""}};
  op.args = {ops::tensor_arg("x", ops::ArgKind::kInput, ops::DType::kFp32, 4, {"n"}, "input"),
             ops::scalar_arg("n", std::nullopt, 1024, "length"), ops::scalar_arg("mode", 2, 3, "a mode")};
  op.run = [](const ops::OpContext&, const ops::OpCall& call) {
    ops::Pick pick;
    pick.op = "tiny";
    pick.role = call.forced_role.empty() ? "parent" : call.forced_role;
    pick.add_verdict("parent", std::nullopt);
    return pick;
  };
  return op;
}

}  // namespace

TEST_CASE("a declaration the surfaces cannot serve is refused by name", "[ops][declaration]") {
  CHECK_NOTHROW(ops::check_declaration(tiny_op()));
  ops::OpDeclaration op = tiny_op();
  op.roles.push_back(op.roles.front());
  CHECK(error_of([&] { ops::check_declaration(op); }).find("role 'parent' is declared twice") != std::string::npos);
  op = tiny_op();
  op.args[0].dims = {"rows"};
  CHECK(error_of([&] { ops::check_declaration(op); }).find("dim 'rows' names no scalar") != std::string::npos);
  op = tiny_op();
  op.args[2].fallback = 9;
  CHECK(error_of([&] { ops::check_declaration(op); }).find("scalar 'mode'") != std::string::npos);
  op = tiny_op();
  op.guards = {ops::GuardDecl{"parent", {"too small", "too large", "too small"}}};
  CHECK(error_of([&] { ops::check_declaration(op); }).find("guard reason 'too small' is empty or listed twice") !=
        std::string::npos);
  op = tiny_op();
  op.guards = {ops::GuardDecl{"twin", {"too small"}}};
  CHECK(error_of([&] { ops::check_declaration(op); }).find("guard of role 'twin': no such role") != std::string::npos);
  op = tiny_op();
  op.run = nullptr;
  CHECK(error_of([&] { ops::check_declaration(op); }).find("no run function") != std::string::npos);
  ops::OpSet set;
  set.add(tiny_op());
  ops::OpDeclaration other = tiny_op();
  other.name = "other";
  CHECK(error_of([&] { set.add(other); }).find("the name 'tiny-op' is taken by op 'tiny'") != std::string::npos);
  CHECK(&set.get("tiny-op") == &set.get("tiny"));
  CHECK(error_of([&] { (void)set.get("nope"); }).find("no op named 'nope' (known: tiny)") != std::string::npos);
}

TEST_CASE("named arguments bind in declaration order, with fallbacks, or are refused by name", "[ops][declaration]") {
  const ops::OpDeclaration op = tiny_op();
  std::vector<std::uint64_t> values(op.args.size(), 77);
  const std::vector<ops::NamedArg> good{{"n", 100}, {"x", 0x1000}};
  ops::bind_args(op, good, values);
  CHECK(values == std::vector<std::uint64_t>{0x1000, 100, 2});
  const auto refusal = [&](std::vector<ops::NamedArg> named) {
    return error_of([&] { ops::bind_args(op, named, values); });
  };
  CHECK(refusal({{"n", 100}}).find("tiny: argument 'x' (input fp32) is missing") != std::string::npos);
  CHECK(refusal({{"x", 1}, {"n", 2000}}).find("tiny: n=2000 is outside [0, 1024]") != std::string::npos);
  CHECK(refusal({{"x", 1}, {"n", 1}, {"n", 2}}).find("argument 'n' is given twice") != std::string::npos);
  CHECK(refusal({{"x", 1}, {"n", 1}, {"y", 2}}).find("no argument named 'y' (arguments: x, n, mode)") !=
        std::string::npos);
  // explain's shape binding needs no tensors.
  ops::bind_shape(op, std::vector<ops::NamedArg>{{"n", 5}}, values);
  CHECK(values == std::vector<std::uint64_t>{0, 5, 2});
}

TEST_CASE("the library's ops run by name and alias with their references' bytes", "[ops][declaration][runtime]") {
  auto runtime = Runtime::open(test::isolated_runtime_options(BackendChoice::kHost, 2));
  REQUIRE(runtime->has_device());
  GpuBackend& gpu = *runtime->backend();
  CHECK(runtime->ops().names() ==
        std::vector<std::string>{"ssm_ba_gates", "fp8_act_quant", "silu_mul_fp8_quant", "fused_add_rmsnorm"});

  constexpr std::uint32_t m = 3, k = 1024;
  const std::vector<std::uint16_t> x = ref::random_bf16(std::size_t{m} * k, 91, 3.0f);
  const ref::Fp8RefResult expected = ref::fp8_act_quant_reference(x, ref::Fp8RefShape{m, k, k, false});
  for (const char* name : {"fp8_act_quant", "fp8-quant"}) {
    for (const char* role : {"", "parent", "shared", "twin"}) {
      INFO(name << " role '" << role << "'");
      std::vector<std::uint8_t> q(std::size_t{m} * k, 0xAB);
      std::vector<float> scales(std::size_t{m} * (k / 128), -1.0f);
      const DevicePtr dq = upload(gpu, q), ds = upload(gpu, scales);
      const std::vector<ops::NamedArg> args{
          {"x", upload(gpu, x).address}, {"q", dq.address}, {"scales", ds.address}, {"m", m}, {"k", k}};
      const ops::Pick pick = runtime->run(name, args, 0, role);
      gpu.copy_to_host(q.data(), dq, q.size());
      gpu.copy_to_host(scales.data(), ds, scales.size() * sizeof(float));
      CHECK(q == expected.q);
      CHECK(std::memcmp(scales.data(), expected.scales.data(), scales.size() * sizeof(float)) == 0);
      CHECK(pick.op == "fp8_act_quant");
      CHECK(pick.forced == (std::string(role) != ""));
      CHECK(pick.role == (std::string(role) == "twin" ? "twin" : "parent"));
      CHECK(pick.kernel == (pick.role == "twin" ? "fp8_act_quant_hopper" : "fp8_act_quant"));
      REQUIRE(pick.verdict_count == 1);
      if (std::string(role).empty()) {
        // 3 x 1 twin CTAs on 2 SMs: below the floor of 4.
        CHECK(pick.verdicts[0].role == "twin");
        CHECK(pick.verdicts[0].reason ==
              std::optional<std::string_view>("too few CTAs to fill the device at 8 K-groups per CTA"));
      }
    }
  }
  const std::vector<ops::NamedArg> missing{{"x", 16}, {"q", 16}, {"m", m}, {"k", k}};
  CHECK(error_of([&] { runtime->run("fp8_act_quant", missing); }).find("argument 'scales'") != std::string::npos);
  const std::vector<ops::NamedArg> all{{"x", 16}, {"q", 16}, {"scales", 16}, {"m", m}, {"k", k}};
  CHECK(error_of([&] {
          runtime->run("fp8_act_quant", all, 0, "tensor_core");
        }).find("no kernel role 'tensor_core' (roles: parent (shared), twin)") != std::string::npos);
  CHECK(error_of([&] { runtime->run("gemm", all); }).find("no op named 'gemm'") != std::string::npos);
}

TEST_CASE("explain by name gives the guards' verdicts and smallest M per role", "[ops][declaration][runtime]") {
  auto runtime = Runtime::open(test::isolated_runtime_options(BackendChoice::kHost, 132, "hopper"));
  const std::vector<ops::NamedArg> shape{{"m", 8192}, {"n", 96}, {"k", 5120}, {"vheads_per_group", 3}};
  const ops::Explanation at_m = runtime->explain("ba-gates", shape);
  CHECK(at_m.kernel == "ssm_ba_gates_mma");
  CHECK(at_m.role == "tensor_core");
  REQUIRE(at_m.roles.size() == 3);
  CHECK(at_m.roles[0].role == "tensor_core");
  CHECK(at_m.roles[0].runs);
  CHECK(at_m.roles[1].role == "decode");
  CHECK_FALSE(at_m.roles[1].runs);  // not consulted: the tensor-core kernel ran first
  CHECK(at_m.roles[1].min_m == std::optional<std::uint32_t>(1));
  CHECK(at_m.roles[2].role == "twin");
  // At one token the decode kernel runs, and explain names its ceiling.
  const std::vector<ops::NamedArg> decode_shape{{"m", 1}, {"n", 96}, {"k", 5120}, {"vheads_per_group", 3}};
  const ops::Explanation at_one = runtime->explain("ba-gates", decode_shape);
  CHECK(at_one.kernel == "ssm_ba_gates_splitk");
  REQUIRE(at_one.roles.size() == 3);
  CHECK(at_one.roles[1].runs);
  const auto& details = at_one.roles[1].details;
  CHECK(std::find(details.begin(), details.end(), std::pair<std::string, std::int64_t>{"max_m", 64}) != details.end());
  CHECK(std::find(details.begin(), details.end(), std::pair<std::string, std::int64_t>{"cluster_blocks", 8}) !=
        details.end());
  const ops::Explanation minimum = runtime->explain("fp8_act_quant", std::vector<ops::NamedArg>{{"k", 5120}}, false);
  REQUIRE(minimum.roles.size() == 1);
  CHECK(minimum.roles[0].min_m == std::optional<std::uint32_t>(53));  // the seeds' table at 132 SMs
  CHECK(minimum.kernel.empty());
}

// The guards as data: each library role a lever asks for declares its guard's table, and every
// reason explain gives for it, over random shapes (valid and not), is one of that table's rows.
TEST_CASE("every guarded role declares its guard's table, and its refusals come from it", "[ops][declaration]") {
  // As shipped, and with every lever off (the "not requested" rows).
  auto shipped = Runtime::open(test::isolated_runtime_options(BackendChoice::kHost, 132, "hopper"));
  RuntimeOptions levers_off = test::isolated_runtime_options(BackendChoice::kHost, 132, "hopper");
  for (const LeverSpec& lever : ops::library_ops().levers()) {
    levers_off.levers[lever.toml_key] = false;
  }
  auto off = Runtime::open(std::move(levers_off));
  std::mt19937 random(20261202);
  const std::vector<std::uint64_t> sizes{0, 1, 3, 7, 8, 64, 96, 100, 128, 130, 264, 1024, 5120, 6144, 8192, 17408};
  for (const ops::OpDeclaration& op : ops::library_ops().ops()) {
    std::map<std::string, std::set<std::string>> seen;  // role -> reasons explain gave
    for (const ops::RoleDecl& role : op.roles) {
      CHECK((role.lever.empty() || op.guard(role.role) != nullptr));
    }
    // explain applies run's shape rules, which refuse most random shapes: enough trials that each
    // guard's table is still reached more than once.
    for (int trial = 0; trial < 4000; ++trial) {
      std::vector<ops::NamedArg> shape;
      for (const ops::ArgDecl& arg : op.args) {
        const std::uint64_t value = sizes[random() % sizes.size()];
        if (!arg.tensor() && value >= arg.min && value <= arg.max && random() % 4 != 0) {
          shape.push_back({arg.name, value});
        }
      }
      ops::Explanation explanation;
      try {
        explanation = (trial % 2 == 0 ? shipped : off)->explain(op.name, shape);
      } catch (const ArgumentError&) {
        continue;  // a shape no kernel can take: its refusal is the argument rules' (tested elsewhere)
      }
      for (const ops::RoleExplanation& row : explanation.roles) {
        const ops::GuardDecl* guard = op.guard(row.role);
        REQUIRE(guard != nullptr);
        const auto& declared = guard->reasons;
        if (row.reject) {
          INFO(op.name << " role " << row.role << ": " << *row.reject);
          CHECK(std::find(declared.begin(), declared.end(), *row.reject) != declared.end());
          seen[row.role].insert(*row.reject);
        }
      }
    }
    // The sweep reached more than one row of every guarded role's table, so the check above bit.
    for (const ops::GuardDecl& guard : op.guards) {
      INFO(op.name << " role " << guard.role);
      CHECK(seen[guard.role].size() >= 2);
    }
  }
}

TEST_CASE("levers are found by key and set by the caller's options with provenance", "[ops][declaration][levers]") {
  RuntimeOptions options = test::isolated_runtime_options(BackendChoice::kHost, 2, "hopper");
  options.levers = {{"fp8_act_quant_hopper", false}};
  auto runtime = Runtime::open(options);
  const LeverValue* fp8 = runtime->levers().find("fp8_act_quant_hopper");
  REQUIRE(fp8 != nullptr);
  CHECK_FALSE(fp8->value);
  CHECK(fp8->provenance == Provenance::kOptions);
  CHECK(runtime->levers().find("ssm_ba_gates_hopper")->provenance == Provenance::kFile);
  CHECK(runtime->levers().size() == 6);
  RuntimeOptions unknown = test::isolated_runtime_options(BackendChoice::kHost, 2);
  unknown.levers = {{"warp_speed", true}};
  CHECK(error_of([&] { Runtime::open(unknown); }).find("no op declares the lever 'warp_speed'") != std::string::npos);
}

TEST_CASE("an engine's op is served by name beside the library's", "[ops][declaration][runtime]") {
  RuntimeOptions options = test::isolated_runtime_options(BackendChoice::kHost, 2);
  options.ops.push_back(tiny_op());
  auto runtime = Runtime::open(options);
  CHECK(runtime->ops().names().back() == "tiny");
  const std::vector<ops::NamedArg> args{{"x", 64}, {"n", 8}};
  const ops::Pick pick = runtime->run("tiny-op", args, 0, "plain");
  CHECK(pick.role == "parent");  // the alias resolved to the role's own name
  const ops::OpContext context = runtime->op_context("tiny");
  CHECK_FALSE(context.kernel("parent").shipped);  // no target ships tiny_kernel
  CHECK(error_of([&] { runtime->run("tiny", args, 0, "fast"); }).find("no kernel role 'fast'") != std::string::npos);
}
