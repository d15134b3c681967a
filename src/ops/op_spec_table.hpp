// ops/op_spec_table.hpp (private): the one reader of an op declared as data, over a toml++ table
// (parsed from a TOML op file, or converted from JSON by op_spec_json.cpp), so both texts mean the
// same and are refused the same way. Invariant: a refusal is a ConfigError "<source>[:<line>]:
// <key>: <what>" (JSON has no lines: the key alone).
#pragma once

#include <toml++/toml.h>

#include <filesystem>
#include <string_view>

#include "ops/op_spec.hpp"

namespace metrale::ops {

BuiltOp build_op_table(const toml::table& root, std::string_view source_name, const std::filesystem::path& base_dir);

}  // namespace metrale::ops
