// op_spec_toml.cpp: a TOML op file (or a table from JSON) -> OpSpec -> build_op, every refusal at
// the file's line and key.
// The reader records the line of every key it reads (by the key's path), so a SpecError from
// build_op, which names the spec's key, is reported at the line that holds it.
#include "ops/op_spec_toml.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>

#include "metrale/error.hpp"
#include "ops/op_spec_table.hpp"

namespace metrale::ops {
namespace {

class Reader {
 public:
  Reader(std::string_view file, std::filesystem::path base) : file_(file), base_(std::move(base)) {}

  [[noreturn]] void fail(std::uint32_t line, std::string_view key, std::string_view what) const {
    throw ConfigError(line != 0 ? fmt::format("{}:{}: {}: {}", file_, line, key, what)
                                : fmt::format("{}: {}: {}", file_, key, what));
  }
  // The line of `key`, or of the nearest enclosing key read (0: none).
  [[nodiscard]] std::uint32_t line_of(std::string key) const {
    while (!key.empty()) {
      if (const auto found = lines_.find(key); found != lines_.end()) {
        return found->second;
      }
      const std::size_t cut = key.find_last_of(".[");
      key = cut == std::string::npos ? std::string() : key.substr(0, cut);
    }
    return 0;
  }

  void only(const toml::table& table, const std::string& path, std::initializer_list<std::string_view> allowed) {
    lines_.emplace(path, table.source().begin.line);
    for (auto&& [key, node] : table) {
      if (std::find(allowed.begin(), allowed.end(), key.str()) == allowed.end()) {
        fail(key.source().begin.line, at(path, key.str()),
             fmt::format("unknown key (allowed: {})", fmt::join(allowed, ", ")));
      }
    }
  }

  const toml::node* get(const toml::table& table, const std::string& path, std::string_view key, bool required) {
    const toml::node* node = table.get(key);
    if (node == nullptr && required) {
      fail(table.source().begin.line, at(path, key), "missing key");
    }
    if (node != nullptr) {
      lines_[at(path, key)] = node->source().begin.line;
    }
    return node;
  }

  std::string text(const toml::table& table, const std::string& path, std::string_view key, bool required = false) {
    const toml::node* node = get(table, path, key, required);
    if (node == nullptr) {
      return {};
    }
    if (!node->is_string()) {
      wrong(*node, at(path, key), "a string");
    }
    return node->as_string()->get();
  }

  std::optional<std::int64_t> integer(const toml::table& table, const std::string& path, std::string_view key) {
    const toml::node* node = get(table, path, key, false);
    if (node == nullptr) {
      return std::nullopt;
    }
    if (!node->is_integer() || node->as_integer()->get() < 0) {
      wrong(*node, at(path, key), "a non-negative integer");
    }
    return node->as_integer()->get();
  }

  bool boolean(const toml::table& table, const std::string& path, std::string_view key) {
    const toml::node* node = get(table, path, key, false);
    if (node != nullptr && !node->is_boolean()) {
      wrong(*node, at(path, key), "true or false");
    }
    return node != nullptr && node->as_boolean()->get();
  }

  // An array of strings (integers are taken as their decimal text: `grid = ["m", 1, 1]`).
  std::vector<std::string> texts(const toml::table& table, const std::string& path, std::string_view key) {
    std::vector<std::string> out;
    const toml::node* node = get(table, path, key, false);
    if (node == nullptr) {
      return out;
    }
    if (!node->is_array()) {
      wrong(*node, at(path, key), "an array of strings");
    }
    for (std::size_t i = 0; i < node->as_array()->size(); ++i) {
      const toml::node& item = *node->as_array()->get(i);
      const std::string item_key = fmt::format("{}[{}]", at(path, key), i);
      lines_[item_key] = item.source().begin.line;
      if (item.is_string()) {
        out.push_back(item.as_string()->get());
      } else if (item.is_integer()) {
        out.push_back(std::to_string(item.as_integer()->get()));
      } else {
        wrong(item, item_key, "a string");
      }
    }
    return out;
  }

  // The tables of an array of tables (`[[args]]`), each visited with its path "args[i]".
  template <typename Visit>
  void tables(const toml::table& table, const std::string& path, std::string_view key, Visit visit) {
    const toml::node* node = get(table, path, key, false);
    if (node == nullptr) {
      return;
    }
    if (!node->is_array_of_tables()) {
      wrong(*node, at(path, key), "an array of tables ([[...]])");
    }
    for (std::size_t i = 0; i < node->as_array()->size(); ++i) {
      visit(*node->as_array()->get(i)->as_table(), fmt::format("{}[{}]", at(path, key), i));
    }
  }

  // A template beside the op file, read as a kernel's source text.
  std::string source_file(const std::string& name, const std::string& key) const {
    std::ifstream in(base_ / name, std::ios::binary);
    if (!in) {
      fail(line_of(key), key, fmt::format("cannot read {}", (base_ / name).string()));
    }
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
  }

  static std::string at(const std::string& path, std::string_view key) {
    return path.empty() ? std::string(key) : fmt::format("{}.{}", path, key);
  }

 private:
  [[noreturn]] void wrong(const toml::node& node, const std::string& key, std::string_view expected) const {
    fail(node.source().begin.line, key, fmt::format("expected {}", expected));
  }

  std::string_view file_;
  std::filesystem::path base_;
  std::map<std::string, std::uint32_t> lines_;
};

ArgKind read_kind(Reader& r, const std::string& key, const std::string& text) {
  if (text == "input") {
    return ArgKind::kInput;
  }
  if (text == "output") {
    return ArgKind::kOutput;
  }
  if (text == "scalar" || text.empty()) {
    return ArgKind::kScalar;
  }
  r.fail(r.line_of(key), key, fmt::format("'{}' is no kind (input, output, scalar)", text));
}

DType read_dtype(Reader& r, const std::string& key, const std::string& text) {
  for (const DType dtype :
       {DType::kBf16, DType::kFp32, DType::kE4m3, DType::kU8, DType::kU16, DType::kI32, DType::kU32}) {
    if (to_string(dtype) == text) {
      return dtype;
    }
  }
  r.fail(r.line_of(key), key, fmt::format("'{}' is no dtype (bf16, fp32, e4m3, u8, u16, i32, u32)", text));
}

ArgDecl read_arg(Reader& r, const toml::table& t, const std::string& path) {
  r.only(t, path,
         {"name", "kind", "dtype", "alignment", "dims", "min", "max", "default", "optional", "zero_means",
          "in_place_of", "multiple_of", "layout_by", "column_stride", "doc"});
  ArgDecl arg;
  arg.name = r.text(t, path, "name", true);
  arg.kind = read_kind(r, path + ".kind", r.text(t, path, "kind"));
  const std::string dtype = r.text(t, path, "dtype", arg.tensor());
  arg.dtype = dtype.empty() ? DType::kU32 : read_dtype(r, path + ".dtype", dtype);
  arg.alignment = static_cast<std::uint32_t>(r.integer(t, path, "alignment").value_or(0));
  arg.dims = r.texts(t, path, "dims");
  arg.min = static_cast<std::uint64_t>(r.integer(t, path, "min").value_or(0));
  arg.max = static_cast<std::uint64_t>(r.integer(t, path, "max").value_or(UINT32_MAX));
  if (const auto fallback = r.integer(t, path, "default")) {
    arg.fallback = static_cast<std::uint64_t>(*fallback);
  }
  arg.optional = r.boolean(t, path, "optional");
  arg.zero_means = r.text(t, path, "zero_means");
  arg.in_place_of = r.text(t, path, "in_place_of");
  arg.multiple_of = static_cast<std::uint64_t>(r.integer(t, path, "multiple_of").value_or(0));
  arg.layout_by = r.text(t, path, "layout_by");
  arg.column_stride = r.text(t, path, "column_stride");
  arg.doc = r.text(t, path, "doc");
  return arg;
}

SpecRule read_rule(Reader& r, const toml::table& t, const std::string& path) {
  r.only(t, path, {"reason", "holds"});
  return SpecRule{r.text(t, path, "reason", true), r.text(t, path, "holds", true)};
}

std::array<std::string, 3> read_dims3(Reader& r, const toml::table& t, const std::string& path, std::string_view key) {
  std::vector<std::string> given = r.texts(t, path, key);
  if (given.size() > 3) {
    r.fail(r.line_of(Reader::at(path, key)), Reader::at(path, key), "at most 3 expressions (x, y, z)");
  }
  std::array<std::string, 3> out{"1", "1", "1"};
  std::copy(given.begin(), given.end(), out.begin());
  return out;
}

SpecRole read_role(Reader& r, const toml::table& t, const std::string& path) {
  r.only(t, path,
         {"role", "aliases", "doc", "kernel", "source", "source_file", "expression", "params", "background",
          "kernel_args", "grid", "block", "lever", "lever_env", "lever_doc", "tolerance", "guard"});
  SpecRole role;
  role.role = r.text(t, path, "role", true);
  role.aliases = r.texts(t, path, "aliases");
  role.doc = r.text(t, path, "doc");
  role.kernel.kernel = r.text(t, path, "kernel", true);
  role.kernel.source = r.text(t, path, "source");
  role.kernel.source_text = r.text(t, path, "source_text");
  if (const std::string file = r.text(t, path, "source_file"); !file.empty()) {
    role.kernel.source_text = r.source_file(file, path + ".source_file");
    if (role.kernel.source.empty()) {
      role.kernel.source = std::filesystem::path(file).filename().string();
    }
  }
  if (role.kernel.source.empty()) {
    r.fail(r.line_of(path), path, "needs `source` (a template's file name) or `source_file`");
  }
  role.kernel.expression = r.text(t, path, "expression", true);
  role.kernel.params = r.texts(t, path, "params");
  role.kernel.background = r.boolean(t, path, "background");
  role.kernel_args = r.texts(t, path, "kernel_args");
  role.grid = read_dims3(r, t, path, "grid");
  role.block = read_dims3(r, t, path, "block");
  role.lever = r.text(t, path, "lever");
  role.lever_env = r.text(t, path, "lever_env");
  role.lever_doc = r.text(t, path, "lever_doc");
  if (const toml::node* tolerance = r.get(t, path, "tolerance", false)) {
    if (!tolerance->is_number() || tolerance->value<double>().value_or(-1) < 0) {
      r.fail(tolerance->source().begin.line, path + ".tolerance", "expected a non-negative number");
    }
    role.tolerance = tolerance->value<double>();
  }
  r.tables(t, path, "guard",
           [&](const toml::table& rule, const std::string& key) { role.guard.push_back(read_rule(r, rule, key)); });
  return role;
}

SpecShape read_check(Reader& r, const toml::table& t, const std::string& path) {
  SpecShape shape;
  for (auto&& [key, node] : t) {
    const std::string name(key.str());
    const auto value = r.integer(t, path, name);
    shape.emplace_back(name, static_cast<std::uint64_t>(*value));
  }
  return shape;
}

}  // namespace

BuiltOp build_op_table(const toml::table& root, std::string_view source_name, const std::filesystem::path& base_dir) {
  Reader r(source_name, base_dir);
  r.only(root, "", {"name", "aliases", "summary", "args", "shape_rules", "roles", "check"});
  OpSpec spec;
  spec.name = r.text(root, "", "name", true);
  spec.aliases = r.texts(root, "", "aliases");
  spec.summary = r.text(root, "", "summary");
  r.tables(root, "", "args",
           [&](const toml::table& t, const std::string& key) { spec.args.push_back(read_arg(r, t, key)); });
  r.tables(root, "", "shape_rules",
           [&](const toml::table& t, const std::string& key) { spec.shape_rules.push_back(read_rule(r, t, key)); });
  r.tables(root, "", "roles",
           [&](const toml::table& t, const std::string& key) { spec.roles.push_back(read_role(r, t, key)); });
  r.tables(root, "", "check",
           [&](const toml::table& t, const std::string& key) { spec.check_shapes.push_back(read_check(r, t, key)); });
  try {
    return build_op(spec);
  } catch (const SpecError& error) {
    r.fail(r.line_of(error.key()), error.key(), error.what());
  } catch (const ArgumentError& error) {
    throw ConfigError(fmt::format("{}: {}", source_name, error.what()));
  }
}

BuiltOp build_op_toml(std::string_view text, std::string_view source_name, const std::filesystem::path& base_dir) {
  toml::table root;
  try {
    root = toml::parse(text, source_name);
  } catch (const toml::parse_error& error) {
    Reader(source_name, base_dir).fail(error.source().begin.line, "TOML syntax", error.description());
  }
  return build_op_table(root, source_name, base_dir);
}

BuiltOp build_op_text(std::string_view text, std::string_view source_name, const std::filesystem::path& base_dir) {
  const std::size_t first = text.find_first_not_of(" \t\r\n");
  return first != std::string_view::npos && text[first] == '{' ? build_op_json(text, source_name, base_dir)
                                                               : build_op_toml(text, source_name, base_dir);
}

BuiltOp build_op_file(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    throw ConfigError(fmt::format("{}: cannot be read", file.string()));
  }
  std::ostringstream text;
  text << in.rdbuf();
  return build_op_toml(text.str(), file.string(), file.parent_path());
}

}  // namespace metrale::ops
