// metrale/target/environment.hpp: how configuration code reads environment variables.
// Invariant: decisions take an EnvLookup instead of calling getenv, so tests inject one
// and the real process environment is only one implementation of it.
#pragma once

#include <functional>
#include <optional>
#include <string>

namespace metrale {

// The value of an environment variable, nullopt when it is unset.
using EnvLookup = std::function<std::optional<std::string>(const char* name)>;

// Reads the real process environment (getenv).
EnvLookup process_environment();

}  // namespace metrale
