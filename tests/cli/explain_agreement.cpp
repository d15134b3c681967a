// explain_agreement.cpp: runs `metrale-jit explain ... --json` over a grid of shapes, SM
// counts, levers (the three BA levers) and targets, and checks each answer against the ops' own pick functions
// called here directly. Usage: explain_agreement <path to metrale-jit>. Exit 0 when all agree.
#include <fmt/format.h>

#include <array>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "hardware/hardware_loader.hpp"
#include "hardware/target_selection.hpp"
#include "metrale/ops/fp8_act_quant.hpp"
#include "metrale/ops/ssm_ba_gates.hpp"
#include "ops/fp8_act_quant/fp8_act_quant.hpp"
#include "ops/op_kernels.hpp"
#include "ops/ssm_ba_gates/ssm_ba_gates.hpp"

namespace {

nlohmann::json run_json(const std::string& command) {
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(command.c_str(), "r"), pclose);
  if (!pipe) {
    throw std::runtime_error("cannot run " + command);
  }
  std::string out;
  std::array<char, 4096> buffer{};
  while (std::fgets(buffer.data(), static_cast<int>(buffer.size()), pipe.get()) != nullptr) {
    out += buffer.data();
  }
  return nlohmann::json::parse(out);
}

metrale::KernelHandle shipped(const metrale::HardwareTarget& target, std::string_view kernel) {
  return metrale::KernelHandle{target.find_kernel(kernel) != nullptr ? 1u : 0u};
}

int failures = 0;
int checks = 0;

void expect(bool ok, const std::string& what) {
  ++checks;
  if (!ok) {
    ++failures;
    std::fprintf(stderr, "DISAGREE: %s\n", what.c_str());
  }
}

void compare(const nlohmann::json& got, bool twin, const std::optional<std::string_view>& reject,
             std::string_view kernel, const std::string& command) {
  expect(got.at("twin").get<bool>() == twin, command + " (twin)");
  expect(got.at("kernel").get<std::string>() == kernel, command + " (kernel)");
  if (reject) {
    expect(got.at("reject").is_string() && got.at("reject").get<std::string>() == *reject, command + " (reject)");
  } else {
    expect(got.at("reject").is_null(), command + " (reject null)");
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: explain_agreement <metrale-jit>\n");
    return 2;
  }
  const std::string cli = argv[1];
  const auto targets = metrale::load_targets(metrale::ops::library_catalog());
  namespace ops = metrale::ops;
  for (const char* name : {"hopper", "gb10", "b300"}) {
    const metrale::HardwareTarget& target = *metrale::find_target(targets, name);
    for (const bool lever : {false, true}) {
      for (const std::uint32_t sm : {1u, 132u}) {
        for (const std::uint32_t m : {1u, 2u, 263u, 264u, 265u}) {
          for (const auto& [n, k, stride] :
               {std::array<std::uint32_t, 3>{96, 5120, 5120}, {96, 5124, 5124}, {64, 2048, 2040}, {0, 2048, 2048}}) {
            for (const auto& [tensor_core, decode] :
                 {std::pair{false, false}, {false, true}, {true, false}, {true, true}}) {
              const std::string command = fmt::format(
                  "{} explain ba-gates --target {} --m {} --n {} --k {} --k-stride {} --sm-count {} --lever {} "
                  "--tensor-core {} --lever-set ssm_ba_gates_decode={} --json",
                  cli, name, m, n, k, stride, sm, lever ? "on" : "off", tensor_core ? "on" : "off",
                  decode ? "on" : "off");
              ops::BaGatesMmaQuery query;
              query.requested = tensor_core;
              query.compute_capability = target.compute_capability;
              query.m = m;
              query.n = n;
              query.k = k;
              query.k_stride = stride;
              query.sm_count = sm;
              if (const auto* mma = target.find_kernel(ops::kBaGatesMmaKernel)) {
                query.tokens_per_block = mma->params.lanes;
                query.stages = mma->params.groups;
              }
              query.max_shared_bytes = ops::ba_gates_mma_shared_limit(std::nullopt, target.compute_capability);
              metrale::KernelParams splitk;
              if (const auto* shipped_splitk = target.find_kernel(ops::kBaGatesSplitKKernel)) {
                splitk = shipped_splitk->params;
              }
              const ops::BaGatesArgs shape{{}, {}, {}, {}, {}, m, n, k, stride, 0, 0, 0};
              const auto pick = ops::ba_gates_pick_with_decode(
                  ops::ba_gates_pick_with_mma(query, shipped(target, ops::kBaGatesMmaKernel), lever,
                                              shipped(target, ops::kBaGatesParentKernel),
                                              shipped(target, ops::kBaGatesTwinKernel)),
                  ops::ba_gates_decode_query(splitk, decode, false, target.compute_capability, sm, shape),
                  shipped(target, ops::kBaGatesSplitKKernel));
              const nlohmann::json got = run_json(command);
              compare(got, pick.twin, pick.reject,
                      pick.mma      ? ops::kBaGatesMmaKernel
                      : pick.decode ? ops::kBaGatesSplitKKernel
                                    : (pick.twin ? ops::kBaGatesTwinKernel : ops::kBaGatesParentKernel),
                      command);
              const nlohmann::json& dec = got.at("decode");
              expect(dec.at("runs").get<bool>() == pick.decode, command + " (decode.runs)");
              expect(pick.decode_reject ? dec.at("reject") == std::string(*pick.decode_reject)
                                        : dec.at("reject").is_null(),
                     command + " (decode.reject)");
              const nlohmann::json& tc = got.at("tensor_core");
              expect(tc.at("runs").get<bool>() == pick.mma, command + " (tensor_core.runs)");
              expect(pick.mma_reject ? tc.at("reject") == std::string(*pick.mma_reject) : tc.at("reject").is_null(),
                     command + " (tensor_core.reject)");
            }
          }
          for (const std::uint32_t k : {5120u, 6144u, 17408u}) {
            const std::string command =
                fmt::format("{} explain fp8-quant --target {} --m {} --k {} --sm-count {} --lever {} --json", cli, name,
                            m * 7, k, sm, lever ? "on" : "off");
            ops::Fp8QuantKernels kernels;
            kernels.shared = shipped(target, ops::kFp8QuantSharedKernel);
            kernels.twin = shipped(target, ops::kFp8QuantTwinKernel);
            const auto pick = ops::fp8_quant_pick(lever, kernels, m * 7, k, sm);
            compare(run_json(command), pick.twin, pick.reject,
                    pick.twin ? ops::kFp8QuantTwinKernel : ops::kFp8QuantSharedKernel, command);
          }
        }
      }
    }
  }
  std::printf("explain agreement: %d checks, %d disagreements\n", checks, failures);
  return failures == 0 ? 0 : 1;
}
