// host/cuda_token_scanner.hpp: the engine's tokens of a system compiler's preprocessed output
// (`-E`): line markers followed, string and character literals and raw strings kept whole,
// pp-numbers as one token, and only the tokens of lines whose marker names one of the engine's
// files. The host JIT's rewrite (cuda_source_rewrite.hpp) and its function bodies
// (function_bodies.hpp) read these.
// Invariants: pure; a token's begin/end are byte offsets into the text scanned, its line the line
// its marker gives (the engine's numbering), so messages name the lines the engine wrote.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace metrale::host {

enum class TokenKind : std::uint8_t { kIdentifier, kLiteral, kNumber, kPunctuator };

struct Token {
  TokenKind kind = TokenKind::kPunctuator;
  std::size_t begin = 0;
  std::size_t end = 0;
  std::uint32_t line = 0;
  std::uint32_t file = 0;  // index into ScannedUnit::files
};

struct ScannedUnit {
  std::vector<Token> tokens;
  std::vector<std::string> files;  // the engine's names of the files the tokens come from
};

// `source_name(path)`: for a line marker's file path, the engine file's name for messages when
// the path is one of the engine's files, nullopt otherwise.
using SourceNameFn = std::function<std::optional<std::string>(std::string_view marker_path)>;

ScannedUnit scan_engine_tokens(std::string_view preprocessed, const SourceNameFn& source_name);

}  // namespace metrale::host
