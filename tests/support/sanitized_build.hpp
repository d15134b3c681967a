// sanitized_build.hpp: whether this test binary is a sanitizer build (AddressSanitizer or
// ThreadSanitizer, Debug, every access checked). Such builds run the same code paths several times
// slower, so tests whose limits are wall time or whose shapes are large state a sanitizer value
// beside the default one instead of a single number tuned for one of them.
#pragma once

namespace metrale::test {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
inline constexpr bool kSanitizedBuild = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
inline constexpr bool kSanitizedBuild = true;
#else
inline constexpr bool kSanitizedBuild = false;
#endif
#else
inline constexpr bool kSanitizedBuild = false;
#endif

}  // namespace metrale::test
