// capi_log.cpp: metrale_set_log_callback, the library's log lines handed to a C caller (the
// Python package forwards them to `logging`) instead of stderr.
// Invariants: the "metrale" logger gains one forwarding sink, once (the first call), which
// holds the stderr sink it replaces; switching the callback later takes only that sink's
// mutex, so a line is either the old callback's or the new one's, never lost or torn.
#include <spdlog/sinks/base_sink.h>

#include <memory>
#include <mutex>
#include <string>

#include "ground/log.hpp"
#include "metrale/metrale.h"

namespace {

// Lines to the callback when one is set, else to the sink it stood in for (stderr).
class CallbackSink final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  explicit CallbackSink(std::vector<spdlog::sink_ptr> fallback) : fallback_(std::move(fallback)) {}

  void set(metrale_log_fn fn, void* user) {
    const std::lock_guard<std::mutex> lock(mutex_);
    fn_ = fn;
    user_ = user;
  }

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    if (fn_ == nullptr) {
      for (const spdlog::sink_ptr& to : fallback_) {
        if (to->should_log(msg.level)) {
          to->log(msg);
        }
      }
      return;
    }
    const std::string line(msg.payload.data(), msg.payload.size());
    fn_(user_, static_cast<int32_t>(msg.level), line.c_str());
  }
  void flush_() override {
    for (const spdlog::sink_ptr& to : fallback_) {
      to->flush();
    }
  }

 private:
  std::vector<spdlog::sink_ptr> fallback_;
  metrale_log_fn fn_ = nullptr;
  void* user_ = nullptr;
};

CallbackSink& callback_sink() {
  // Installed once: the logger's sinks are swapped for this one, which keeps them.
  static const std::shared_ptr<CallbackSink> sink = [] {
    spdlog::logger& logger = metrale::logger();
    auto made = std::make_shared<CallbackSink>(logger.sinks());
    logger.sinks() = {made};
    return made;
  }();
  return *sink;
}

}  // namespace

extern "C" METRALE_API void metrale_set_log_callback(metrale_log_fn fn, void* user) {
  try {
    callback_sink().set(fn, user);
  } catch (...) {
    // Nothing to report through: a logger that cannot be reached keeps its stderr sink.
  }
}
