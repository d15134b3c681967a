// ops_name_check_test.cpp: the code around the ops knows no op: no op's name, alias or kernel name
// (as the library's declarations spell them, so a new op is checked the day it is declared)
// appears outside comments in src/runtime, src/capi, python/src, tools/cli, the shared op code
// (src/ops/*.cpp|hpp and src/ops/core, except the one list of the library's ops,
// src/ops/core/library_ops.cpp), the host backend (src/host), the profile (src/profile) or the
// Python package (python/metrale). Comments (and Python docstrings) are blanked; the text of string
// literals is searched: a name in a string is as much a dependence as one in code, an #include of an
// op's header included.
// Invariant: no exceptions: any hit fails (the Python package's last per-op hooks and wrappers went
// when arguments came to declare their widths, layouts and allocation).
#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "metrale/ops/op_declaration.hpp"
#include "support/temp_dir.hpp"

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

// Python `text` with # comments and triple-quoted strings (docstrings) blanked, newlines kept;
// other string literals are kept.
std::string python_without_comments(const std::string& text) {
  std::string out = text;
  enum class State { kCode, kComment, kDoc, kString } state = State::kCode;
  char quote = '\0';
  for (std::size_t i = 0; i < out.size(); ++i) {
    const char c = text[i];
    const bool triple = i + 2 < text.size() && (c == '"' || c == '\'') && text[i + 1] == c && text[i + 2] == c;
    switch (state) {
      case State::kCode:
        if (c == '#') {
          state = State::kComment;
          out[i] = ' ';
        } else if (triple) {
          state = State::kDoc;
          quote = c;
          out[i] = out[i + 1] = out[i + 2] = ' ';
          i += 2;
        } else if (c == '"' || c == '\'') {
          state = State::kString;
          quote = c;
        }
        break;
      case State::kComment:
        if (c == '\n') {
          state = State::kCode;
        } else {
          out[i] = ' ';
        }
        break;
      case State::kDoc:
        if (triple && c == quote) {
          out[i] = out[i + 1] = out[i + 2] = ' ';
          i += 2;
          state = State::kCode;
        } else if (c != '\n') {
          out[i] = ' ';
        }
        break;
      case State::kString:
        if (c == '\\') {
          ++i;
        } else if (c == quote || c == '\n') {
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

// What the check reads: folders searched whole, and folders searched only at their top level
// (src/ops: its op folders are the ops themselves).
struct Folder {
  const char* path;
  bool recursive;
};
constexpr Folder kFolders[] = {
    {"src/runtime", true},  {"src/capi", true}, {"python/src", true},  {"tools/cli", true},      {"src/ops", false},
    {"src/ops/core", true}, {"src/host", true}, {"src/profile", true}, {"python/metrale", true},
};
// The one list of the library's ops names each op by design.
constexpr const char* kTheList = "src/ops/core/library_ops.cpp";

struct Hit {
  std::string file;
  std::size_t line = 0;
  std::string word;
};

bool scanned(const std::filesystem::path& path) {
  const std::string ext = path.extension().string();
  return ext == ".cpp" || ext == ".hpp" || ext == ".h" || ext == ".c" || ext == ".py";
}

void scan_file(const std::filesystem::path& root, const std::filesystem::path& file,
               const std::vector<std::string>& words, std::vector<Hit>& hits) {
  std::ifstream in(file);
  std::stringstream buffer;
  buffer << in.rdbuf();
  const bool python = file.extension() == ".py";
  std::istringstream code(python ? python_without_comments(buffer.str()) : without_comments(buffer.str()));
  const std::string relative = std::filesystem::relative(file, root).generic_string();
  std::string line;
  for (std::size_t number = 1; std::getline(code, line); ++number) {
    for (const std::string& word : words) {
      if (line.find(word) != std::string::npos) {
        hits.push_back({relative, number, word});
      }
    }
  }
}

std::vector<Hit> scan(const std::filesystem::path& root, const std::vector<std::string>& words) {
  std::vector<Hit> hits;
  for (const Folder& folder : kFolders) {
    const std::filesystem::path dir = root / folder.path;
    REQUIRE(std::filesystem::is_directory(dir));
    std::vector<std::filesystem::path> files;
    if (folder.recursive) {
      for (const auto& entry : std::filesystem::recursive_directory_iterator(dir)) {
        if (entry.is_regular_file()) {
          files.push_back(entry.path());
        }
      }
    } else {
      for (const auto& entry : std::filesystem::directory_iterator(dir)) {
        if (entry.is_regular_file()) {
          files.push_back(entry.path());
        }
      }
    }
    for (const std::filesystem::path& file : files) {
      if (scanned(file) && std::filesystem::relative(file, root).generic_string() != kTheList) {
        scan_file(root, file, words, hits);
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

TEST_CASE("Python comments and docstrings are blanked and other strings kept by the name check's reader",
          "[ops][names]") {
  const std::string text = "\"\"\"doc ssm\n\"\"\"\na = 1  # fp8\nb = \"# kept\" + 'x'\n";
  const std::string out = python_without_comments(text);
  CHECK(out.find("ssm") == std::string::npos);
  CHECK(out.find("fp8") == std::string::npos);
  CHECK(out.find("\"# kept\"") != std::string::npos);
  CHECK(out.find("'x'") != std::string::npos);
  CHECK(std::count(out.begin(), out.end(), '\n') == 4);
}

TEST_CASE("the name check finds a name planted in every kind of file it reads", "[ops][names]") {
  metrale::test::TempDir root("metrale-names");
  for (const Folder& folder : kFolders) {
    std::filesystem::create_directories(root.path() / folder.path);
  }
  root.write("src/profile/planted.cpp", "// fp8_act_quant in a comment is fine\nauto k = \"fp8_act_quant\";\n");
  root.write("python/metrale/planted.py", "\"\"\"ssm_ba_gates in a docstring\"\"\"\nOP = 'ssm_ba_gates'\n");
  root.write("src/ops/planted.hpp", "#include \"ops/ssm_ba_gates/ssm_ba_gates.hpp\"\n");
  root.write("src/ops/ssm_ba_gates/inside_its_folder.cpp", "auto k = \"ssm_ba_gates\";\n");  // not read
  root.write("src/ops/core/library_ops.cpp", "auto k = \"ssm_ba_gates\";\n");                // the list
  const std::vector<Hit> hits = scan(root.path(), {"fp8_act_quant", "ssm_ba_gates"});
  std::set<std::string> where;
  for (const Hit& hit : hits) {
    where.insert(hit.file + ":" + std::to_string(hit.line));
  }
  CHECK(where ==
        std::set<std::string>{"src/profile/planted.cpp:2", "python/metrale/planted.py:2", "src/ops/planted.hpp:1"});
}

TEST_CASE("no op is named outside its folder and the list of the library's ops", "[ops][names]") {
  const std::vector<std::string> words = op_words();
  REQUIRE(words.size() >= 6);  // two ops, their aliases, five kernels, three levers at least
  const std::vector<Hit> hits = scan(METRALE_SOURCE_DIR, words);
  for (const Hit& hit : hits) {
    UNSCOPED_INFO(hit.file << ":" << hit.line << ": names '" << hit.word << "'");
  }
  CHECK(hits.empty());
}
