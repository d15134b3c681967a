// call_alloc_test.cpp: an op call allocates nothing on the library's side once warmed up and
// prepared (issue 25: the launch path an engine can afford). Its own executable, since it
// replaces the global operator new: every allocation on the calling thread is counted while a
// test asks, then the counts are compared to zero. The backend is the counting test backend,
// which allocates nothing itself, so what is counted is the runtime's, the ops' and the launch
// path's (the host backend's fibers are a device's work, not the call's).
#include <catch2/catch.hpp>
#include <cstdlib>
#include <new>
#include <vector>

#include "metrale/ops/fp8_act_quant.hpp"
#include "metrale/ops/ssm_ba_gates.hpp"
#include "metrale/runtime.hpp"
#include "support/counting_gpu.hpp"
#include "support/isolated_runtime.hpp"

namespace {

thread_local bool counting = false;
thread_local long allocations = 0;

void* allocate(std::size_t size, std::size_t alignment) {
  if (counting) {
    ++allocations;
  }
  const std::size_t bytes = size == 0 ? 1 : size;
  if (alignment <= alignof(std::max_align_t)) {
    return std::malloc(bytes);
  }
  return std::aligned_alloc(alignment, (bytes + alignment - 1) / alignment * alignment);
}

void* allocate_or_throw(std::size_t size, std::size_t alignment) {
  if (void* p = allocate(size, alignment)) {
    return p;
  }
  throw std::bad_alloc();
}

// The allocations `body` makes on this thread.
template <typename Body>
long allocations_in(Body&& body) {
  allocations = 0;
  counting = true;
  body();
  counting = false;
  return allocations;
}

}  // namespace

void* operator new(std::size_t size) { return allocate_or_throw(size, 0); }
void* operator new[](std::size_t size) { return allocate_or_throw(size, 0); }
void* operator new(std::size_t size, const std::nothrow_t& /*tag*/) noexcept { return allocate(size, 0); }
void* operator new[](std::size_t size, const std::nothrow_t& /*tag*/) noexcept { return allocate(size, 0); }
void* operator new(std::size_t size, std::align_val_t alignment) {
  return allocate_or_throw(size, static_cast<std::size_t>(alignment));
}
void* operator new[](std::size_t size, std::align_val_t alignment) {
  return allocate_or_throw(size, static_cast<std::size_t>(alignment));
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t /*size*/) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t /*size*/) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t /*alignment*/) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t /*alignment*/) noexcept { std::free(p); }
void operator delete(void* p, std::size_t /*size*/, std::align_val_t /*alignment*/) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t /*size*/, std::align_val_t /*alignment*/) noexcept { std::free(p); }

using namespace metrale;

namespace {

constexpr std::uint64_t kStream = 0x5151;
constexpr int kCalls = 200;
// Never dereferenced by the counting backend; each tensor 4 GiB from the next, so no two overlap
// (an output overlapping an input is refused).
constexpr std::uint64_t kAddress = std::uint64_t{1} << 30;
constexpr std::uint64_t address_of(int tensor) { return kAddress + (std::uint64_t{1} << 32) * tensor; }

std::vector<ops::NamedArg> ba_args(std::uint32_t m) {
  return {{"x", address_of(0)},
          {"weight", address_of(1)},
          {"a_log", address_of(2)},
          {"dt_bias", address_of(3)},
          {"gate_out", address_of(4)},
          {"m", m},
          {"n", 96},
          {"k", 5120},
          {"vheads_per_group", 3}};
}

}  // namespace

TEST_CASE("an op call allocates nothing on the library's side after warm-up and prepare", "[alloc]") {
  CHECK(allocations_in([] { delete new int(3); }) == 1);  // the counter counts
  auto owned = std::make_unique<test::CountingGpu>(4);
  test::CountingGpu& gpu = *owned;
  auto runtime = Runtime::open_with(std::move(owned), test::isolated_runtime_options(BackendChoice::kHost));
  // M 1 (the decode step: the parent), M 64 (the twin on 4 SMs), M 256 (the tensor-core kernel).
  for (const std::uint32_t m : {1U, 64U, 256U}) {
    INFO("M = " << m);
    const std::vector<ops::NamedArg> args = ba_args(m);
    std::vector<ops::NamedArg> shape(args.begin() + 5, args.end());
    runtime->prepare("ssm_ba_gates", shape);
    const std::string_view role = runtime->run("ssm_ba_gates", args).role;  // warm-up: the log slots
    const int launches = gpu.launches;
    CHECK(allocations_in([&] {
            for (int i = 0; i < kCalls; ++i) {
              static_cast<void>(runtime->run("ssm_ba_gates", args));
            }
          }) == 0);
    ops::BaGatesArgs typed{DevicePtr{address_of(0)},
                           DevicePtr{address_of(1)},
                           DevicePtr{address_of(2)},
                           DevicePtr{address_of(3)},
                           DevicePtr{address_of(4)},
                           m,
                           96,
                           5120,
                           5120,
                           96,
                           48,
                           3};
    CHECK(allocations_in([&] {
            for (int i = 0; i < kCalls; ++i) {
              static_cast<void>(ops::ssm_ba_gates(*runtime, typed));
            }
          }) == 0);
    gpu.capturing_stream = kStream;
    CHECK(runtime->run("ssm_ba_gates", args, kStream).role == role);
    CHECK(allocations_in([&] {
            for (int i = 0; i < kCalls; ++i) {
              static_cast<void>(runtime->run("ssm_ba_gates", args, kStream));
            }
          }) == 0);
    gpu.capturing_stream = 0;
    CHECK(gpu.launches == launches + 3 * kCalls + 1);
  }
  const std::vector<ops::NamedArg> quant = {
      {"x", address_of(0)}, {"q", address_of(1)}, {"scales", address_of(2)}, {"m", 1}, {"k", 4096}};
  static_cast<void>(runtime->run("fp8_act_quant", quant));
  CHECK(allocations_in([&] {
          for (int i = 0; i < kCalls; ++i) {
            static_cast<void>(runtime->run("fp8_act_quant", quant));
          }
        }) == 0);
}
