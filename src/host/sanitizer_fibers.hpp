// host/sanitizer_fibers.hpp: tells AddressSanitizer and ThreadSanitizer about every stack switch
// the fibers make, so their reports stay right on fiber stacks. Without a sanitizer every
// function here compiles to nothing.
// Invariants: start_switch() comes immediately before a jump and finish_switch() immediately
// after control returns; a fiber that will never be resumed passes a null token, so ASan frees
// its fake stack.
#pragma once

#include <cstddef>

#if defined(__SANITIZE_ADDRESS__)
#define METRALE_HOST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define METRALE_HOST_ASAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define METRALE_HOST_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define METRALE_HOST_TSAN 1
#endif
#endif

// The functions that switch stacks keep their locals off ASan's fake stack (used with
// detect_stack_use_after_return): leaving a fiber for good destroys that fake stack while the
// switching frames are still live.
#if defined(METRALE_HOST_ASAN)
#define METRALE_HOST_SWITCH_FRAME __attribute__((no_sanitize_address))
#else
#define METRALE_HOST_SWITCH_FRAME
#endif

#if defined(METRALE_HOST_ASAN)
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif
#if defined(METRALE_HOST_TSAN)
#include <sanitizer/tsan_interface.h>
#endif

namespace metrale::host::sanitizer {

struct StackBounds {
  const void* bottom = nullptr;
  std::size_t size = 0;
};

// What ASan needs to carry across one switch away and back.
struct SwitchToken {
  void* fake_stack = nullptr;
};

inline void* create_fiber() {
#if defined(METRALE_HOST_TSAN)
  return __tsan_create_fiber(0);
#else
  return nullptr;
#endif
}

inline void destroy_fiber([[maybe_unused]] void* fiber) {
#if defined(METRALE_HOST_TSAN)
  if (fiber != nullptr) {
    __tsan_destroy_fiber(fiber);
  }
#endif
}

// The TSan identity of the code running now (a worker thread's own stack).
inline void* current_fiber() {
#if defined(METRALE_HOST_TSAN)
  return __tsan_get_current_fiber();
#else
  return nullptr;
#endif
}

inline void unpoison([[maybe_unused]] void* bottom, [[maybe_unused]] std::size_t size) {
#if defined(METRALE_HOST_ASAN)
  __asan_unpoison_memory_region(bottom, size);
#endif
}

// `token` is null when the code switching away will never run again.
METRALE_HOST_SWITCH_FRAME inline void start_switch([[maybe_unused]] SwitchToken* token,
                                                   [[maybe_unused]] StackBounds target,
                                                   [[maybe_unused]] void* target_tsan_fiber) {
#if defined(METRALE_HOST_ASAN)
  __sanitizer_start_switch_fiber(token != nullptr ? &token->fake_stack : nullptr, target.bottom, target.size);
#endif
#if defined(METRALE_HOST_TSAN)
  __tsan_switch_to_fiber(target_tsan_fiber, 0);
#endif
}

// `came_from`, when given, receives the bounds of the stack that switched here.
METRALE_HOST_SWITCH_FRAME inline void finish_switch([[maybe_unused]] const SwitchToken* token,
                                                    [[maybe_unused]] StackBounds* came_from) {
#if defined(METRALE_HOST_ASAN)
  __sanitizer_finish_switch_fiber(token != nullptr ? token->fake_stack : nullptr,
                                  came_from != nullptr ? &came_from->bottom : nullptr,
                                  came_from != nullptr ? &came_from->size : nullptr);
#endif
}

}  // namespace metrale::host::sanitizer
