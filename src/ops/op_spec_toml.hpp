// ops/op_spec_toml.hpp: an op declared as data read from a TOML op file (ARCHITECTURE.md, "Engine
// ops as data"; tests/data/ops/fp8_as_data.toml is a complete example): the same OpSpec build_op
// turns into a declaration, so a file and a C++ spec cannot differ in what they mean.
// Invariants: every key is known and of its type, or a ConfigError reads "<file>:<line>: <key>:
// <what is wrong>" (the key as the file spells it: "roles[1].guard[2].holds"); an expression
// build_op refuses is reported the same way, at the line of the key that holds it.
//
// The file: top-level `name`, `aliases`, `summary`; `[[args]]` (name, kind = input | output |
// scalar, dtype, alignment, dims, min, max, default, optional, zero_means, in_place_of,
// multiple_of, layout_by, column_stride, doc); `[[shape_rules]]` (reason, holds); `[[roles]]`
// (role, aliases, doc, kernel, source, source_file: a template beside the file, read as the
// kernel's source text, expression, params, background, kernel_args, grid, block, lever,
// lever_env, lever_doc, tolerance, and `[[roles.guard]]` reason, holds; or source_text, the
// template's text inline); `[[check]]` (one table of scalar values per check shape). The same
// keys as JSON (objects and arrays) give the same op.
#pragma once

#include <filesystem>
#include <string_view>

#include "ops/op_spec.hpp"

namespace metrale::ops {

// The op of a TOML text; `source_name` names it in messages, `base_dir` is where source_file keys
// are read from.
BuiltOp build_op_toml(std::string_view text, std::string_view source_name, const std::filesystem::path& base_dir);

// The same from a JSON text of the same keys (what Python's dicts become: json.dumps).
BuiltOp build_op_json(std::string_view text, std::string_view source_name, const std::filesystem::path& base_dir);

// JSON when the text starts with '{', else TOML (the C ABI's op texts).
BuiltOp build_op_text(std::string_view text, std::string_view source_name, const std::filesystem::path& base_dir);

// The op of a TOML file (ConfigError naming the file when it cannot be read).
BuiltOp build_op_file(const std::filesystem::path& file);

}  // namespace metrale::ops
