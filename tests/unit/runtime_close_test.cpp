// runtime_close_test.cpp: Runtime::close while other threads call the ops by name, through an
// OpRef and through the typed entry point (the calls in flight finish with the reference's bytes,
// the later ones throw ClosedError, nothing is freed under a call: TSan runs the [concurrency]
// cases), and every public call after close is refused; close twice, close from inside a call of
// the same runtime (what a log callback does), close while a background build runs, and
// destruction after close.
#include <algorithm>
#include <array>
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "metrale/error.hpp"
#include "metrale/ops/fp8_act_quant.hpp"
#include "metrale/runtime.hpp"
#include "ops/fp8_act_quant/fp8_act_quant.hpp"
#include "ref/bf16.hpp"
#include "support/isolated_runtime.hpp"

using namespace metrale;
using namespace std::chrono_literals;

namespace {

constexpr std::uint32_t kM = 2, kK = 256;

std::unique_ptr<Runtime> host_runtime(LoadMode mode = LoadMode::kWaitForAll) {
  RuntimeOptions options = metrale::test::isolated_runtime_options(BackendChoice::kHost, 1);
  options.host_worker_threads = 1;
  options.load_mode = mode;
  return Runtime::open(std::move(options));
}

// One caller's buffers (host addresses: the host backend's device addresses), poisoned per call.
struct Fp8Call {
  const std::vector<std::uint16_t>* x = nullptr;
  std::vector<std::uint8_t> q = std::vector<std::uint8_t>(std::size_t{kM} * kK);
  std::vector<float> scales = std::vector<float>(std::size_t{kM} * (kK / 128));

  void poison() {
    std::fill(q.begin(), q.end(), std::uint8_t{0xA5});
    std::fill(scales.begin(), scales.end(), -1.0f);
  }
  [[nodiscard]] std::array<ops::NamedArg, 5> args() {
    return {ops::NamedArg{"x", reinterpret_cast<std::uintptr_t>(x->data())},
            ops::NamedArg{"q", reinterpret_cast<std::uintptr_t>(q.data())},
            ops::NamedArg{"scales", reinterpret_cast<std::uintptr_t>(scales.data())}, ops::NamedArg{"m", kM},
            ops::NamedArg{"k", kK}};
  }
  [[nodiscard]] ops::Fp8QuantArgs typed_args() const {
    ops::Fp8QuantArgs typed;
    typed.x = DevicePtr{reinterpret_cast<std::uintptr_t>(x->data())};
    typed.q = DevicePtr{reinterpret_cast<std::uintptr_t>(q.data())};
    typed.scales = DevicePtr{reinterpret_cast<std::uintptr_t>(scales.data())};
    typed.m = kM;
    typed.k = kK;
    typed.x_row_stride = kK;
    return typed;
  }
  [[nodiscard]] bool untouched() const {
    return std::all_of(q.begin(), q.end(), [](std::uint8_t b) { return b == 0xA5; }) &&
           std::all_of(scales.begin(), scales.end(), [](float s) { return s == -1.0f; });
  }
  [[nodiscard]] bool matches(const ref::Fp8RefResult& want) const {
    return q == want.q && std::memcmp(scales.data(), want.scales.data(), scales.size() * sizeof(float)) == 0;
  }
};

// How one caller thread ended: after `good` right results, by ClosedError (else what).
struct CallerEnd {
  int good = 0;
  bool closed = false;
  bool wrong = false;
  bool untouched_when_closed = false;
  std::string other;
};

}  // namespace

TEST_CASE("Runtime close while threads call ops waits for the calls in flight and refuses later ones",
          "[close][concurrency]") {
  const auto x = ref::random_bf16(std::size_t{kM} * kK, 20261203, 6.0f);
  const ref::Fp8RefResult want = ref::fp8_act_quant_reference(x, {kM, kK, kK, false});
  constexpr int kRounds = 200, kThreads = 3;
  for (int round = 0; round < kRounds; ++round) {
    std::unique_ptr<Runtime> runtime = host_runtime();
    const OpRef op = runtime->op("fp8_act_quant");
    std::atomic<int> started{0};
    std::vector<CallerEnd> ends(kThreads);
    std::vector<std::thread> callers;
    for (int t = 0; t < kThreads; ++t) {
      callers.emplace_back([&, t] {
        Fp8Call call;
        call.x = &x;
        CallerEnd& end = ends[static_cast<std::size_t>(t)];
        for (;;) {
          call.poison();
          try {
            const auto args = call.args();
            // By name, through the OpRef and through the typed entry point in turn: all three
            // pass the same gate (the typed one holds it from context to launch: while_held).
            switch (end.good % 3) {
              case 0:
                (void)runtime->run("fp8_act_quant", args);
                break;
              case 1:
                (void)op.run(args);
                break;
              default:
                (void)ops::fp8_act_quant(*runtime, call.typed_args());
                break;
            }
          } catch (const ClosedError&) {
            end.closed = true;
            end.untouched_when_closed = call.untouched();
            return;
          } catch (const std::exception& error) {
            end.other = error.what();
            return;
          }
          if (!call.matches(want)) {
            end.wrong = true;
            return;
          }
          if (++end.good == 1) {
            started.fetch_add(1);
          }
        }
      });
    }
    while (started.load() < kThreads) {
      std::this_thread::yield();
    }
    runtime->close();  // the callers are mid-call: it waits for them, then frees
    for (std::thread& caller : callers) {
      caller.join();
    }
    for (const CallerEnd& end : ends) {
      INFO("round " << round << ": " << end.good << " good calls, then " << end.other);
      CHECK(end.other.empty());
      CHECK_FALSE(end.wrong);
      CHECK(end.closed);
      CHECK(end.untouched_when_closed);
      CHECK(end.good >= 1);
    }
    runtime->close();  // a second close returns
    runtime.reset();   // destruction after close
  }
}

TEST_CASE("Runtime close refuses every public call with ClosedError and keeps its state readable", "[close]") {
  std::unique_ptr<Runtime> runtime = host_runtime();
  const auto x = ref::random_bf16(std::size_t{kM} * kK, 7, 6.0f);
  Fp8Call call;
  call.x = &x;
  call.poison();
  const OpRef op = runtime->op("fp8_act_quant");
  (void)runtime->run("fp8_act_quant", call.args());
  CHECK(call.matches(ref::fp8_act_quant_reference(x, {kM, kK, kK, false})));
  CHECK_FALSE(runtime->closed());
  runtime->close();
  CHECK(runtime->closed());
  call.poison();
  const std::array<ops::NamedArg, 2> shape{ops::NamedArg{"m", kM}, ops::NamedArg{"k", kK}};
  CHECK_THROWS_AS(runtime->run("fp8_act_quant", call.args()), ClosedError);
  CHECK_THROWS_WITH(runtime->run("fp8_act_quant", call.args()), Catch::Matchers::Contains("this Runtime is closed"));
  CHECK_THROWS_AS(op.run(call.args()), ClosedError);
  CHECK_THROWS_AS(op.run_values(std::array<std::uint64_t, 1>{}), ClosedError);
  CHECK_THROWS_AS(runtime->prepare("fp8_act_quant", shape), ClosedError);
  CHECK_THROWS_AS(runtime->explain("fp8_act_quant", shape), ClosedError);
  CHECK_THROWS_AS(runtime->shape_variants("fp8_act_quant", shape), ClosedError);
  CHECK_THROWS_AS(runtime->op("fp8_act_quant"), ClosedError);
  CHECK_THROWS_AS(runtime->op_context("fp8_act_quant"), ClosedError);
  CHECK_THROWS_AS(runtime->call_context("fp8_act_quant", 0, ""), ClosedError);
  CHECK_THROWS_AS(runtime->call_context_for("fp8_act_quant", {}, 0, ""), ClosedError);
  CHECK_THROWS_AS(runtime->kernel_handle("fp8_act_quant"), ClosedError);
  CHECK_THROWS_AS(runtime->variant_id("fp8_act_quant"), ClosedError);
  CHECK_THROWS_AS(runtime->verdicts(), ClosedError);
  CHECK_THROWS_AS(runtime->verdict("fp8_act_quant"), ClosedError);
  CHECK_THROWS_AS(runtime->verification_enabled(), ClosedError);
  CHECK_THROWS_AS(runtime->verification_checks_run(), ClosedError);
  CHECK_THROWS_AS(runtime->registry(), ClosedError);
  CHECK_THROWS_AS(runtime->backend(), ClosedError);
  CHECK_THROWS_AS(Runtime::CallScope(*runtime), ClosedError);
  CHECK(call.untouched());
  // State, not calls: still readable.
  CHECK(runtime->has_device());
  CHECK(runtime->target().name == "hopper");
  CHECK_FALSE(runtime->ops().ops().empty());
  CHECK(op.declaration().name == "fp8_act_quant");
  runtime->close();  // a second close returns
}

TEST_CASE("Runtime close from inside a call of the same runtime returns and frees after the call",
          "[close][concurrency]") {
  // What a log callback inside an op call does: this thread holds the runtime open, so close
  // cannot wait for it; it refuses new calls and returns, and a closer thread frees later.
  std::unique_ptr<Runtime> runtime = host_runtime();
  const auto x = ref::random_bf16(std::size_t{kM} * kK, 11, 6.0f);
  Fp8Call call;
  call.x = &x;
  {
    const Runtime::CallScope inside(*runtime);
    CHECK(runtime->held_by_this_thread());
    runtime->close();  // returns: a wait here would be for this very thread
    CHECK(runtime->closed());
    call.poison();
    // A nested call from the same callback is refused too; the call in progress is not freed.
    CHECK_THROWS_AS(runtime->run("fp8_act_quant", call.args()), ClosedError);
    CHECK(call.untouched());
    runtime->close();  // again from inside: returns too
  }
  CHECK_FALSE(runtime->held_by_this_thread());
  runtime->close();  // outside: waits for the closer thread
  CHECK_THROWS_AS(runtime->registry(), ClosedError);
  runtime.reset();
}

TEST_CASE("Runtime close waits for a background build in flight and refuses calls meanwhile", "[close][concurrency]") {
  std::atomic<bool> in_gate{false}, release{false};
  RuntimeOptions options = metrale::test::isolated_runtime_options(BackendChoice::kHost, 1);
  options.host_worker_threads = 1;
  options.load_mode = LoadMode::kBackgroundTwins;
  options.registry->background_gate = [&] {
    in_gate = true;
    while (!release.load()) {
      std::this_thread::sleep_for(1ms);
    }
  };
  std::unique_ptr<Runtime> runtime = Runtime::open(std::move(options));
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (!in_gate.load() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(1ms);
  }
  REQUIRE(in_gate.load());  // the target ships background twins: their build is held
  std::atomic<bool> close_returned{false};
  std::thread closer([&] {
    runtime->close();
    close_returned = true;
  });
  while (!runtime->closed()) {
    std::this_thread::yield();
  }
  const auto x = ref::random_bf16(std::size_t{kM} * kK, 13, 6.0f);
  Fp8Call call;
  call.x = &x;
  call.poison();
  CHECK_THROWS_AS(runtime->run("fp8_act_quant", call.args()), ClosedError);
  CHECK(call.untouched());
  std::this_thread::sleep_for(50ms);
  CHECK_FALSE(close_returned.load());  // still waiting for the background build
  release = true;
  closer.join();
  CHECK(close_returned.load());
  runtime.reset();
}
