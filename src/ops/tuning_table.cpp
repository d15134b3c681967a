// tuning_table.cpp: a tuning table <-> its TOML file (README "Tuning tables"), and the threshold rule.
// Invariants: the writer is the one spelling of a table (fixed key order, strings escaped here,
// doubles as std::to_chars' shortest round-trip form), so its digest, XXH3-128 of that text with
// the digest line left out, depends on the values alone; the reader refuses every missing,
// mistyped or unknown key, then a digest that is not its content's, then a row that breaks a rule.
#include "metrale/ops/tuning_table.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <toml++/toml.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>
#include <system_error>

#include "jit/entry_key.hpp"
#include "metrale/error.hpp"

namespace metrale::ops {
namespace {

constexpr std::int64_t kFormat = 1;
constexpr std::int64_t kMaxU32 = std::numeric_limits<std::uint32_t>::max();
constexpr std::string_view kPreamble =
    "# metrale-jit tuning table (README \"Tuning tables\"); written by `metrale-jit tune`.\n"
    "format = 1\n";

// A TOML basic string on one line: quotes, backslashes and control characters escaped.
std::string toml_string(std::string_view text) {
  std::string out = "\"";
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (byte < 0x20 || byte == 0x7F) {
      out += fmt::format("\\u{:04X}", byte);
    } else {
      out += c;
    }
  }
  return out + '"';
}

// Shortest text that reads back as the same double; always a TOML float ("3" would be an integer).
std::string number(double value) {
  std::array<char, 64> buffer{};
  const auto result = std::to_chars(buffer.data(), buffer.data() + buffer.size(), value);
  std::string out(buffer.data(), result.ptr);
  return out.find_first_of(".en") == std::string::npos ? out + ".0" : out;
}

// Everything the writer writes but the digest line.
std::string unsigned_text(const TuningTable& table) {
  const TuningProvenance& p = table.provenance;
  std::string out(kPreamble);
  out += fmt::format(
      "\n[provenance]\nbackend = {}\ntarget = {}\ndevice_name = {}\ndevice_uuid = {}\nsm_count = {}\n"
      "driver = {}\nnvrtc = {}\nlibrary = {}\ndate = {}\nrepeats = {}\n",
      toml_string(p.backend), toml_string(p.target), toml_string(p.device_name), toml_string(p.device_uuid), p.sm_count,
      toml_string(p.driver), toml_string(p.nvrtc), toml_string(p.library), toml_string(p.date), p.repeats);
  for (const TuningRow& row : table.rows) {
    out += fmt::format("\n[[row]]\nop = {}\nrole = {}\nn = {}\nk = {}\n", toml_string(row.op), toml_string(row.role),
                       row.n, row.k);
    if (row.min_m) {
      out += fmt::format("min_m = {}\n", *row.min_m);
    }
    if (row.predicted_min_m) {
      out += fmt::format("predicted_min_m = {}\n", *row.predicted_min_m);
    }
    std::vector<std::string> parents;
    std::transform(row.parent_kernel_keys.begin(), row.parent_kernel_keys.end(), std::back_inserter(parents),
                   toml_string);
    out += fmt::format("role_kernel_key = {}\nparent_kernel_keys = [{}]\ntimings = [{}",
                       toml_string(row.role_kernel_key), fmt::join(parents, ", "), row.timings.empty() ? "" : "\n");
    for (const TuningTiming& t : row.timings) {
      out +=
          fmt::format("  {{ m = {}, parent_us = {}, role_us = {} }},\n", t.m, number(t.parent_us), number(t.role_us));
    }
    out += "]\n";
  }
  return out;
}

std::string digest_of(const std::string& text) { return fields_digest({&text}); }

// "a table", "an integer", ...: toml::node_type's order.
std::string_view type_name(const toml::node& node) {
  static constexpr std::array<std::string_view, 10> kNames{"nothing",    "a table",    "an array",  "a string",
                                                           "an integer", "a float",    "a boolean", "a date",
                                                           "a time",     "a date-time"};
  return kNames.at(static_cast<std::size_t>(node.type()));
}

std::string text_of(std::optional<std::uint32_t> m) { return m ? std::to_string(*m) : "none"; }

// Typed key reads, every refusal "<file>:<line>: <dotted key>: <reason>" (no line for the document).
class Reader {
 public:
  explicit Reader(std::string_view file) : file_(file) {}

  [[noreturn]] void fail(std::uint32_t line, std::string_view key, std::string_view reason) const {
    throw ConfigError(line != 0 ? fmt::format("{}:{}: {}: {}", file_, line, key, reason)
                                : fmt::format("{}: {}: {}", file_, key, reason));
  }

  static std::string at(std::string_view prefix, std::string_view key) {
    return prefix.empty() ? std::string(key) : fmt::format("{}.{}", prefix, key);
  }

  void only(const toml::table& table, std::string_view prefix, std::initializer_list<std::string_view> allowed) const {
    for (auto&& [key, node] : table) {
      if (std::find(allowed.begin(), allowed.end(), key.str()) == allowed.end()) {
        fail(key.source().begin.line, at(prefix, key.str()),
             fmt::format("unknown key (allowed: {})", fmt::join(allowed, ", ")));
      }
    }
  }

  // The node at `key`; nullptr for an absent optional one.
  const toml::node* get(const toml::table& table, std::string_view prefix, std::string_view key,
                        bool required = true) const {
    const toml::node* node = table.get(key);
    if (node == nullptr && required) {
      fail(prefix.empty() ? 0 : table.source().begin.line, at(prefix, key), "missing key");
    }
    return node;
  }

  // The node as a T (toml::array, toml::table, std::string, std::int64_t, double), else refused.
  template <typename T>
  const auto& as(const toml::node& node, const std::string& key, std::string_view expected) const {
    const auto* value = node.as<T>();
    if (value == nullptr) {
      fail(node.source().begin.line, key, fmt::format("expected {}, got {}", expected, type_name(node)));
    }
    return *value;
  }

  std::string string(const toml::table& table, std::string_view prefix, std::string_view key) const {
    return as<std::string>(*get(table, prefix, key), at(prefix, key), "a string").get();
  }

  std::uint32_t integer(const toml::node& node, const std::string& key, std::int64_t min) const {
    const std::string expected = fmt::format("an integer in [{}, {}]", min, kMaxU32);
    const std::int64_t value = as<std::int64_t>(node, key, expected).get();
    if (value < min || value > kMaxU32) {
      fail(node.source().begin.line, key, fmt::format("expected {}, got {}", expected, value));
    }
    return static_cast<std::uint32_t>(value);
  }

  std::optional<std::uint32_t> integer(const toml::table& table, std::string_view prefix, std::string_view key,
                                       std::int64_t min, bool required = true) const {
    const toml::node* node = get(table, prefix, key, required);
    return node == nullptr ? std::nullopt : std::optional(integer(*node, at(prefix, key), min));
  }

  // A microsecond count: a finite non-negative float (an integer is taken as one).
  double micros(const toml::table& table, std::string_view prefix, std::string_view key) const {
    const toml::node& node = *get(table, prefix, key);
    const std::string dotted = at(prefix, key);
    const auto* whole = node.as_integer();
    const double us = whole != nullptr ? static_cast<double>(whole->get())
                                       : as<double>(node, dotted, "a number of microseconds").get();
    if (!std::isfinite(us) || us < 0) {
      fail(node.source().begin.line, dotted, fmt::format("expected a finite number >= 0, got {}", number(us)));
    }
    return us;
  }

 private:
  std::string_view file_;
};

TuningRow read_row(const Reader& r, const toml::table& row, const std::string& prefix) {
  r.only(row, prefix,
         {"op", "role", "n", "k", "min_m", "predicted_min_m", "role_kernel_key", "parent_kernel_keys", "timings"});
  TuningRow out{r.string(row, prefix, "op"),
                r.string(row, prefix, "role"),
                *r.integer(row, prefix, "n", 0),
                *r.integer(row, prefix, "k", 0),
                r.integer(row, prefix, "min_m", 1, false),
                r.integer(row, prefix, "predicted_min_m", 1, false),
                r.string(row, prefix, "role_kernel_key"),
                {},
                {}};
  const std::string parents_key = Reader::at(prefix, "parent_kernel_keys");
  const auto& parents = r.as<toml::array>(*r.get(row, prefix, "parent_kernel_keys"), parents_key, "an array");
  for (std::size_t i = 0; i < parents.size(); ++i) {
    out.parent_kernel_keys.push_back(
        r.as<std::string>(parents[i], fmt::format("{}[{}]", parents_key, i), "a string").get());
  }
  const std::string timings_key = Reader::at(prefix, "timings");
  const auto& timings = r.as<toml::array>(*r.get(row, prefix, "timings"), timings_key, "an array");
  for (std::size_t i = 0; i < timings.size(); ++i) {
    const std::string at = fmt::format("{}[{}]", timings_key, i);
    const auto& point = r.as<toml::table>(timings[i], at, "a table { m, parent_us, role_us }");
    r.only(point, at, {"m", "parent_us", "role_us"});
    out.timings.push_back(
        {*r.integer(point, at, "m", 1), r.micros(point, at, "parent_us"), r.micros(point, at, "role_us")});
  }
  return out;
}

// The rules a row keeps once its keys are read: one row per key, ascending M, min_m the rule's.
void check_rows(const Reader& r, const TuningTable& table, const toml::array& nodes) {
  for (std::size_t i = 0; i < table.rows.size(); ++i) {
    const TuningRow& row = table.rows[i];
    const auto& node = *nodes[i].as_table();
    const std::string prefix = fmt::format("row[{}]", i);
    for (std::size_t j = 0; j < i; ++j) {
      const TuningRow& other = table.rows[j];
      if (other.op == row.op && other.role == row.role && other.n == row.n && other.k == row.k) {
        r.fail(node.source().begin.line, prefix,
               fmt::format("repeats row[{}]'s key ({} {} n={} k={})", j, row.op, row.role, row.n, row.k));
      }
    }
    const auto& timings = *node.get("timings")->as_array();
    for (std::size_t t = 1; t < row.timings.size(); ++t) {
      if (row.timings[t].m <= row.timings[t - 1].m) {
        r.fail(
            timings[t].source().begin.line, fmt::format("{}.timings[{}].m", prefix, t),
            fmt::format("{} does not follow {}: timings ascend strictly in m", row.timings[t].m, row.timings[t - 1].m));
      }
    }
    if (const auto rule = measured_min_m(row.timings); rule != row.min_m) {
      const toml::node* min_m = node.get("min_m");
      r.fail((min_m != nullptr ? min_m : &node)->source().begin.line, prefix + ".min_m",
             row.min_m ? fmt::format("{} is not what its timings give ({})", *row.min_m, text_of(rule))
                       : fmt::format("absent, but its timings give {}", *rule));
    }
  }
}

}  // namespace

const TuningRow* TuningTable::find(std::string_view op, std::string_view role, std::uint32_t n, std::uint32_t k) const {
  const auto found = std::find_if(rows.begin(), rows.end(), [&](const TuningRow& row) {
    return row.op == op && row.role == role && row.n == n && row.k == k;
  });
  return found == rows.end() ? nullptr : &*found;
}

std::string write_tuning_table(const TuningTable& table) {
  std::string text = unsigned_text(table);
  text.insert(kPreamble.size(), fmt::format("digest = {}\n", toml_string(digest_of(text))));
  return text;
}

TuningTable read_tuning_table(std::string_view text, std::string_view file) {
  const Reader r(file);
  toml::table root;
  try {
    root = toml::parse(text, file);
  } catch (const toml::parse_error& error) {
    r.fail(error.source().begin.line, "TOML syntax", error.description());
  }
  // The format first: a later format may have keys this one does not know.
  const toml::node& format = *r.get(root, "", "format");
  if (const std::int64_t value = r.as<std::int64_t>(format, "format", "an integer").get(); value != kFormat) {
    r.fail(format.source().begin.line, "format",
           fmt::format("{} is not supported (this library reads format {})", value, kFormat));
  }
  r.only(root, "", {"format", "digest", "provenance", "row"});
  const std::string digest = r.string(root, "", "digest");

  TuningTable table;
  const auto& p = r.as<toml::table>(*r.get(root, "", "provenance"), "provenance", "a table");
  r.only(
      p, "provenance",
      {"backend", "target", "device_name", "device_uuid", "sm_count", "driver", "nvrtc", "library", "date", "repeats"});
  const auto text_at = [&](std::string_view key) { return r.string(p, "provenance", key); };
  const auto count_at = [&](std::string_view key, std::int64_t min) { return *r.integer(p, "provenance", key, min); };
  table.provenance = {text_at("backend"),      text_at("target"),     text_at("device_name"), text_at("device_uuid"),
                      count_at("sm_count", 0), text_at("driver"),     text_at("nvrtc"),       text_at("library"),
                      text_at("date"),         count_at("repeats", 1)};
  const toml::array no_rows;
  const toml::node* rows_node = r.get(root, "", "row", false);
  const auto& rows =
      rows_node == nullptr ? no_rows : r.as<toml::array>(*rows_node, "row", "an array of [[row]] tables");
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const std::string prefix = fmt::format("row[{}]", i);
    table.rows.push_back(read_row(r, r.as<toml::table>(rows[i], prefix, "a [[row]] table"), prefix));
  }

  if (const std::string content = digest_of(unsigned_text(table)); content != digest) {
    throw ConfigError(fmt::format(
        "{}: the table was edited after it was written: its digest is {}, its content's is {} (run `metrale-jit tune` "
        "again)",
        file, digest, content));
  }
  check_rows(r, table, rows);
  return table;
}

TuningTable load_tuning_table(const std::string& path) {
  const auto refuse = [&path](int error) {
    return ConfigError(fmt::format("cannot read tuning table {}: {}", path, std::system_category().message(error)));
  };
  const std::unique_ptr<std::FILE, int (*)(std::FILE*)> stream(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (stream == nullptr) {
    throw refuse(errno);
  }
  std::string text;
  std::array<char, 65536> buffer{};
  std::size_t got = 0;
  while ((got = std::fread(buffer.data(), 1, buffer.size(), stream.get())) > 0) {
    text.append(buffer.data(), got);
  }
  if (std::ferror(stream.get()) != 0) {
    throw refuse(errno);
  }
  return read_tuning_table(text, path);
}

std::optional<std::uint32_t> measured_min_m(const std::vector<TuningTiming>& timings) {
  std::optional<std::uint32_t> from;
  for (auto point = timings.rbegin(); point != timings.rend() && point->role_us <= point->parent_us; ++point) {
    from = point->m;
  }
  return from;
}

}  // namespace metrale::ops
