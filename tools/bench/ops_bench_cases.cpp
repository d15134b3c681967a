// ops_bench_cases.cpp: both kernels of each op at every benchmark shape: upload rotating input
// sets, check the output once against the reference (poison first), then time.
// Invariants: inputs are seeded random values, never zeros; the sets rotate in launch order so
// a set's previous use is (sets - 1) launches back and, with the sets spanning more than twice
// the L2, its inputs come from device memory; a kernel that fails its check is never timed;
// twin and parent must also agree byte for byte over the whole output. BA rows are judged by
// support/ba_gates_check.hpp (the GPU tests' tolerance: the device's expf differs from glibc's);
// FP8 codes and scales must equal the reference exactly. A kernel verification refused on this
// device (in this runtime, or in the child process of --verify isolated) is never launched: its
// rows are printed as refused with the reason, never dropped.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <numeric>
#include <set>

#include "metrale/ops/fp8_act_quant.hpp"
#include "metrale/ops/ssm_ba_gates.hpp"
#include "metrale/runtime.hpp"
#include "ops/fp8_act_quant/fp8_act_quant.hpp"
#include "ops/op_verdict.hpp"
#include "ops/ssm_ba_gates/ssm_ba_gates.hpp"
#include "ops_bench.hpp"
#include "ops_bench_roles.hpp"
#include "ref/bf16.hpp"
#include "support/ba_gates_check.hpp"

namespace metrale::bench {
namespace {

constexpr std::uint32_t kPoisonBits = 0x7FBADBADu;  // a NaN no kernel writes
constexpr std::uint8_t kPoisonQ = 0x7F;             // e4m3fn NaN; the kernels saturate to +-448
constexpr std::size_t kAlign = 256;
constexpr std::size_t kMaxSets = 4096;

std::size_t aligned(std::size_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }

// How many input sets to rotate so that together they span `rotate_bytes` (at least 2).
int set_count(std::size_t set_bytes, const BenchSettings& settings) {
  const std::size_t wanted = (settings.rotate_bytes + set_bytes - 1) / std::max<std::size_t>(set_bytes, 1);
  return static_cast<int>(std::clamp<std::size_t>(wanted, 2, kMaxSets));
}

// One array per set, cut from a single allocation so thousands of sets cost one cuMemAlloc.
struct Slab {
  DevicePtr base;
  std::size_t stride = 0;
  [[nodiscard]] DevicePtr at(int set) const { return base.offset(std::size_t(set) * stride); }
};

// An uninitialised array per set (an output the poison fills).
Slab alloc_slab(DeviceBuffers& buffers, std::size_t bytes, int sets) {
  return Slab{buffers.alloc(aligned(bytes) * std::size_t(sets)), aligned(bytes)};
}

// `data` copied into each set's array.
Slab upload_slab(GpuBackend& gpu, DeviceBuffers& buffers, const void* data, std::size_t bytes, int sets) {
  const Slab slab = alloc_slab(buffers, bytes, sets);
  for (int s = 0; s < sets; ++s) {
    gpu.copy_to_device(slab.at(s), data, bytes);
  }
  return slab;
}

// First, last, middle and a few spread rows: the reference runs on these only, so the check
// stays cheap at M = 8192; the poison scan still covers every row.
std::vector<std::uint32_t> sample_rows(std::uint32_t m) {
  std::set<std::uint32_t> rows{0, m - 1, m / 2};
  for (std::uint32_t i = 1; i <= 5 && i < m; ++i) {
    rows.insert(static_cast<std::uint32_t>((std::uint64_t(m) * i * 7919u / 6u) % m));
  }
  return {rows.begin(), rows.end()};
}

// The rows `rows` of a row-major [M][k] bf16 matrix, in that order: the reference's input.
std::vector<std::uint16_t> gather_rows(const std::vector<std::uint16_t>& all, const std::vector<std::uint32_t>& rows,
                                       std::uint32_t k) {
  std::vector<std::uint16_t> out;
  out.reserve(rows.size() * k);
  for (const std::uint32_t r : rows) {
    out.insert(out.end(), all.begin() + std::ptrdiff_t(std::size_t(r) * k),
               all.begin() + std::ptrdiff_t(std::size_t(r + 1) * k));
  }
  return out;
}

template <typename T>
std::size_t count_bits(const std::vector<T>& values, std::uint32_t bits) {
  return static_cast<std::size_t>(std::count_if(values.begin(), values.end(), [&](const T& v) {
    std::uint32_t word = 0;
    std::memcpy(&word, &v, sizeof(T));
    return word == bits;
  }));
}

// The BA kernels the bench runs at every shape, in this order (the twin is compared with the
// parent's bytes, so the parent goes first).
enum class BaKernel { kParent, kTwin, kMma, kMmaShaped, kDecode };

std::string_view ba_kernel_name(BaKernel which) {
  switch (which) {
    case BaKernel::kParent:
      return "parent";
    case BaKernel::kTwin:
      return "twin";
    case BaKernel::kMma:
      return "mma";
    case BaKernel::kMmaShaped:
      return "mma_s";  // + its tile count: "mma_s6", as the profile's bench_key spells it
    case BaKernel::kDecode:
      return "decode";
  }
  return "?";
}

// `launch(set, stream)`: the events time it on the default stream, the graph on a capture stream.
void time_kernel(KernelResult& result, BenchClock* clock, const BenchSettings& settings, int sets,
                 const std::function<void(int, std::uint64_t)>& launch) {
  if (!result.checked || clock == nullptr || settings.sanity) {
    return;
  }
  clock->time_runs(settings.warmup, [&](int i) { launch(i % sets, 0); });
  const std::vector<double> us = clock->time_runs(settings.repeats, [&](int i) { launch(i % sets, 0); });
  result.median_us = median(us);
  result.min_us = *std::min_element(us.begin(), us.end());
  result.graph_us = clock->graph_us(settings.repeats, [&](int i, std::uint64_t stream) { launch(i % sets, stream); });
}

}  // namespace

void run_ba_gates(Runtime& runtime, BenchClock* clock, const BenchSettings& settings, const ResultSink& sink) {
  GpuBackend& gpu = *runtime.backend();
  BaRefusals refusals;
  const ops::BaGatesKernels kernels = ba_gates_kernels(runtime, settings, refusals);
  const std::uint32_t n = settings.ba_n, k = settings.ba_k, nv = settings.ba_nv, vpg = settings.ba_vpg;
  const ShapedMma shaped = shaped_mma(runtime, settings, n, k, vpg, refusals.shaped);
  const std::uint32_t gate_stride = 2 * nv;
  const std::uint32_t max_m = *std::max_element(settings.ms.begin(), settings.ms.end());
  const auto x_all = ref::random_bf16(std::size_t(max_m) * k, 1001);
  const auto weight = ref::random_bf16(std::size_t(n) * k, 1002, 0.05f);
  const auto a_log = ref::random_floats(nv, 1003, -1.0f, 1.0f);
  const auto dt_bias = ref::random_floats(nv, 1004, -1.0f, 1.0f);

  for (const std::uint32_t m : settings.ms) {
    const std::size_t x_bytes = std::size_t(m) * k * 2, w_bytes = std::size_t(n) * k * 2;
    const std::size_t out_bytes = std::size_t(m) * gate_stride * 4, vec_bytes = std::size_t(nv) * 4;
    const int sets = set_count(x_bytes + w_bytes + out_bytes + 2 * vec_bytes, settings);
    DeviceBuffers buffers(gpu);
    const Slab x = upload_slab(gpu, buffers, x_all.data(), x_bytes, sets);
    const Slab w = upload_slab(gpu, buffers, weight.data(), w_bytes, sets);
    const Slab al = upload_slab(gpu, buffers, a_log.data(), vec_bytes, sets);
    const Slab dt = upload_slab(gpu, buffers, dt_bias.data(), vec_bytes, sets);
    const Slab out = alloc_slab(buffers, out_bytes, sets);
    auto args_of = [&](int s) {
      return ops::BaGatesArgs{x.at(s), w.at(s), al.at(s), dt.at(s), out.at(s), m, n, k, k, gate_stride, nv, vpg};
    };
    ops::validate_ba_gates_args(args_of(0));

    // The reference on the sampled rows.
    const std::vector<std::uint32_t> rows = sample_rows(m);
    const std::vector<std::uint16_t> x_rows = gather_rows(x_all, rows, k);
    const auto rows_m = static_cast<std::uint32_t>(rows.size());
    std::vector<float> expected(std::size_t(rows_m) * gate_stride, 0.0f);
    ref::ssm_ba_gates_reference({x_rows, weight, a_log, dt_bias}, {rows_m, n, k, k, gate_stride, nv, vpg}, expected);

    std::vector<float> parent_out;
    // The op's own choice with every lever on (the tensor-core guard first, the decode kernel's,
    // then the twin's).
    const ops::BaGatesPick pick = ops::ba_gates_pick_with_decode(
        ops::ba_gates_pick_with_mma(ops::ba_gates_mma_query(gpu, kernels, true, args_of(0)), kernels.mma, true,
                                    kernels.parent, kernels.twin),
        ops::ba_gates_decode_query(gpu, kernels, true, args_of(0)), kernels.splitk);
    std::vector<double> oracle;  // the float64 oracle of the sampled rows, for the tensor-core kernel
    for (const BaKernel which :
         {BaKernel::kParent, BaKernel::kTwin, BaKernel::kMma, BaKernel::kMmaShaped, BaKernel::kDecode}) {
      // The tensor-core and decode kernels sum in another order: judged against the oracle.
      const bool other_order = which != BaKernel::kParent && which != BaKernel::kTwin;
      const KernelHandle handle = which == BaKernel::kParent   ? kernels.parent
                                  : which == BaKernel::kTwin   ? kernels.twin
                                  : which == BaKernel::kMma    ? kernels.mma
                                  : which == BaKernel::kDecode ? kernels.splitk
                                                               : shaped.handle;
      const KernelParams& mma_params = which == BaKernel::kMmaShaped ? shaped.params : kernels.mma_params;
      const std::string& refusal = which == BaKernel::kParent   ? refusals.parent
                                   : which == BaKernel::kTwin   ? refusals.twin
                                   : which == BaKernel::kMma    ? refusals.mma
                                   : which == BaKernel::kDecode ? refusals.decode
                                                                : refusals.shaped;
      std::string name(ba_kernel_name(which));
      if (which == BaKernel::kMmaShaped) {
        name += std::to_string(shaped.params.shape);
      }
      if (handle.value == 0) {
        if (!refusal.empty()) {
          sink(refused_result("ssm_ba_gates", name, m, k, n, x_bytes + w_bytes + 2 * vec_bytes + out_bytes, refusal));
        }
        continue;  // refused, or not shipped by this target (or no variant published for this N)
      }
      KernelResult result = new_result("ssm_ba_gates", name, m, k, n);
      result.bytes = x_bytes + w_bytes + 2 * vec_bytes + out_bytes;
      result.flops = 2.0 * m * n * k;
      // A call takes the specialised variant whenever it is published, the generic form otherwise.
      result.picked = which == BaKernel::kMmaShaped ? pick.mma
                      : which == BaKernel::kMma     ? pick.mma && !shaped.handle.present()
                      : which == BaKernel::kDecode
                          ? pick.decode
                          : !pick.mma && !pick.decode && pick.twin == (which == BaKernel::kTwin);
      result.input_sets = sets;
      auto launch = [&](int s, std::uint64_t stream) {
        switch (which) {
          case BaKernel::kParent:
            ops::launch_ba_gates_parent(gpu, handle, kernels.parent_params, args_of(s), stream);
            break;
          case BaKernel::kTwin:
            ops::launch_ba_gates_twin(gpu, handle, kernels.twin_params, args_of(s), stream);
            break;
          case BaKernel::kMma:
          case BaKernel::kMmaShaped:
            ops::launch_ba_gates_mma(gpu, handle, mma_params, args_of(s), stream, settings.mma_max_cluster);
            break;
          case BaKernel::kDecode:
            ops::launch_ba_gates_splitk(gpu, handle, kernels.splitk_params, args_of(s), stream);
            break;
        }
      };
      std::vector<float> got(std::size_t(m) * gate_stride);
      std::uint32_t poison_bits = kPoisonBits;
      std::vector<float> poison(got.size());
      for (float& p : poison) {
        std::memcpy(&p, &poison_bits, 4);
      }
      gpu.copy_to_device(out.at(0), poison.data(), out_bytes);
      launch(0, 0);
      gpu.synchronize(0);
      gpu.copy_to_host(got.data(), out.at(0), out_bytes);
      const std::size_t unwritten = count_bits(got, kPoisonBits);
      // The row's verdict: an unwritten output first, then the check's own failure, else what passed.
      auto record = [&](const check::BaRunCheck& verdict, std::string passed) {
        std::string note =
            unwritten != 0 ? fmt::format("{} of {} outputs unwritten", unwritten, got.size()) : verdict.failure;
        result.checked = note.empty();
        result.check_note = result.checked ? std::move(passed) : std::move(note);
      };
      if (other_order) {
        // Another summation order: judged by its error against the float64 oracle, not bytes.
        if (oracle.empty()) {
          oracle = ref::ssm_ba_gates_oracle({x_rows, weight, a_log, dt_bias}, {rows_m, n, k, k, gate_stride, nv, vpg});
        }
        const check::BaRunCheck verdict = check::check_ba_mma_run(got, rows, oracle, gate_stride, nv);
        record(verdict, fmt::format("poison scan + {} rows within {:g} relative Frobenius error of the float64 oracle "
                                    "({:.2g})",
                                    rows.size(), check::kBaGatesMmaMaxRelativeFrobenius, verdict.worst_gap));
      } else {
        const bool twin = which == BaKernel::kTwin;
        const check::BaRunCheck verdict = check::check_ba_run(
            got, rows, expected, gate_stride, nv, twin ? std::span<const float>(parent_out) : std::span<const float>());
        record(verdict, fmt::format("poison scan + {} rows within {:g} relative of the reference (worst {:.2g}){}",
                                    rows.size(), check::kBaGatesMaxRelativeGap, verdict.worst_gap,
                                    twin ? " + twin bytes == parent bytes" : ""));
        if (!twin) {
          parent_out = std::move(got);
        }
      }
      time_kernel(result, clock, settings, sets, launch);
      sink(std::move(result));
    }
  }
}

void run_fp8_quant(Runtime& runtime, BenchClock* clock, const BenchSettings& settings, const ResultSink& sink) {
  GpuBackend& gpu = *runtime.backend();
  std::array<std::string, 2> refusals;  // shared, twin
  const ops::Fp8QuantKernels kernels = fp8_quant_kernels(runtime, settings, refusals);
  const std::uint32_t sm_count = ops::device_sm_count(gpu, kFallbackSmCount);
  const std::uint32_t max_m = *std::max_element(settings.ms.begin(), settings.ms.end());
  for (const std::uint32_t k : settings.fp8_ks) {
    const auto x_all = ref::random_bf16(std::size_t(max_m) * k, 2000 + k, 4.0f);
    for (const std::uint32_t m : settings.ms) {
      const std::size_t x_bytes = std::size_t(m) * k * 2, q_bytes = std::size_t(m) * k;
      const std::size_t s_bytes = std::size_t(m) * (k / ops::kFp8QuantGroupSize) * 4;
      const int sets = set_count(x_bytes + q_bytes + s_bytes, settings);
      DeviceBuffers buffers(gpu);
      const Slab x = upload_slab(gpu, buffers, x_all.data(), x_bytes, sets);
      const Slab q = alloc_slab(buffers, q_bytes, sets);
      const Slab sc = alloc_slab(buffers, s_bytes, sets);
      auto args_of = [&](int s) { return ops::Fp8QuantArgs{x.at(s), q.at(s), sc.at(s), m, k, k}; };
      ops::validate_fp8_quant_args(args_of(0));

      const std::vector<std::uint32_t> rows = sample_rows(m);
      const std::vector<std::uint16_t> x_rows = gather_rows(x_all, rows, k);
      const auto expected = ref::fp8_act_quant_reference(x_rows, {std::uint32_t(rows.size()), k, k, false});
      const std::size_t groups = k / ops::kFp8QuantGroupSize;

      std::vector<std::uint8_t> shared_q;
      std::vector<float> shared_scales;
      const bool op_twin = ops::fp8_quant_pick(true, kernels, m, k, sm_count).twin;
      for (const bool twin : {false, true}) {
        // The library's own pick with only this kernel present selects it and sets its grid.
        ops::Fp8QuantKernels only = kernels;
        (twin ? only.shared : only.twin) = KernelHandle{0};
        if ((twin ? kernels.twin : kernels.shared).value == 0) {
          if (const std::string& refusal = refusals[twin ? 1 : 0]; !refusal.empty()) {
            sink(refused_result("fp8_act_quant", twin ? "twin" : "shared", m, k, 0, x_bytes + q_bytes + s_bytes,
                                refusal));
          }
          continue;  // refused, or not shipped by this target
        }
        const ops::Fp8QuantPick pick = ops::fp8_quant_pick(true, only, m, k, sm_count);
        KernelResult result = new_result("fp8_act_quant", twin ? "twin" : "shared", m, k, 0);
        result.bytes = x_bytes + q_bytes + s_bytes;
        result.flops = 3.0 * m * k;  // |x| and max, x / s, the rounding: no multiply-add to count
        result.picked = op_twin == twin;
        result.input_sets = sets;
        std::string note;
        if (pick.twin != twin) {
          note = "the library's pick did not select this kernel with the other absent";
        }
        auto launch = [&](int s, std::uint64_t stream) { ops::launch_fp8_quant(gpu, pick, args_of(s), stream); };
        std::vector<std::uint8_t> got_q(q_bytes, kPoisonQ);
        std::vector<float> got_s(std::size_t(m) * groups);
        std::uint32_t poison_bits = kPoisonBits;
        for (float& p : got_s) {
          std::memcpy(&p, &poison_bits, 4);
        }
        gpu.copy_to_device(q.at(0), got_q.data(), q_bytes);
        gpu.copy_to_device(sc.at(0), got_s.data(), s_bytes);
        if (note.empty()) {
          launch(0, 0);
          gpu.synchronize(0);
        }
        gpu.copy_to_host(got_q.data(), q.at(0), q_bytes);
        gpu.copy_to_host(got_s.data(), sc.at(0), s_bytes);
        const std::size_t unwritten_q = std::size_t(std::count(got_q.begin(), got_q.end(), kPoisonQ));
        const std::size_t unwritten_s = count_bits(got_s, kPoisonBits);
        if (note.empty() && unwritten_q + unwritten_s != 0) {
          note = fmt::format("{} q bytes and {} scales unwritten", unwritten_q, unwritten_s);
        }
        for (std::size_t i = 0; i < rows.size() && note.empty(); ++i) {
          const std::size_t r = rows[i];
          if (std::memcmp(&got_q[r * k], &expected.q[i * k], k) != 0 ||
              std::memcmp(&got_s[r * groups], &expected.scales[i * groups], groups * 4) != 0) {
            note = fmt::format("row {} differs from the reference", r);
          }
        }
        if (note.empty() && twin && !shared_q.empty() && (shared_q != got_q || shared_scales != got_s)) {
          note = "twin output differs from the shared kernel's bytes";
        }
        result.checked = note.empty();
        result.check_note =
            result.checked ? fmt::format("poison scan + {} rows bit-equal to the reference", rows.size()) : note;
        if (!twin) {
          shared_q = std::move(got_q);
          shared_scales = std::move(got_s);
        }
        time_kernel(result, clock, settings, sets, launch);
        sink(std::move(result));
      }
    }
  }
}

}  // namespace metrale::bench
