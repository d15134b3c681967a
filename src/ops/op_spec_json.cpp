// op_spec_json.cpp: an op declared as data from a JSON text (Python's dicts, the C ABI): the JSON
// converted to the toml++ table the TOML reader reads (objects -> tables, arrays -> arrays, strings,
// integers, floats and booleans as themselves), so JSON and TOML cannot differ in meaning.
// Invariant: a JSON null, or an integer past 2^63, is refused naming its key.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "metrale/error.hpp"
#include "ops/op_spec_table.hpp"
#include "ops/op_spec_toml.hpp"

namespace metrale::ops {
namespace {

[[noreturn]] void refuse(std::string_view source, const std::string& key, std::string_view what) {
  throw ConfigError(fmt::format("{}: {}: {}", source, key.empty() ? "JSON" : key, what));
}

toml::table convert_object(const nlohmann::json& object, std::string_view source, const std::string& key);
toml::array convert_array(const nlohmann::json& array, std::string_view source, const std::string& key);

// Puts `value` (at `key`) into `table` under `name`, or at the end of `array` when `table` is null.
void put(const nlohmann::json& value, std::string_view source, const std::string& key, toml::table* table,
         const std::string& name, toml::array* array) {
  const auto place = [&](auto&& node) {
    if (table != nullptr) {
      table->insert(name, std::forward<decltype(node)>(node));
    } else {
      array->push_back(std::forward<decltype(node)>(node));
    }
  };
  if (value.is_object()) {
    place(convert_object(value, source, key));
  } else if (value.is_array()) {
    place(convert_array(value, source, key));
  } else if (value.is_string()) {
    place(value.get<std::string>());
  } else if (value.is_boolean()) {
    place(value.get<bool>());
  } else if (value.is_number_unsigned() && value.get<std::uint64_t>() > INT64_MAX) {
    refuse(source, key, "an integer past 2^63");
  } else if (value.is_number_integer()) {
    place(value.get<std::int64_t>());
  } else if (value.is_number_float()) {
    place(value.get<double>());
  } else {
    refuse(source, key, "null is no value (leave the key out)");
  }
}

toml::table convert_object(const nlohmann::json& object, std::string_view source, const std::string& key) {
  toml::table table;
  for (const auto& [name, value] : object.items()) {
    put(value, source, key.empty() ? name : fmt::format("{}.{}", key, name), &table, name, nullptr);
  }
  return table;
}

toml::array convert_array(const nlohmann::json& array, std::string_view source, const std::string& key) {
  toml::array out;
  for (std::size_t i = 0; i < array.size(); ++i) {
    put(array[i], source, fmt::format("{}[{}]", key, i), nullptr, {}, &out);
  }
  return out;
}

}  // namespace

BuiltOp build_op_json(std::string_view text, std::string_view source_name, const std::filesystem::path& base_dir) {
  nlohmann::json root;
  try {
    root = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& error) {
    refuse(source_name, "JSON syntax", error.what());
  }
  if (!root.is_object()) {
    refuse(source_name, "", "expected an object (the op's keys)");
  }
  return build_op_table(convert_object(root, source_name, ""), source_name, base_dir);
}

}  // namespace metrale::ops
