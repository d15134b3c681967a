// tests/support/fp8_spec_compare.hpp: what the tests of fp8_act_quant declared as data (from C++ or
// a TOML op file) compare with the library's declaration: a table of shapes (zero, unaligned,
// overflowing, each rule's edge, both scale layouts), a table of setups (kernels present or not,
// the lever, forced roles, SM counts), one call's outcome as text (the error type, or role, kernel,
// handle, verdicts, grid, block and argument bytes, on a recording backend), and explain's answer.
#pragma once

#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <optional>
#include <string>
#include <vector>

#include "metrale/error.hpp"
#include "metrale/ops/op_declaration.hpp"
#include "support/ops_recording_gpu.hpp"

namespace metrale::test::fp8_compare {

using namespace metrale::ops;

struct Shape {
  std::uint64_t m, k, stride = 0, layout = 0, m_aligned = 0, pow2 = 0;
  std::uint64_t x_offset = 0;  // added to x's address (misalignment)
};

struct Setup {
  bool parent = true;
  bool twin = true;
  bool lever = true;
  std::optional<std::uint32_t> device_sms = 132;
  std::uint32_t fallback_sms = 132;
  std::string_view forced;
};

inline OpContext context_for(const OpDeclaration& op, GpuBackend* gpu, const Setup& s, const LeverValue& lever) {
  OpContext context;
  context.op = &op;
  context.gpu = gpu;
  context.target = "hopper";
  context.fallback_sm_count = s.fallback_sms;
  context.kernels[0] = OpKernel{op.roles[0].role,
                                op.roles[0].kernel,
                                true,
                                KernelParams{0, 16, 1, 0},
                                s.parent ? KernelHandle{31} : KernelHandle{},
                                {}};
  context.kernels[1] = OpKernel{op.roles[1].role,
                                op.roles[1].kernel,
                                true,
                                KernelParams{0, 4, 8, 0},
                                s.twin ? KernelHandle{32} : KernelHandle{},
                                {}};
  context.levers[0] = &lever;
  return context;
}

inline std::vector<std::uint64_t> values_for(const Shape& shape) {
  return {(1ULL << 52) + shape.x_offset,
          2ULL << 52,
          3ULL << 52,
          shape.m,
          shape.k,
          shape.stride,
          shape.layout,
          shape.m_aligned,
          shape.pow2};
}

// One call's outcome, as text both declarations must give alike.
inline std::string outcome(const OpDeclaration& op, const Shape& shape, const Setup& s) {
  test::RecordingGpu gpu(s.device_sms);
  const LeverValue lever{s.lever, Provenance::kBuiltIn, "test"};
  const OpContext context = context_for(op, &gpu, s, lever);
  const std::vector<std::uint64_t> values = values_for(shape);
  try {
    const Pick pick = run_op(context, OpCall{values, 0, s.forced});
    std::string text = fmt::format("{} {} h{} forced={}", pick.role, pick.kernel, pick.handle.value, pick.forced);
    for (const Verdict& v : pick.ordered_verdicts()) {
      text += fmt::format(" [{}: {}]", v.role, v.reason.value_or("runs"));
    }
    REQUIRE(gpu.launches.size() == 1);
    const auto& l = gpu.launches[0];
    text += fmt::format(" grid=({},{},{}) block=({},{},{}) args:", l.config.grid.x, l.config.grid.y, l.config.grid.z,
                        l.config.block.x, l.config.block.y, l.config.block.z);
    for (const auto& arg : l.args) {
      text += fmt::format(" {:02x}", fmt::join(arg, ""));
    }
    return text;
  } catch (const KernelChoiceError&) {  // an ArgumentError: caught first
    return "KernelChoiceError";
  } catch (const ArgumentError&) {
    return "ArgumentError";
  } catch (const BackendError&) {
    return "BackendError";
  }
}

// Explain's answer at the shape (M given), as text; and whether it is the run's pick.
inline std::string explained(const OpDeclaration& op, const Shape& shape, const Setup& s, bool with_min_m) {
  test::RecordingGpu gpu(s.device_sms);
  const LeverValue lever{s.lever, Provenance::kBuiltIn, "test"};
  const OpContext context = context_for(op, &gpu, s, lever);
  std::vector<std::uint64_t> values = values_for(shape);
  values[0] = values[1] = values[2] = 0;
  try {
    const Explanation e = explain_op(context, ExplainQuery{values, true});
    REQUIRE(e.roles.size() == 1);
    const RoleExplanation& twin = e.roles[0];
    std::string text = fmt::format("{} {} runs={} reject={}", e.role, e.kernel, twin.runs, twin.reject.value_or("-"));
    if (with_min_m) {
      text += fmt::format(" min_m={} why={}", twin.min_m ? std::to_string(*twin.min_m) : "never",
                          twin.min_reason.value_or("-"));
    }
    return text;
  } catch (const ArgumentError&) {
    return "ArgumentError";
  }
}

inline const std::vector<Shape>& shapes() {
  static const std::vector<Shape> table = {
      {0, 5120},  // empty
      {8, 0},
      {8, 100},  // not a multiple of 128
      {8, 5000},
      {52, 5120},  // the floor's edge at 132 SMs: 52 x 5 = 260 < 264 <= 53 x 5
      {53, 5120},
      {43, 6144},
      {44, 6144},
      {15, 17408},
      {16, 17408},
      {263, 128},  // one group per row: one twin CTA per token
      {264, 128},
      {131, 1152},  // 9 groups: 2 twin CTAs per token, the second partial
      {132, 1152},
      {1, 5120},
      {64, 5120, 4096},  // stride < K
      {64, 5120, 5124},  // stride not a multiple of 8
      {64, 5120, 8192},
      {64, 5120, 0, 1, 64},  // column-major scales
      {64, 5120, 0, 1, 60},  // m_aligned < M
      {64, 5120, 0, 1, 66},  // m_aligned not a multiple of 4
      {50, 6144, 8192, 1, 52, 1},
      {64, 5120, 0, 0, 0, 1},                         // power-of-two scales
      {64, 5120, 0, 0, 0, 0, 8},                      // x not 16-byte aligned
      {0xffffffffULL, 0xffffff80ULL, 0xffffff80ULL},  // the extent overflows
      {0x80000000ULL, 5120},                          // past grid.x
      {0x7fffffffULL, 128},                           // at grid.x
      {1, 128ULL * 65536ULL},                         // past grid.y
      {1, 128ULL * 65535ULL},                         // at grid.y
      {0x7fffffffULL, 128, 0xfffffff8ULL},            // the largest extent that fits
  };
  return table;
}

inline std::vector<Setup> setups() {
  std::vector<Setup> out;
  for (const bool parent : {true, false}) {
    for (const bool twin : {true, false}) {
      for (const bool lever : {true, false}) {
        for (const std::string_view forced : {"", "parent", "twin", "shared"}) {
          out.push_back(Setup{parent, twin, lever, 132, 132, forced});
        }
      }
    }
  }
  out.push_back(Setup{true, true, true, 48, 132, ""});           // the device's SM count
  out.push_back(Setup{true, true, true, std::nullopt, 48, ""});  // the target's, the device cannot say
  out.push_back(Setup{true, true, true, std::nullopt, 0, ""});   // 0 counts as 1
  return out;
}

// Every (shape, setup) call gives `data` the library's outcome.
inline void check_runs_as_library(const OpDeclaration& data) {
  const OpDeclaration& library = library_ops().get("fp8_act_quant");
  std::size_t compared = 0;
  std::size_t twin_runs = 0;
  std::size_t refused = 0;
  for (const Shape& shape : shapes()) {
    for (const Setup& setup : setups()) {
      INFO(fmt::format(
          "M={} K={} stride={} layout={} m_aligned={} pow2={} x+{} | parent={} twin={} lever={} sms={} "
          "fallback={} forced='{}'",
          shape.m, shape.k, shape.stride, shape.layout, shape.m_aligned, shape.pow2, shape.x_offset, setup.parent,
          setup.twin, setup.lever, setup.device_sms.value_or(0), setup.fallback_sms, setup.forced));
      const std::string want = outcome(library, shape, setup);
      CHECK(outcome(data, shape, setup) == want);
      ++compared;
      twin_runs += want.rfind("twin ", 0) == 0 ? 1 : 0;
      refused += want.find(' ') == std::string::npos ? 1 : 0;
    }
  }
  // The table reaches both kernels and every refusal.
  CHECK(twin_runs > 50);
  CHECK(refused > 50);
  CHECK(compared == shapes().size() * setups().size());
}

// Explain agrees with the library's and with `data`'s own run at every shape and setup.
inline void check_explains_as_library(const OpDeclaration& data) {
  const OpDeclaration& library = library_ops().get("fp8_act_quant");
  for (const Shape& shape : shapes()) {
    if (shape.x_offset != 0) {
      continue;  // explain takes no addresses
    }
    for (Setup setup : setups()) {
      if (!setup.forced.empty()) {
        continue;
      }
      INFO(fmt::format("M={} K={} stride={} layout={} m_aligned={} | parent={} twin={} lever={} sms={}", shape.m,
                       shape.k, shape.stride, shape.layout, shape.m_aligned, setup.parent, setup.twin, setup.lever,
                       setup.device_sms.value_or(0)));
      // The library's smallest M is its closed form even with no parent (where the twin runs at any
      // M); the data op's search answers 1 there. Compared wherever the parent is present.
      const std::string want = explained(library, shape, setup, setup.parent);
      CHECK(explained(data, shape, setup, setup.parent) == want);
      // Explain and run agree: the role explain names is the role run takes (or both refuse).
      const std::string run = outcome(data, shape, setup);
      if (want == "ArgumentError") {
        CHECK(run == "ArgumentError");
      } else if (run != "BackendError") {
        CHECK(run.substr(0, run.find(' ')) == want.substr(0, want.find(' ')));
      }
    }
  }
}

}  // namespace metrale::test::fp8_compare
