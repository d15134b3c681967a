// source_set.cpp: named sources, the template directory override and include-aware digests.
#include "metrale/jit/source_set.hpp"

#define XXH_INLINE_ALL
#include <fmt/format.h>
#include <xxhash.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "ground/embedded_files.hpp"
#include "jit/entry_key.hpp"
#include "metrale/error.hpp"

namespace metrale {

std::string source_name_problem(std::string_view name) {
  std::string shown;  // the name as a message can print it
  for (const char c : name) {
    const auto byte = static_cast<unsigned char>(c);
    shown += byte < 0x20 || byte == 0x7f ? fmt::format("\\x{:02x}", byte) : std::string(1, c);
  }
  if (name.empty()) {
    return "a source name is empty";
  }
  if (name.front() == '/') {
    return fmt::format("source name '{}' starts with '/': a source name is a name, not an absolute path", shown);
  }
  for (std::size_t from = 0; from <= name.size();) {
    const std::size_t end = std::min(name.find('/', from), name.size());
    if (name.substr(from, end - from) == "..") {
      return fmt::format("source name '{}' has a '..' part: a source name is a name, not a path out of the set", shown);
    }
    from = end + 1;
  }
  for (const char c : name) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte == 0x7f || c == '"' || c == '\\') {
      return fmt::format(
          "source name '{}' holds byte 0x{:02x} (NUL, a control character, '\"' or '\\\\'), "
          "which an #include line cannot name",
          shown, byte);
    }
  }
  return {};
}

void SourceSet::add_source(std::string name, std::string text) {
  if (std::string problem = source_name_problem(name); !problem.empty()) {
    throw ArgumentError(problem);
  }
  sources_[std::move(name)] = std::move(text);
}

void SourceSet::add_embedded_templates(const EnvLookup& env) {
  if (const auto dir = env("METRALE_TEMPLATE_DIR"); dir && !dir->empty()) {
    std::error_code error;
    if (!std::filesystem::is_directory(*dir, error)) {
      throw ConfigError("METRALE_TEMPLATE_DIR='" + *dir +
                        "' is not an existing directory (unset it to use the embedded templates)");
    }
    const std::size_t before = sources_.size();
    add_directory(*dir);
    if (sources_.size() == before) {
      // It replaces the embedded templates: an empty one would leave every kernel without its
      // source, each refused later with a message that never names the variable.
      throw ConfigError("METRALE_TEMPLATE_DIR='" + *dir +
                        "' holds no .cuh template (it replaces the embedded templates: put the templates there, "
                        "or unset it to use the embedded ones)");
    }
    return;
  }
  for (const EmbeddedFile& file : embedded_templates()) {
    add_source(std::string(file.name), std::string(file.text));
  }
}

void SourceSet::add_directory(const std::string& directory) {
  std::error_code error;
  std::filesystem::recursive_directory_iterator it(directory, error);
  if (error) {
    throw ConfigError("template directory '" + directory + "' cannot be read: " + error.message());
  }
  for (; it != std::filesystem::recursive_directory_iterator(); it.increment(error)) {
    if (error) {
      break;
    }
    const std::filesystem::directory_entry& entry = *it;
    if (!entry.is_regular_file() || entry.path().extension() != ".cuh") {
      continue;
    }
    std::ifstream in(entry.path(), std::ios::binary);
    if (!in) {
      throw ConfigError("template '" + entry.path().string() + "' cannot be read");
    }
    std::ostringstream text;
    text << in.rdbuf();
    add_source(entry.path().lexically_relative(directory).generic_string(), text.str());
  }
  if (error) {
    throw ConfigError("template directory '" + directory + "' cannot be read: " + error.message());
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

namespace {

using SourceMap = std::map<std::string, std::string, std::less<>>;

struct Closure {
  std::set<std::string, std::less<>> members;  // `name` and the members it includes
  bool reaches_outside = false;
};

Closure closure_of(const SourceMap& sources, std::string_view name) {
  Closure out;
  std::vector<std::string> pending{std::string(name)};
  while (!pending.empty()) {
    std::string current = std::move(pending.back());
    pending.pop_back();
    const auto found = sources.find(current);
    if (found == sources.end()) {
      out.reaches_outside = true;
      continue;
    }
    if (!out.members.insert(current).second) {
      continue;
    }
    for (std::string& included : included_names(found->second)) {
      pending.push_back(std::move(included));
    }
  }
  return out;
}

}  // namespace

bool SourceSet::reaches_outside(std::string_view name) const {
  return contains(name) && closure_of(sources_, name).reaches_outside;
}

std::vector<std::string> SourceSet::digested_members(std::string_view name) const {
  if (!contains(name)) {
    return {};
  }
  const std::set<std::string, std::less<>> members = closure_of(sources_, name).members;
  return {members.begin(), members.end()};
}

std::optional<std::string> SourceSet::digest(std::string_view name) const { return source_digest(sources_, name); }

std::optional<std::string> source_digest(const std::map<std::string, std::string, std::less<>>& sources,
                                         std::string_view name) {
  if (sources.find(name) == sources.end()) {
    return std::nullopt;
  }
  // The closure is sorted by name so the digest does not depend on include order.
  const std::set<std::string, std::less<>> closure = closure_of(sources, name).members;
  XXH3_state_t* state = XXH3_createState();
  XXH3_128bits_reset(state);
  for (const std::string& member : closure) {
    const std::string& text = sources.find(member)->second;
    const std::uint64_t sizes[2] = {member.size(), text.size()};
    XXH3_128bits_update(state, sizes, sizeof(sizes));
    XXH3_128bits_update(state, member.data(), member.size());
    XXH3_128bits_update(state, text.data(), text.size());
  }
  const XXH128_hash_t hash = XXH3_128bits_digest(state);
  XXH3_freeState(state);
  return hex_digest(hash.high64, hash.low64);
}

// A directive as the preprocessor reads it: optional blanks, '#', optional blanks, "include",
// optional blanks, then "name" or <name> closed on the same line.
std::vector<std::string> included_names(std::string_view text) {
  std::vector<std::string> out;
  auto skip_blanks = [](std::string_view line, std::size_t at) {
    while (at < line.size() && (line[at] == ' ' || line[at] == '\t')) {
      ++at;
    }
    return at;
  };
  constexpr std::string_view kInclude = "include";
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t stop = text.find('\n', start);
    if (stop == std::string_view::npos) {
      stop = text.size();
    }
    const std::string_view line = text.substr(start, stop - start);
    start = stop + 1;
    std::size_t at = skip_blanks(line, 0);
    if (at >= line.size() || line[at] != '#') {
      continue;
    }
    at = skip_blanks(line, at + 1);
    if (line.substr(at, kInclude.size()) != kInclude) {
      continue;
    }
    at = skip_blanks(line, at + kInclude.size());
    if (at >= line.size() || (line[at] != '"' && line[at] != '<')) {
      continue;
    }
    const std::size_t close = line.find(line[at] == '"' ? '"' : '>', at + 1);
    if (close != std::string_view::npos) {
      out.emplace_back(line.substr(at + 1, close - at - 1));
    }
  }
  return out;
}

}  // namespace metrale
