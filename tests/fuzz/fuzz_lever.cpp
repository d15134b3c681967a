// fuzz_lever.cpp: the lever parser is total and agrees with its documented rule: blank keeps
// the file's value, 0/false/off/no (any case) turn the lever off, anything else turns it on.
#include <algorithm>
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "metrale/target/levers.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto parsed = metrale::parse_lever_override(text);
  std::string word(text);
  const auto not_blank = [](unsigned char c) { return !std::isspace(c); };
  word.erase(word.begin(), std::find_if(word.begin(), word.end(), not_blank));
  word.erase(std::find_if(word.rbegin(), word.rend(), not_blank).base(), word.end());
  std::transform(word.begin(), word.end(), word.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (word.empty()) {
    if (parsed.has_value()) {
      std::abort();
    }
  } else {
    const bool off = word == "0" || word == "false" || word == "off" || word == "no";
    if (!parsed.has_value() || *parsed == off) {
      std::abort();
    }
  }
  return 0;
}
