// op_check_support.cpp: device buffers, poison, a forced run through the declaration's call, and
// the comparisons the ops' check hooks report with (the FP8 quantisers' codes and scales, bf16
// within ulps too).
#include "ops/op_check_support.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <type_traits>

#include "ops/op_checks.hpp"
#include "ref/bf16.hpp"

namespace metrale::ops::check {

Buffer::Buffer(GpuBackend& gpu, std::uint64_t stream, const void* data, std::size_t bytes)
    : gpu_(gpu), stream_(stream), ptr_(gpu.alloc(std::max<std::size_t>(bytes, 1))), bytes_(bytes) {
  try {
    gpu.copy_to_device_on(stream_, ptr_, data, bytes_);
  } catch (...) {
    gpu.free(ptr_);
    throw;
  }
}

Buffer::~Buffer() {
  try {
    gpu_.free(ptr_);
  } catch (const std::exception&) {  // a failing free must not mask the error being reported
  }
}

void Buffer::read(void* out) const { gpu_.copy_to_host_on(stream_, out, ptr_, bytes_); }

std::vector<float> poisoned_floats(std::size_t count) {
  return std::vector<float>(count, std::bit_cast<float>(kPoisonFloatBits));
}

std::optional<std::string> why_skipped(const OpContext& context, std::string_view role) {
  if (context.gpu == nullptr) {
    return fmt::format("no device: {}", context.no_device_reason);
  }
  const OpKernel& kernel = context.kernel(role);
  if (!kernel.handle.present()) {
    return fmt::format("target {} does not ship {} (or it failed to build)", context.target, kernel.kernel);
  }
  return std::nullopt;
}

double run_forced(const OpContext& context, std::string_view role, std::span<const NamedArg> args,
                  std::uint64_t stream) {
  const OpDeclaration& op = *context.op;
  std::array<std::uint64_t, kMaxArgs> values{};
  const std::span<std::uint64_t> bound(values.data(), op.args.size());
  bind_args(op, args, bound);
  const auto start = std::chrono::steady_clock::now();
  run_op(context, OpCall{bound, stream, role});
  context.gpu->synchronize(stream);
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

CheckResult result_for(const OpContext& context, std::string_view role, std::string shape, std::string check) {
  CheckResult result;
  result.role = std::string(role);
  result.kernel = std::string(context.kernel(role).kernel);
  result.shape = std::move(shape);
  result.check = std::move(check);
  return result;
}

std::string element(std::string_view name, std::size_t flat, std::size_t cols) {
  return cols == 0 ? fmt::format("{}[{}]", name, flat) : fmt::format("{}[{}][{}]", name, flat / cols, flat % cols);
}

namespace {

template <typename T>
std::string value_text(T value) {
  if constexpr (std::is_floating_point_v<T>) {
    return fmt::format("{:.9g} (bits {:#010x})", value, std::bit_cast<std::uint32_t>(value));
  } else {
    return fmt::format("{:#04x}", static_cast<unsigned>(value));
  }
}

}  // namespace

template <typename T>
void compare_bytes(CheckResult& result, std::string_view name, std::span<const T> got, std::span<const T> want,
                   std::size_t cols, std::string_view against) {
  if (got.size() != want.size()) {
    result.verdict = CheckVerdict::kFailed;
    result.worst = fmt::format("{}: {} elements, {} has {}", name, got.size(), against, want.size());
    return;
  }
  std::size_t differing = 0;
  std::optional<std::size_t> first;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (std::memcmp(&got[i], &want[i], sizeof(T)) != 0) {
      ++differing;
      first = first.value_or(i);
    }
  }
  if (!first) {
    result.verdict = CheckVerdict::kPassed;
    result.worst = fmt::format("all {} {} elements equal {}'s bytes", got.size(), name, against);
    return;
  }
  result.verdict = CheckVerdict::kFailed;
  result.worst = fmt::format("{} of {} differ; first {} = {}, {} {}", differing, got.size(),
                             element(name, *first, cols), value_text(got[*first]), against, value_text(want[*first]));
}

template void compare_bytes<float>(CheckResult&, std::string_view, std::span<const float>, std::span<const float>,
                                   std::size_t, std::string_view);
template void compare_bytes<std::uint16_t>(CheckResult&, std::string_view, std::span<const std::uint16_t>,
                                           std::span<const std::uint16_t>, std::size_t, std::string_view);
template void compare_bytes<std::uint8_t>(CheckResult&, std::string_view, std::span<const std::uint8_t>,
                                          std::span<const std::uint8_t>, std::size_t, std::string_view);

std::vector<float> scales_by_token(std::span<const float> raw, std::uint32_t m, std::uint32_t groups, bool column_major,
                                   std::uint32_t m_aligned) {
  std::vector<float> out(std::size_t{m} * groups);
  for (std::uint32_t t = 0; t < m; ++t) {
    for (std::uint32_t g = 0; g < groups; ++g) {
      out[std::size_t{t} * groups + g] =
          column_major ? raw[std::size_t{g} * m_aligned + t] : raw[std::size_t{t} * groups + g];
    }
  }
  return out;
}

void compare_quantised(CheckResult& result, const Quantised& got, std::span<const std::uint8_t> want_q,
                       std::span<const float> want_scales, std::uint32_t k, std::string_view against) {
  compare_bytes<std::uint8_t>(result, "q", got.q, want_q, k, against);
  if (result.verdict != CheckVerdict::kPassed) {
    return;
  }
  const std::string codes = result.worst;
  compare_bytes<float>(result, "scales", got.scales, want_scales, k / detail::kQuantGroupSize, against);
  if (result.verdict == CheckVerdict::kPassed) {
    result.worst = codes + "; " + result.worst;
  }
}

void check_parent_and_twin(const OpContext& context, const std::string& shape, const QuantisedRoles& roles,
                           const Quantised& reference, std::uint32_t k, std::vector<CheckResult>& out) {
  std::optional<Quantised> parent;
  if (roles.want_parent || roles.want_twin) {
    CheckResult row = result_for(context, roles.parent, shape, std::string(roles.parent_check));
    if (roles.parent_skipped) {
      row.worst = *roles.parent_skipped;
    } else {
      parent = roles.run_parent();
      row.ms = parent->ms;
      if (roles.compare_parent) {
        roles.compare_parent(row, *parent);
      } else {
        compare_quantised(row, *parent, reference.q, reference.scales, k, "the reference");
      }
    }
    if (roles.want_parent) {
      out.push_back(std::move(row));
    }
  }
  if (!roles.want_twin) {
    return;
  }
  // The twin's bytes are the parent's: that equality is what a twin promises and what publishes it.
  const Quantised& against = parent ? *parent : reference;
  CheckResult row = result_for(context, roles.twin, shape, parent ? "bytes == parent" : "bytes == reference");
  if (const auto skipped = why_skipped(context, roles.twin)) {
    row.worst = *skipped;
  } else {
    const Quantised twin = roles.run_twin();
    row.ms = twin.ms;
    compare_quantised(row, twin, against.q, against.scales, k, parent ? "the parent" : "the reference");
  }
  out.push_back(std::move(row));
}

void compare_bf16_ulps(CheckResult& result, std::string_view name, std::span<const std::uint16_t> got,
                       std::span<const std::uint16_t> want, std::size_t cols, std::uint32_t max_ulps,
                       std::string_view against) {
  if (got.size() != want.size()) {
    result.verdict = CheckVerdict::kFailed;
    result.worst = fmt::format("{}: {} elements, {} has {}", name, got.size(), against, want.size());
    return;
  }
  std::size_t differing = 0;
  std::size_t past = 0;
  std::optional<std::size_t> worst_at;  // the first element farthest off (+0 against -0: 0 ulps)
  std::uint32_t worst = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (got[i] == want[i]) {
      continue;
    }
    const std::uint32_t ulps = ref::bf16_ulp_distance(got[i], want[i]);
    ++differing;
    past += ulps > max_ulps ? 1 : 0;
    if (!worst_at || ulps > worst) {
      worst = ulps;
      worst_at = i;
    }
  }
  result.verdict = past == 0 ? CheckVerdict::kPassed : CheckVerdict::kFailed;
  if (!worst_at) {
    result.worst = fmt::format("all {} {} elements equal {}'s bytes", got.size(), name, against);
    return;
  }
  const std::string gap = worst == ref::kNotNear ? std::string("a NaN") : fmt::format("{} ulp", worst);
  result.worst = fmt::format("{}: {} of {} differ from {}, {} by > {} bf16 ulp; worst {} = {:#06x}, {} {:#06x} ({})",
                             name, differing, got.size(), against, past, max_ulps, element(name, *worst_at, cols),
                             got[*worst_at], against, want[*worst_at], gap);
}

void compare_relative(CheckResult& result, std::string_view name, std::span<const float> got,
                      std::span<const float> want, std::size_t cols, double tolerance) {
  std::size_t bad = 0;
  std::size_t worst_at = 0;
  double worst = -1.0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    const double gap = std::abs(double{got[i]} - double{want[i]}) / std::max(std::abs(double{want[i]}), 1e-30);
    const double ranked = std::isnan(gap) ? INFINITY : gap;
    bad += ranked > tolerance ? 1 : 0;
    if (ranked > worst) {
      worst = ranked;
      worst_at = i;
    }
  }
  result.verdict = bad == 0 && got.size() == want.size() ? CheckVerdict::kPassed : CheckVerdict::kFailed;
  result.worst = want.empty()
                     ? "no elements"
                     : fmt::format("{} of {} off by > {:g} rel; worst {} = {:.9g}, reference {:.9g}", bad, want.size(),
                                   tolerance, element(name, worst_at, cols), got[worst_at], want[worst_at]);
}

void compare_frobenius(CheckResult& result, std::string_view name, std::span<const float> got,
                       std::span<const double> want, std::size_t cols, double bound, std::string_view against) {
  if (got.size() != want.size()) {
    result.verdict = CheckVerdict::kFailed;
    result.worst = fmt::format("{}: {} elements, {} has {}", name, got.size(), against, want.size());
    return;
  }
  double diff = 0.0;
  double norm = 0.0;
  std::size_t worst_at = 0;
  double worst = -1.0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    const double gap = double{got[i]} - want[i];
    diff += gap * gap;
    norm += want[i] * want[i];
    const double ranked = std::isnan(gap) ? INFINITY : std::abs(gap);
    if (ranked > worst) {
      worst = ranked;
      worst_at = i;
    }
  }
  const double error = std::sqrt(diff / norm);  // NaN (an unwritten poison) fails below
  result.verdict = error < bound ? CheckVerdict::kPassed : CheckVerdict::kFailed;
  result.worst = want.empty()
                     ? "no elements"
                     : fmt::format("rel Frobenius {:.3g} (bound {:g}); worst {} = {:.9g}, {} {:.9g}", error, bound,
                                   element(name, worst_at, cols), got[worst_at], against, want[worst_at]);
}

}  // namespace metrale::ops::check
