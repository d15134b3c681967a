// environment.cpp: the process environment as an EnvLookup.
#include "metrale/environment.hpp"

#include <cstdlib>

namespace metrale {

EnvLookup process_environment() {
  return [](const char* name) -> std::optional<std::string> {
    // getenv is only racy against setenv, which the library never calls.
    const char* value = std::getenv(name);  // NOLINT(concurrency-mt-unsafe)
    if (value == nullptr) {
      return std::nullopt;
    }
    return std::string(value);
  };
}

}  // namespace metrale
