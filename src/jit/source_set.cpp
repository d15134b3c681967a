// source_set.cpp: named sources, the template directory override and include-aware digests.
#include "metrale/jit/source_set.hpp"

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "ground/embedded_files.hpp"
#include "metrale/error.hpp"

namespace metrale {

void SourceSet::add_source(std::string name, std::string text) { sources_[std::move(name)] = std::move(text); }

void SourceSet::add_embedded_templates(const EnvLookup& env) {
  if (const auto dir = env("METRALE_TEMPLATE_DIR"); dir && !dir->empty()) {
    std::error_code error;
    if (!std::filesystem::is_directory(*dir, error)) {
      throw ConfigError("METRALE_TEMPLATE_DIR='" + *dir +
                        "' is not an existing directory (unset it to use the embedded templates)");
    }
    add_directory(*dir);
    return;
  }
  for (const EmbeddedFile& file : embedded_templates()) {
    add_source(std::string(file.name), std::string(file.text));
  }
}

void SourceSet::add_directory(const std::string& directory) {
  std::error_code error;
  std::filesystem::directory_iterator it(directory, error);
  if (error) {
    throw ConfigError("template directory '" + directory + "' cannot be read: " + error.message());
  }
  for (const auto& entry : it) {
    if (!entry.is_regular_file() || entry.path().extension() != ".cuh") {
      continue;
    }
    std::ifstream in(entry.path(), std::ios::binary);
    if (!in) {
      throw ConfigError("template '" + entry.path().string() + "' cannot be read");
    }
    std::ostringstream text;
    text << in.rdbuf();
    add_source(entry.path().filename().string(), text.str());
  }
}

const std::string* SourceSet::find(std::string_view name) const {
  auto it = sources_.find(name);
  return it == sources_.end() ? nullptr : &it->second;
}

std::vector<std::string> SourceSet::names() const {
  std::vector<std::string> out;
  out.reserve(sources_.size());
  for (const auto& [name, text] : sources_) {
    out.push_back(name);
  }
  return out;
}

std::optional<std::string> SourceSet::digest(std::string_view name) const {
  if (!contains(name)) {
    return std::nullopt;
  }
  // The closure is sorted by name so the digest does not depend on include order.
  std::set<std::string, std::less<>> closure;
  std::vector<std::string> pending{std::string(name)};
  while (!pending.empty()) {
    std::string current = std::move(pending.back());
    pending.pop_back();
    const std::string* text = find(current);
    if (text == nullptr || !closure.insert(current).second) {
      continue;
    }
    for (std::string& included : included_names(*text)) {
      pending.push_back(std::move(included));
    }
  }
  XXH3_state_t* state = XXH3_createState();
  XXH3_128bits_reset(state);
  for (const std::string& member : closure) {
    const std::string& text = *find(member);
    const std::uint64_t sizes[2] = {member.size(), text.size()};
    XXH3_128bits_update(state, sizes, sizeof(sizes));
    XXH3_128bits_update(state, member.data(), member.size());
    XXH3_128bits_update(state, text.data(), text.size());
  }
  const XXH128_hash_t hash = XXH3_128bits_digest(state);
  XXH3_freeState(state);
  char hex[33];
  std::snprintf(hex, sizeof(hex), "%016llx%016llx", static_cast<unsigned long long>(hash.high64),
                static_cast<unsigned long long>(hash.low64));
  return std::string(hex, 32);
}

std::vector<std::string> included_names(std::string_view text) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  while ((pos = text.find("#include", pos)) != std::string_view::npos) {
    pos += 8;
    while (pos < text.size() && (text[pos] == ' ' || text[pos] == '\t')) {
      ++pos;
    }
    if (pos >= text.size() || (text[pos] != '"' && text[pos] != '<')) {
      continue;
    }
    const char close = text[pos] == '"' ? '"' : '>';
    const char stops[3] = {close, '\n', '\0'};
    const std::size_t end = text.find_first_of(std::string_view(stops, 2), pos + 1);
    if (end == std::string_view::npos || text[end] != close) {
      continue;
    }
    out.emplace_back(text.substr(pos + 1, end - pos - 1));
    pos = end;
  }
  return out;
}

}  // namespace metrale
