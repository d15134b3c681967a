// The typed view of a call's values (ops/op_arg_fields.hpp): one list of members reads every kind
// of argument in declaration order and writes it back unchanged, a place the struct does not hold
// is skipped both ways, the two-value rule for enums and bools is the [0, 1] scalar's, a zero that
// stands for another size takes it, and a declaration with another number of arguments than its
// list, another kind at a place, or another stand-in for a zero than its call reads, is refused
// when built.
#include "ops/op_arg_fields.hpp"

#include <array>
#include <bit>
#include <catch2/catch.hpp>
#include <cstdint>
#include <optional>
#include <random>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "ops/core/library_ops.hpp"
#include "ops/op_positions.hpp"

using namespace metrale;

namespace {

enum class Layout { kRowMajor, kColumnMajor };

struct MixedArgs {
  DevicePtr in, out;
  std::uint32_t rows = 0, cols = 0;
  float eps = 0.0F;
  bool pow2 = false;
  Layout layout = Layout::kRowMajor;
};

// "out" sits after a place the struct does not hold (a scratch the call reads itself).
using A = MixedArgs;
using Fields = ops::ArgFields<A, &A::in, ops::kNotInArgs, &A::out, &A::rows, &A::cols, &A::eps, &A::pow2, &A::layout>;

// Random values every field keeps: addresses of 64 bits, sizes of 32, a finite float's bits, 0 or 1.
std::vector<std::uint64_t> random_values(std::mt19937_64& rng) {
  std::uniform_real_distribution<float> finite(-1e6F, 1e6F);
  return {rng(),
          rng(),  // the skipped place
          rng(),      rng() & UINT32_MAX, rng() & UINT32_MAX, std::bit_cast<std::uint32_t>(finite(rng)),
          rng() & 1U, rng() & 1U};
}

}  // namespace

TEST_CASE("an argument list knows what each of its places reads", "[ops][arg_fields]") {
  using K = ops::ArgFieldKind;
  STATIC_REQUIRE(Fields::kinds == std::array{K::kPointer, K::kNotHeld, K::kPointer, K::kScalar, K::kScalar, K::kScalar,
                                             K::kFlag, K::kFlag});
}

TEST_CASE("an op's argument list reads each kind in declaration order and writes it back unchanged",
          "[ops][arg_fields]") {
  STATIC_REQUIRE(Fields::count == 8);
  std::mt19937_64 rng(0x5eed0a19);
  for (int trial = 0; trial < 200; ++trial) {
    const std::vector<std::uint64_t> values = random_values(rng);
    const MixedArgs args = Fields::read(values);
    CHECK(args.in.address == values[0]);
    CHECK(args.out.address == values[2]);
    CHECK(args.rows == values[3]);
    CHECK(args.cols == values[4]);
    CHECK(std::bit_cast<std::uint32_t>(args.eps) == values[5]);
    CHECK(args.pow2 == (values[6] == 1));
    CHECK(args.layout == (values[7] == 1 ? Layout::kColumnMajor : Layout::kRowMajor));

    const std::array<std::uint64_t, ops::kMaxArgs> written = Fields::write(args);
    CHECK(written[1] == 0);  // the struct holds nothing there
    for (std::size_t i : {0U, 2U, 3U, 4U, 5U, 6U, 7U}) {
      CHECK(written[i] == values[i]);
    }
    CHECK(written[Fields::count] == 0);
  }
}

TEST_CASE("an op's enum or bool argument reads 1 as its second value and anything else as its first",
          "[ops][arg_fields]") {
  std::mt19937_64 rng(0xb00115);
  std::vector<std::uint64_t> values(Fields::count, 0);
  for (int trial = 0; trial < 50; ++trial) {
    const std::uint64_t other = rng() | 2U;  // never 1
    values[6] = other;
    values[7] = other;
    const MixedArgs args = Fields::read(values);
    CHECK_FALSE(args.pow2);
    CHECK(args.layout == Layout::kRowMajor);
  }
  values[6] = 1;
  values[7] = 1;
  const MixedArgs args = Fields::read(values);
  CHECK(args.pow2);
  CHECK(args.layout == Layout::kColumnMajor);
}

namespace {

struct StrideArgs {
  DevicePtr x;
  std::uint32_t n = 0, k = 0, k_stride = 0, nv = 0;
};
using S = StrideArgs;
using StrideFields = ops::ArgFields<S, &S::x, &S::n, &S::k, &S::k_stride, &S::nv>;
using StrideDefaults =
    ops::ZeroMeansList<StrideFields, ops::ZeroMeans<&S::k_stride, &S::k>, ops::ZeroMeans<&S::nv, &S::n, 2>>;

// x [n][k_stride], n, k, k_stride (0: k), nv (0: n/2), as a declaration states them.
ops::OpDeclaration stride_op() {
  ops::OpDeclaration op;
  op.name = "planted";
  op.args = {ops::tensor_arg("x", ops::ArgKind::kInput, ops::DType::kBf16, 16, {"n", "k_stride"}, "rows"),
             ops::scalar_arg("n", std::nullopt, UINT32_MAX, "rows"),
             ops::scalar_arg("k", std::nullopt, UINT32_MAX, "columns"),
             ops::scalar_arg("k_stride", 0, UINT32_MAX, "row stride (0: k)").with_zero_means("k"),
             ops::scalar_arg("nv", 0, UINT32_MAX, "heads (0: n / 2)").with_zero_means("n/2")};
  return op;
}

}  // namespace

TEST_CASE("a zero that stands for another size takes it, any other value stays", "[ops][arg_fields]") {
  STATIC_REQUIRE(StrideDefaults::places.size() == 2);
  STATIC_REQUIRE(StrideDefaults::places[0].scalar == 3);
  STATIC_REQUIRE(StrideDefaults::places[0].size == 2);
  STATIC_REQUIRE(StrideDefaults::places[0].divisor == 1);
  STATIC_REQUIRE(StrideDefaults::places[1].scalar == 4);
  STATIC_REQUIRE(StrideDefaults::places[1].size == 1);
  STATIC_REQUIRE(StrideDefaults::places[1].divisor == 2);
  std::mt19937_64 rng(0x2e40d3f1);
  for (int trial = 0; trial < 200; ++trial) {
    // Each defaulted place is 0 half the time, else a random size (never 0).
    const auto maybe_zero = [&] { return (rng() & 1U) != 0 ? 0 : 1 + rng() % UINT32_MAX; };
    const std::vector<std::uint64_t> values{rng(), 1 + rng() % UINT32_MAX, 1 + rng() % UINT32_MAX, maybe_zero(),
                                            maybe_zero()};
    StrideArgs args = StrideFields::read(values);
    StrideDefaults::apply(args);
    INFO("n " << values[1] << " k " << values[2] << " k_stride " << values[3] << " nv " << values[4]);
    CHECK(args.k_stride == (values[3] == 0 ? values[2] : values[3]));
    CHECK(args.nv == (values[4] == 0 ? values[1] / 2 : values[4]));
    CHECK(args.n == values[1]);
    CHECK(args.k == values[2]);
  }
}

TEST_CASE("a declaration whose zero stands for another size than its call reads is refused, naming both",
          "[ops][arg_fields]") {
  const ops::OpDeclaration op = stride_op();
  CHECK_NOTHROW(ops::require_arg_fields(op, StrideFields::kinds, StrideDefaults::places));
  const auto message_of = [&](std::vector<ops::ZeroMeansPlaces> rules) {
    try {
      ops::require_arg_fields(op, StrideFields::kinds, rules);
    } catch (const std::logic_error& error) {
      return std::string(error.what());
    }
    return std::string();
  };
  CHECK(message_of({{3, 1, 1}, {4, 1, 2}}) ==
        "planted: the declaration's argument at position 3 is 'k_stride', whose 0 stands for 'k', but its call reads 0 "
        "there as 'n'");
  CHECK(message_of({{3, 2, 1}, {4, 1, 4}}) ==
        "planted: the declaration's argument at position 4 is 'nv', whose 0 stands for 'n/2', but its call reads 0 "
        "there as 'n/4'");
  CHECK(message_of({{3, 2, 1}}) ==
        "planted: the declaration's argument at position 4 is 'nv', whose 0 stands for 'n/2', but its call reads 0 "
        "there as nothing (0 is 0)");
  CHECK(message_of({{1, 2, 1}, {3, 2, 1}, {4, 1, 2}}) ==
        "planted: the declaration's argument at position 1 is 'n', whose 0 stands for nothing (0 is 0), but its call "
        "reads 0 there as 'k'");
  // The library's ops state their stand-ins twice too (declaration and call): each builds only
  // when they agree (the declaration's own require_arg_fields).
  for (const ops::LibraryOp& entry : ops::library_op_list()) {
    CHECK_NOTHROW(entry.declaration());
  }
}

TEST_CASE("a declaration with another number of arguments than its call reads is refused, naming both counts",
          "[ops][arg_fields]") {
  for (const ops::LibraryOp& entry : ops::library_op_list()) {
    const ops::OpDeclaration op = entry.declaration();  // each library op checks its own count here
    INFO(op.name);
    CHECK_NOTHROW(ops::require_arg_count(op, op.args.size()));
    std::string message;
    try {
      ops::require_arg_count(op, op.args.size() + 1);
    } catch (const std::logic_error& error) {
      message = error.what();
    }
    CHECK(message == op.name + ": the declaration has " + std::to_string(op.args.size()) +
                         " arguments, but its call reads " + std::to_string(op.args.size() + 1));
    CHECK_THROWS_AS(ops::require_arg_at(op, 0, "no_such_argument"), std::logic_error);
    CHECK_NOTHROW(ops::require_arg_at(op, 0, op.args[0].name));
  }
}

TEST_CASE("a declaration whose argument at a place is of another kind than its call reads is refused, naming it",
          "[ops][arg_fields]") {
  using K = ops::ArgFieldKind;
  ops::OpDeclaration op;
  op.name = "planted";
  op.args = {ops::tensor_arg("x", ops::ArgKind::kInput, ops::DType::kBf16, 16, {"m"}, "rows"),
             ops::scalar_arg("m", std::nullopt, UINT32_MAX, "tokens"), ops::scalar_arg("pow2", 0, 1, "a flag")};
  CHECK_NOTHROW(ops::require_arg_fields(op, std::array{K::kPointer, K::kScalar, K::kFlag}));
  CHECK_NOTHROW(ops::require_arg_fields(op, std::array{K::kNotHeld, K::kScalar, K::kScalar}));
  const auto message_of = [&](std::span<const K> kinds) {
    try {
      ops::require_arg_fields(op, kinds);
    } catch (const std::logic_error& error) {
      return std::string(error.what());
    }
    return std::string();
  };
  CHECK(message_of(std::array{K::kScalar, K::kScalar, K::kFlag}) ==
        "planted: the declaration's argument at position 0 is 'x', a tensor, but its call reads a 32-bit scalar there");
  CHECK(message_of(std::array{K::kPointer, K::kPointer, K::kFlag}) ==
        "planted: the declaration's argument at position 1 is 'm', a scalar in [0, 4294967295], but its call reads a "
        "pointer there");
  CHECK(message_of(std::array{K::kPointer, K::kFlag, K::kFlag}) ==
        "planted: the declaration's argument at position 1 is 'm', a scalar in [0, 4294967295], but its call reads a "
        "0/1 value there");
  CHECK(message_of(std::array{K::kPointer, K::kScalar}) ==
        "planted: the declaration has 3 arguments, but its call reads 2");
}
