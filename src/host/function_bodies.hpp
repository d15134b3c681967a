// host/function_bodies.hpp: where the engine's functions keep their bodies, from the tokens of a
// preprocessed unit (cuda_token_scanner.hpp): for each function definition not inside another
// function's body (free functions, kernels, templates, member functions defined in their class
// or out of it, operators), its name and the tokens of its opening and closing braces. The host
// JIT's rewrite stubs such a body when the host cannot build it (cuda_source_rewrite.hpp).
// Invariants: pure; only the outermost body of a function counts (a lambda's or a local class's
// body lies within it); a brace this cannot place as a function body (a class, a namespace, an
// initializer, or a definition of a form it does not read) is not one, so a construct there stays
// the whole unit's refusal, never a stub of the wrong function.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "host/cuda_token_scanner.hpp"

namespace metrale::host {

struct FunctionBody {
  std::string name;        // as written, with the qualifiers before it: "lane_id", "Tile::sum", "operator()"
  std::size_t name_token;  // the token that names it (its line is the function's)
  std::size_t open;        // the body's '{'
  std::size_t close;       // its '}'
};

// In order of their opening braces.
std::vector<FunctionBody> find_function_bodies(std::string_view text, std::span<const Token> tokens);

// The body whose braces hold token `token`, or nullptr.
const FunctionBody* body_holding(std::span<const FunctionBody> bodies, std::size_t token);

}  // namespace metrale::host
