// runtime_close.cpp: Runtime::close and the gate every call passes (Runtime::CallScope).
// Invariants: gate_ holds the closed bit and the count of calls in flight in one atomic, so a
// call either counts before close sets the bit (close waits for it) or sees the bit (ClosedError)
// and nothing is freed under a counted call; the call that brings the count to zero after close
// sets drained_ under close_mutex_ and then touches nothing of the runtime; the freeing runs once,
// on the first closer (or a closer thread when that one is inside a call), never on a call's thread.
#include <fmt/format.h>

#include <thread>

#include "ground/log.hpp"
#include "metrale/error.hpp"
#include "metrale/runtime.hpp"
#include "runtime/prepared_gpu.hpp"
#include "runtime/verification_gate.hpp"

namespace metrale {
namespace {

constexpr const char* kClosedMessage = "this Runtime is closed (Runtime::close ran): open a new one";

// The innermost scope this thread holds (of any runtime); each links to the one before.
constinit thread_local const Runtime::CallScope* t_innermost = nullptr;

}  // namespace

Runtime::CallScope::CallScope(const Runtime& runtime, NoThrow /*tag*/) noexcept
    : runtime_(&runtime), outer_(t_innermost) {
  if (outer_ != nullptr && outer_->runtime_ == runtime_) {
    // Nested in a call of the same runtime, which already holds it open; after a close from a
    // callback of that call, new calls are still refused.
    held_ = !runtime.closed();
  } else {
    counted_ = runtime.enter();
    held_ = counted_;
  }
  if (held_) {
    t_innermost = this;
  }
}

Runtime::CallScope::CallScope(const Runtime& runtime) : CallScope(runtime, NoThrow{}) {
  if (!held_) {
    throw ClosedError(kClosedMessage);
  }
}

Runtime::CallScope::~CallScope() {
  if (held_) {
    t_innermost = outer_;
  }
  if (counted_) {
    runtime_->leave();
  }
}

bool Runtime::enter() const noexcept {
  if ((gate_.fetch_add(1, std::memory_order_acquire) & kClosedBit) == 0) {
    return true;
  }
  leave();  // closed: undo the count (a closer that saw it waits for this subtract)
  return false;
}

void Runtime::leave() const noexcept {
  // acq_rel, not release: the last call out must also acquire the earlier calls' releases (an
  // RMW alone continues their release sequence but does not synchronise with them), so that
  // everything every call read happens before the closer's drained_ and the freeing after it.
  const std::uint64_t before = gate_.fetch_sub(1, std::memory_order_acq_rel);
  if ((before & kClosedBit) != 0 && (before & kCountMask) == 1) {
    // The last call out of a closing runtime: the closer waits for drained_. Set and notified
    // under the lock, so the closer cannot free the runtime before this thread lets go of it.
    const std::lock_guard lock(close_mutex_);
    drained_ = true;
    close_cv_.notify_all();
  }
}

bool Runtime::held_by_this_thread() const noexcept {
  for (const CallScope* scope = t_innermost; scope != nullptr; scope = scope->outer_) {
    if (scope->runtime_ == this) {
      return true;
    }
  }
  return false;
}

void Runtime::while_held(ops::HeldCall body) const {
  const CallScope scope(*this);
  body();
}

const Runtime& Runtime::open_or_throw() const {
  if (closed()) {
    throw ClosedError(kClosedMessage);
  }
  return *this;
}

Runtime& Runtime::open_or_throw() {
  if (closed()) {
    throw ClosedError(kClosedMessage);
  }
  return *this;
}

void Runtime::close() {
  const bool inside = held_by_this_thread();
  const std::uint64_t before = gate_.fetch_or(kClosedBit, std::memory_order_acq_rel);
  if ((before & kClosedBit) != 0) {
    if (!inside) {
      wait_closed();  // another close frees: wait for it (a second close returns then)
    }
    return;
  }
  if ((before & kCountMask) == 0) {
    const std::lock_guard lock(close_mutex_);
    drained_ = true;  // nothing in flight: nobody else will say so
  }
  if (inside) {
    // This thread's own call holds the count: a closer thread waits for it to return. Nothing is
    // logged here: this may be a log callback, inside the logger's lock.
    std::thread([this] {
      if (const std::exception_ptr failure = finish_close()) {
        try {
          std::rethrow_exception(failure);
        } catch (const std::exception& error) {
          logger().error("a background kernel build failed before close: {}", error.what());
        } catch (...) {
          logger().error("a background kernel build failed before close with a non-standard exception");
        }
      }
    }).detach();
    return;
  }
  if (const std::exception_ptr failure = finish_close()) {
    std::rethrow_exception(failure);
  }
}

std::exception_ptr Runtime::finish_close() noexcept {
  {
    std::unique_lock lock(close_mutex_);
    close_cv_.wait(lock, [&] { return drained_; });
  }
  // No call is in flight and none can start; the background jobs still running hold the count,
  // so only jobs that start now (and skip, the runtime being closed) can be left to wait for.
  std::exception_ptr failure;
  if (registry_) {
    try {
      registry_->wait_background();
    } catch (...) {
      failure = std::current_exception();
    }
  }
  // The members' own destruction order: what uses the registry and the backend goes first.
  capture_.reset();
  verification_.reset();
  registry_.reset();
  backend_.reset();
  const std::lock_guard lock(close_mutex_);
  closed_done_ = true;
  close_cv_.notify_all();
  return failure;
}

void Runtime::wait_closed() const {
  std::unique_lock lock(close_mutex_);
  close_cv_.wait(lock, [&] { return closed_done_; });
}

Runtime::~Runtime() {
  // A failed background build is logged, never thrown: a destructor that throws terminates.
  try {
    close();
  } catch (const std::exception& error) {
    logger().error("a background kernel build failed: {}", error.what());
  } catch (...) {
    logger().error("a background kernel build failed with a non-standard exception");
  }
  wait_closed();  // a closer thread (close from inside a call) may still be freeing
}

}  // namespace metrale
