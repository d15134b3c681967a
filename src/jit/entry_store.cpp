// entry_store.cpp: the key's in-memory spelling.
#include "jit/entry_store.hpp"

namespace metrale {

std::string EntryKey::joined() const {
  // The unit separator never occurs in names, tags or options.
  static constexpr char kSeparator = '\x1f';
  return kernel + kSeparator + params_tag + kSeparator + arch + kSeparator + nvrtc_version + kSeparator + options +
         kSeparator + source_digest + kSeparator + name_expression;
}

}  // namespace metrale
