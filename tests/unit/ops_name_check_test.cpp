// The layers above the ops know no op: no op's name, alias or kernel name (as the library's
// declarations spell them, so a new op is checked the day it is declared) appears outside
// comments in src/runtime, src/capi, python/src or tools/cli. Comments and the text of string
// literals are both searched apart: a name in a string is as much a dependence as one in code.
#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "metrale/ops/op_declaration.hpp"

namespace {

// `text` with every // and /* */ comment replaced by spaces (newlines kept, so lines still
// count); string and character literals are kept as they are, escapes included.
std::string without_comments(const std::string& text) {
  std::string out = text;
  enum class State { kCode, kLine, kBlock, kString, kChar } state = State::kCode;
  for (std::size_t i = 0; i < out.size(); ++i) {
    const char c = text[i];
    const char next = i + 1 < text.size() ? text[i + 1] : '\0';
    switch (state) {
      case State::kCode:
        if (c == '/' && next == '/') {
          state = State::kLine;
          out[i] = ' ';
        } else if (c == '/' && next == '*') {
          state = State::kBlock;
          out[i] = ' ';
        } else if (c == '"') {
          state = State::kString;
        } else if (c == '\'') {
          state = State::kChar;
        }
        break;
      case State::kLine:
        if (c == '\n') {
          state = State::kCode;
        } else {
          out[i] = ' ';
        }
        break;
      case State::kBlock:
        if (c == '*' && next == '/') {
          out[i] = out[i + 1] = ' ';
          ++i;
          state = State::kCode;
        } else if (c != '\n') {
          out[i] = ' ';
        }
        break;
      case State::kString:
      case State::kChar:
        if (c == '\\') {
          ++i;
        } else if ((state == State::kString && c == '"') || (state == State::kChar && c == '\'')) {
          state = State::kCode;
        }
        break;
    }
  }
  return out;
}

// Every spelling that ties code to one op: names, aliases, kernel names, lever keys.
std::vector<std::string> op_words() {
  std::set<std::string> words;
  for (const metrale::ops::OpDeclaration& op : metrale::ops::library_ops().ops()) {
    words.insert(op.name);
    words.insert(op.aliases.begin(), op.aliases.end());
    for (const metrale::ops::RoleDecl& role : op.roles) {
      words.insert(role.kernel);
    }
    for (const metrale::LeverSpec& lever : op.levers) {
      words.insert(lever.toml_key);
    }
  }
  return {words.begin(), words.end()};
}

struct Hit {
  std::string file;
  std::size_t line = 0;
  std::string word;
};

std::vector<Hit> scan(const std::filesystem::path& root, const std::vector<std::string>& words) {
  std::vector<Hit> hits;
  for (const char* folder : {"src/runtime", "src/capi", "python/src", "tools/cli"}) {
    const std::filesystem::path dir = root / folder;
    REQUIRE(std::filesystem::is_directory(dir));
    for (const auto& entry : std::filesystem::recursive_directory_iterator(dir)) {
      const std::string ext = entry.path().extension().string();
      if (!entry.is_regular_file() || (ext != ".cpp" && ext != ".hpp" && ext != ".h" && ext != ".c")) {
        continue;
      }
      std::ifstream in(entry.path());
      std::stringstream buffer;
      buffer << in.rdbuf();
      std::istringstream code(without_comments(buffer.str()));
      std::string line;
      for (std::size_t number = 1; std::getline(code, line); ++number) {
        for (const std::string& word : words) {
          if (line.find(word) != std::string::npos) {
            hits.push_back({std::filesystem::relative(entry.path(), root).string(), number, word});
          }
        }
      }
    }
  }
  return hits;
}

}  // namespace

TEST_CASE("comments are blanked and literals kept by the name check's reader", "[ops][names]") {
  const std::string text = "a // ssm\nb /* fp8\n x */ c \"// kept\" '\"' d\n";
  const std::string out = without_comments(text);
  CHECK(out.find("ssm") == std::string::npos);
  CHECK(out.find("fp8") == std::string::npos);
  CHECK(out.find("\"// kept\"") != std::string::npos);
  CHECK(out.find(" d") != std::string::npos);
  CHECK(std::count(out.begin(), out.end(), '\n') == 3);
}

TEST_CASE("no op is named in the runtime, the C ABI, the Python bindings or the CLI", "[ops][names]") {
  const std::vector<std::string> words = op_words();
  REQUIRE(words.size() >= 6);  // two ops, their aliases, five kernels, three levers at least
  const std::vector<Hit> hits = scan(METRALE_SOURCE_DIR, words);
  for (const Hit& hit : hits) {
    UNSCOPED_INFO(hit.file << ":" << hit.line << ": names '" << hit.word << "'");
  }
  CHECK(hits.empty());
}
