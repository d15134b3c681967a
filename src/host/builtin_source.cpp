// host/builtin_source.cpp: the digests behind the built-in-or-JIT choice of a host load.
#include "host/builtin_source.hpp"

#include "ground/embedded_files.hpp"
#include "metrale/jit/source_set.hpp"

namespace metrale::host {

std::optional<std::string> given_source_digest(const LoadRequest& request) {
  if (request.sources == nullptr || request.source.empty()) {
    return std::nullopt;
  }
  return source_digest(*request.sources, request.source);
}

std::optional<std::string> embedded_source_digest(std::string_view source) {
  // Not add_embedded_templates(): METRALE_TEMPLATE_DIR must not stand in for what was compiled.
  static const SourceSet embedded = [] {
    SourceSet set;
    for (const EmbeddedFile& file : embedded_templates()) {
      set.add_source(std::string(file.name), std::string(file.text));
    }
    return set;
  }();
  return embedded.digest(source);
}

}  // namespace metrale::host
