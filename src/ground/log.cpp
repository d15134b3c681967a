// log.cpp: creates the "metrale" logger once and applies METRALE_LOG_LEVEL.
#include "ground/log.hpp"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdlib>
#include <string>
#include <utility>

namespace metrale {

std::optional<spdlog::level::level_enum> parse_log_level(std::string_view text) {
  std::string lower(text);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  static constexpr std::array<std::pair<std::string_view, spdlog::level::level_enum>, 8> kLevels{{
      {"trace", spdlog::level::trace},
      {"debug", spdlog::level::debug},
      {"info", spdlog::level::info},
      {"warn", spdlog::level::warn},
      {"warning", spdlog::level::warn},
      {"error", spdlog::level::err},
      {"critical", spdlog::level::critical},
      {"off", spdlog::level::off},
  }};
  for (const auto& [name, level] : kLevels) {
    if (lower == name) {
      return level;
    }
  }
  return std::nullopt;
}

namespace {

std::shared_ptr<spdlog::logger> make_logger() {
  // stderr, so that CLI output on stdout (tables, JSON) stays machine-readable.
  auto sink = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
  auto created = std::make_shared<spdlog::logger>("metrale", sink);
  created->set_pattern("[metrale %l] %v");
  created->set_level(spdlog::level::info);
  if (const char* env = std::getenv("METRALE_LOG_LEVEL"); env != nullptr && *env != '\0') {
    if (auto level = parse_log_level(env)) {
      created->set_level(*level);
    } else {
      created->warn("METRALE_LOG_LEVEL='{}' is not one of trace, debug, info, warn, error, critical, off; using info",
                    env);
    }
  }
  return created;
}

}  // namespace

spdlog::logger& logger() {
  static const std::shared_ptr<spdlog::logger> instance = make_logger();
  return *instance;
}

}  // namespace metrale
