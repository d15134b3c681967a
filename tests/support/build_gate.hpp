// tests/support/build_gate.hpp: a gate a test holds shut to keep a registry's background builds
// from starting (KernelRegistry::Options::background_gate), so "absent until released, present
// after" is observed rather than hoped for.
// Invariant: a gate destroyed without open() still releases its waiters (a broken promise makes
// the shared future ready), so a failing test never leaves a registry waiting forever.
#pragma once

#include <functional>
#include <future>

namespace metrale::test {

class BuildGate {
 public:
  // The function to install as background_gate: blocks until open() or the gate's destruction.
  [[nodiscard]] std::function<void()> hold() const {
    return [released = released_] { released.wait(); };
  }
  void open() {
    if (!opened_) {
      opened_ = true;
      promise_.set_value();
    }
  }

 private:
  std::promise<void> promise_;
  std::shared_future<void> released_ = promise_.get_future().share();
  bool opened_ = false;
};

}  // namespace metrale::test
