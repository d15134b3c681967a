// ground/log.hpp: the library's one spdlog logger.
// Invariant: every message of the library goes through logger(); its level comes from
// METRALE_LOG_LEVEL (trace, debug, info, warn, error, critical, off; default info).
#pragma once

#include <spdlog/logger.h>

#include <memory>
#include <optional>
#include <string_view>

#include "ground/fmt_extern.hpp"

namespace metrale {

// The shared logger "metrale", created on first use (thread-safe).
spdlog::logger& logger();

// Parses a METRALE_LOG_LEVEL value; nullopt for an unknown spelling. Pure.
std::optional<spdlog::level::level_enum> parse_log_level(std::string_view text);

}  // namespace metrale
