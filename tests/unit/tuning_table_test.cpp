// The tuning table's file: write -> read round trips, the digest refuses edits, every malformed
// key is named with file and line, the row rules, and the threshold rule (measured_min_m).
#include "metrale/ops/tuning_table.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "metrale/error.hpp"
#include "support/temp_dir.hpp"

namespace {

using metrale::ops::measured_min_m;
using metrale::ops::read_tuning_table;
using metrale::ops::TuningRow;
using metrale::ops::TuningTable;
using metrale::ops::TuningTiming;
using metrale::ops::write_tuning_table;

constexpr const char* kFile = "t.toml";

// A ladder whose role loses below index `wins_from` and wins from there on (never: size()).
std::vector<TuningTiming> ladder(std::mt19937& rng, const std::vector<std::uint32_t>& ms, std::size_t wins_from) {
  std::uniform_real_distribution<double> parent(0.5, 900.0);
  std::uniform_real_distribution<double> faster(0.3, 0.999);
  std::uniform_real_distribution<double> slower(1.001, 3.0);
  std::vector<TuningTiming> out;
  for (std::size_t i = 0; i < ms.size(); ++i) {
    const double parent_us = parent(rng);
    out.push_back({ms[i], parent_us, parent_us * (i >= wins_from ? faster(rng) : slower(rng))});
  }
  return out;
}

TuningRow row(std::string op, std::string role, std::uint32_t n, std::uint32_t k, std::vector<TuningTiming> timings,
              std::optional<std::uint32_t> predicted) {
  TuningRow out{std::move(op), std::move(role), n, k, measured_min_m(timings), predicted, {}, {}, std::move(timings)};
  out.role_kernel_key = "0123456789abcdef0123456789abcdef";
  out.parent_kernel_keys = {"fedcba9876543210fedcba9876543210", "00112233445566778899aabbccddeeff"};
  return out;
}

TuningTable random_table(std::uint32_t seed) {
  std::mt19937 rng(seed);
  TuningTable table;
  table.provenance = {"cuda",
                      "hopper",
                      "NVIDIA H200",
                      "GPU-5f3c0e1a-2b4d-4c6e-8f00-123456789abc",
                      132,
                      "580.65.06",
                      "13.0",
                      "0.1.0+fe11e99",
                      "2026-12-06T03:10:00Z",
                      5};
  const std::vector<std::uint32_t> ms{1, 8, 33, 64, 128, 264, 512, 1024, 4096};
  table.rows.push_back(row("ssm_ba_gates", "twin", 96, 5120, ladder(rng, ms, 5), 264));
  table.rows.push_back(row("ssm_ba_gates", "mma", 96, 5120, ladder(rng, ms, ms.size()), std::nullopt));
  table.rows.push_back(row("fp8_act_quant", "twin", 0, 7168, ladder(rng, ms, 0), 1));
  // Doubles whose shortest spellings are an integer, tiny, huge and zero.
  table.rows.push_back(row("silu_mul_fp8_quant", "twin", 0, 4096,
                           {{1, 3.0, 1e20}, {2, 0.1, 1e-7}, {8, 2.5e-5, 0.0}, {16, 123456789.125, 123456789.125}},
                           std::nullopt));
  return table;
}

void check_same(const TuningTable& got, const TuningTable& want) {
  const auto& g = got.provenance;
  const auto& w = want.provenance;
  CHECK(g.backend == w.backend);
  CHECK(g.target == w.target);
  CHECK(g.device_name == w.device_name);
  CHECK(g.device_uuid == w.device_uuid);
  CHECK(g.sm_count == w.sm_count);
  CHECK(g.driver == w.driver);
  CHECK(g.nvrtc == w.nvrtc);
  CHECK(g.library == w.library);
  CHECK(g.date == w.date);
  CHECK(g.repeats == w.repeats);
  REQUIRE(got.rows.size() == want.rows.size());
  for (std::size_t i = 0; i < got.rows.size(); ++i) {
    INFO("row " << i);
    const TuningRow& a = got.rows[i];
    const TuningRow& b = want.rows[i];
    CHECK(a.op == b.op);
    CHECK(a.role == b.role);
    CHECK(a.n == b.n);
    CHECK(a.k == b.k);
    CHECK(a.min_m == b.min_m);
    CHECK(a.predicted_min_m == b.predicted_min_m);
    CHECK(a.role_kernel_key == b.role_kernel_key);
    CHECK(a.parent_kernel_keys == b.parent_kernel_keys);
    REQUIRE(a.timings.size() == b.timings.size());
    for (std::size_t t = 0; t < a.timings.size(); ++t) {
      INFO("timing " << t);
      CHECK(a.timings[t].m == b.timings[t].m);
      CHECK(a.timings[t].parent_us == b.timings[t].parent_us);  // exactly
      CHECK(a.timings[t].role_us == b.timings[t].role_us);
    }
  }
}

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  REQUIRE(at != std::string::npos);
  return text.replace(at, from.size(), to);
}

// `text` with the value after the first `key` (up to the next comma, space or newline) replaced by `value`.
std::string with_value(std::string text, const std::string& key, const std::string& value) {
  const auto at = text.find(key);
  REQUIRE(at != std::string::npos);
  const auto start = at + key.size();
  return text.replace(start, text.find_first_of(", \n", start) - start, value);
}

// The 1-based line of the first `needle` in `text`.
int line_of(const std::string& text, const std::string& needle) {
  const auto at = text.find(needle);
  REQUIRE(at != std::string::npos);
  return 1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(at), '\n'));
}

std::string error_of(const std::string& text) {
  try {
    (void)read_tuning_table(text, kFile);
  } catch (const metrale::ConfigError& error) {
    return error.what();
  }
  FAIL("no ConfigError for:\n" << text);
  return {};
}

}  // namespace

TEST_CASE("tuning table: write then read gives back an equal table", "[tuning_table]") {
  const TuningTable table = random_table(20261206);
  REQUIRE(table.rows[0].min_m == 264u);  // the ladders are what the rows below expect
  REQUIRE_FALSE(table.rows[1].min_m);
  REQUIRE(table.rows[2].min_m == 1u);
  REQUIRE(table.rows[3].min_m == 2u);
  const std::string text = write_tuning_table(table);
  CHECK(text.rfind("# metrale-jit tuning table", 0) == 0);
  CHECK(text.find("format = 1\ndigest = \"") != std::string::npos);
  CHECK(text.find("min_m = 264\n") != std::string::npos);
  // Every timing a TOML float, in its shortest form.
  CHECK(text.find("  { m = 1, parent_us = 3.0, role_us = 1e+20 },\n  { m = 2, parent_us = 0.1, role_us = 1e-07 },\n"
                  "  { m = 8, parent_us = 2.5e-05, role_us = 0.0 },\n") != std::string::npos);
  const TuningTable read = read_tuning_table(text, kFile);
  check_same(read, table);
  CHECK(write_tuning_table(read) == text);
  CHECK(write_tuning_table(random_table(20261207)) != text);

  SECTION("comments and whitespace are not content") {
    std::string spaced = replaced(text, "[provenance]\n", "# measured overnight\n[provenance]\n\n");
    spaced = replaced(spaced, "sm_count = 132", "sm_count   =   132   # SMs");
    check_same(read_tuning_table(spaced, kFile), table);
  }
  SECTION("a table without rows") {
    TuningTable empty = table;
    empty.rows.clear();
    const std::string empty_text = write_tuning_table(empty);
    CHECK(empty_text.find("[[row]]") == std::string::npos);
    check_same(read_tuning_table(empty_text, kFile), empty);
  }
}

TEST_CASE("tuning table: quotes, backslashes and control characters in strings round-trip", "[tuning_table]") {
  TuningTable table = random_table(7);
  table.provenance.device_name = "NVIDIA \"H200\" \\\\server\\gpu0\nsecond line\ttab \x01\x7f caf\xc3\xa9 'single'";
  table.rows[1].role_kernel_key = "\"\"\"";
  table.rows[1].parent_kernel_keys = {"", "a\\", "\\u0041"};
  const std::string text = write_tuning_table(table);
  CHECK(text.find("device_name = \"NVIDIA \\\"H200\\\" \\\\\\\\server\\\\gpu0\\nsecond line\\ttab") !=
        std::string::npos);  // one line, escaped
  check_same(read_tuning_table(text, kFile), table);
}

TEST_CASE("tuning table: a value changed after writing is refused as edited, naming the digests", "[tuning_table]") {
  const std::string text = write_tuning_table(random_table(99));
  const auto digest_at = text.find("digest = \"") + 10;
  const std::string digest = text.substr(digest_at, 32);
  REQUIRE(digest.find_first_not_of("0123456789abcdef") == std::string::npos);

  // The fourth timing's parent_us of the first row, replaced by another number.
  std::size_t at = 0;
  for (int i = 0; i < 4; ++i) {
    at = text.find("parent_us = ", at) + 12;
  }
  const std::size_t end = text.find(',', at);
  const std::string original = text.substr(at, end - at);
  const std::string edits[] = {
      std::string(text).replace(at, end - at, original == "17.25" ? "17.5" : "17.25"),
      replaced(text, "driver = \"580.65.06\"", "driver = \"580.65.07\""),
      replaced(text, "\nmin_m = 264\n", "\nmin_m = 265\n"),
      replaced(text, "predicted_min_m = 264\n", "predicted_min_m = 265\n"),
      replaced(text, "\"00112233445566778899aabbccddeeff\"", "\"00112233445566778899aabbccddeefe\""),
  };
  for (const std::string& edited : edits) {
    REQUIRE(edited != text);
    const std::string message = error_of(edited);
    INFO(message);
    CHECK_THAT(message, Catch::StartsWith(std::string(kFile) +
                                          ": the table was edited after it was written: its "
                                          "digest is " +
                                          digest + ", its content's is "));
    CHECK_THAT(message, Catch::Contains("(run `metrale-jit tune` again)"));
  }
  CHECK(error_of(replaced(text, digest, std::string(32, '0'))).find("its digest is 00000000") != std::string::npos);
}

TEST_CASE("tuning table: a missing, mistyped or unknown key names the file, the line and the key", "[tuning_table]") {
  TuningTable table = random_table(5);
  table.rows.resize(1);
  const std::string text = write_tuning_table(table);
  const int provenance = line_of(text, "[provenance]");
  const int row0 = line_of(text, "[[row]]");
  const int timings = line_of(text, "{ m = 1,");
  REQUIRE(line_of(text, "digest = ") == 3);

  struct Case {
    const char* what;
    std::string text;
    std::string expected;  // the message starts with it
  };
  const Case cases[] = {
      {"a missing provenance key", replaced(text, "device_uuid = \"GPU-5f3c0e1a-2b4d-4c6e-8f00-123456789abc\"\n", ""),
       fmt::format("t.toml:{}: provenance.device_uuid: missing key", provenance)},
      {"a missing row key", replaced(text, "role = \"twin\"\n", ""),
       fmt::format("t.toml:{}: row[0].role: missing key", row0)},
      {"a missing document key", replaced(text, text.substr(text.find("digest = "), 44), ""),
       "t.toml: digest: missing key"},
      {"a missing timing key", replaced(text, "{ m = 1, ", "{ "),
       fmt::format("t.toml:{}: row[0].timings[0].m: missing key", timings)},
      {"min_m as a string", replaced(text, "min_m = 264", "min_m = \"264\""),
       fmt::format("t.toml:{}: row[0].min_m: expected an integer in [1, 4294967295], got a string",
                   line_of(text, "min_m = 264"))},
      {"sm_count as a float", replaced(text, "sm_count = 132", "sm_count = 132.5"),
       fmt::format("t.toml:{}: provenance.sm_count: expected an integer in [0, 4294967295], got a float",
                   line_of(text, "sm_count"))},
      {"n past 32 bits", replaced(text, "n = 96", "n = 4294967296"),
       fmt::format("t.toml:{}: row[0].n: expected an integer in [0, 4294967295], got 4294967296",
                   line_of(text, "n = 96"))},
      {"m of zero", replaced(text, "{ m = 1,", "{ m = 0,"),
       fmt::format("t.toml:{}: row[0].timings[0].m: expected an integer in [1, 4294967295], got 0", timings)},
      {"a negative timing", with_value(text, "parent_us = ", "-1.5"),
       fmt::format("t.toml:{}: row[0].timings[0].parent_us: expected a finite number >= 0, got -1.5", timings)},
      {"a NaN timing", with_value(text, "role_us = ", "nan"),
       fmt::format("t.toml:{}: row[0].timings[0].role_us: expected a finite number >= 0, got nan", timings)},
      {"an infinite timing", with_value(text, "role_us = ", "inf"),
       fmt::format("t.toml:{}: row[0].timings[0].role_us: expected a finite number >= 0, got inf", timings)},
      {"a string timing", with_value(text, "role_us = ", "\"fast\""),
       fmt::format("t.toml:{}: row[0].timings[0].role_us: expected a number of microseconds, got a string", timings)},
      {"a parent key that is not a string", replaced(text, "parent_kernel_keys = [", "parent_kernel_keys = [7, "),
       fmt::format("t.toml:{}: row[0].parent_kernel_keys[0]: expected a string, got an integer",
                   line_of(text, "parent_kernel_keys"))},
      {"timings that are not an array", text.substr(0, text.find("timings = [")) + "timings = 3\n",
       fmt::format("t.toml:{}: row[0].timings: expected an array, got an integer", line_of(text, "timings = ["))},
      {"provenance that is not a table",
       text.substr(0, text.find("[provenance]")) + "provenance = 1\n" + text.substr(text.find("\n[[row]]")),
       fmt::format("t.toml:{}: provenance: expected a table, got an integer", provenance)},
      {"an unknown row key", replaced(text, "k = 5120\n", "k = 5120\ncolour = 1\n"),
       fmt::format("t.toml:{}: row[0].colour: unknown key (allowed: op, role, n, k, min_m",
                   line_of(text, "k = 5120") + 1)},
      {"an unknown timing key", replaced(text, "{ m = 1,", "{ spread = 0.5, m = 1,"),
       fmt::format("t.toml:{}: row[0].timings[0].spread: unknown key", timings)},
      {"an unknown provenance key", replaced(text, "repeats = 5\n", "repeats = 5\nhost = \"x\"\n"),
       fmt::format("t.toml:{}: provenance.host: unknown key", line_of(text, "repeats") + 1)},
      {"an unknown document key", replaced(text, "[provenance]", "extra = true\n[provenance]"),
       fmt::format("t.toml:{}: extra: unknown key (allowed: format, digest, provenance, row)", provenance)},
      {"another format", replaced(text, "format = 1", "format = 2\nnew_key = 1"),
       "t.toml:2: format: 2 is not supported (this library reads format 1)"},
      {"bad TOML", replaced(text, "n = 96", "n = = 96"),
       fmt::format("t.toml:{}: TOML syntax: ", line_of(text, "n = 96"))},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    const std::string message = error_of(c.text);
    CHECK_THAT(message, Catch::StartsWith(c.expected));
  }
  // An integer is a number of microseconds too (the writer never writes one): this one passes the key checks and
  // is refused only as an edit.
  CHECK_THAT(error_of(with_value(text, "role_us = ", "3")), Catch::Contains("was edited after it was written"));
}

TEST_CASE("tuning table: a repeated row key, unsorted timings and a min_m its timings do not give are refused",
          "[tuning_table]") {
  const TuningTable valid = random_table(11);
  SECTION("a repeated key") {
    TuningTable table = valid;
    table.rows.push_back(table.rows[0]);
    table.rows.back().timings[0].parent_us += 1;  // the rest of the row may differ: the key is (op, role, n, k)
    const std::string text = write_tuning_table(table);
    std::size_t at = 0;
    for (int i = 0; i < 5; ++i) {
      at = text.find("[[row]]", at + 1);
    }
    const int line =
        1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(at), '\n'));
    CHECK(error_of(text) ==
          fmt::format("t.toml:{}: row[4]: repeats row[0]'s key (ssm_ba_gates twin n=96 k=5120)", line));
    table.rows.back().n = 128;
    CHECK(read_tuning_table(write_tuning_table(table), kFile).rows.size() == 5);
  }
  SECTION("timings out of order or repeated") {
    for (const std::uint32_t m : {4u, 8u}) {
      TuningTable table = valid;
      table.rows[3].timings[3].m = m;  // after 8
      table.rows[3].min_m = measured_min_m(table.rows[3].timings);
      const std::string text = write_tuning_table(table);
      CHECK(error_of(text) == fmt::format("t.toml:{}: row[3].timings[3].m: {} does not follow 8: timings ascend "
                                          "strictly in m",
                                          line_of(text, fmt::format("{{ m = {}, parent_us = 123456789.125", m)), m));
    }
  }
  SECTION("min_m other than its timings give") {
    TuningTable table = valid;
    table.rows[0].min_m = 300;
    std::string text = write_tuning_table(table);
    CHECK(error_of(text) ==
          fmt::format("t.toml:{}: row[0].min_m: 300 is not what its timings give (264)", line_of(text, "min_m = 300")));
    table.rows[0].min_m.reset();
    text = write_tuning_table(table);
    CHECK(error_of(text) ==
          fmt::format("t.toml:{}: row[0].min_m: absent, but its timings give 264", line_of(text, "[[row]]")));
    table = valid;
    table.rows[1].min_m = 4096;  // the role lost at the largest M
    text = write_tuning_table(table);
    CHECK(error_of(text) == fmt::format("t.toml:{}: row[1].min_m: 4096 is not what its timings give (none)",
                                        line_of(text, "min_m = 4096")));
  }
}

TEST_CASE("tuning table: measured_min_m is the start of the winning suffix of the ladder", "[tuning_table]") {
  struct Case {
    const char* what;
    std::vector<TuningTiming> timings;
    std::optional<std::uint32_t> expected;
  };
  const Case cases[] = {
      {"wins everywhere", {{1, 5.0, 4.0}, {16, 9.0, 3.5}, {256, 40.0, 12.0}}, 1},
      {"wins from the middle", {{1, 2.0, 4.0}, {16, 3.0, 3.5}, {264, 40.0, 12.0}, {1024, 90.0, 20.0}}, 264},
      {"loses at the largest", {{1, 5.0, 4.0}, {16, 9.0, 3.5}, {256, 40.0, 41.0}}, std::nullopt},
      {"a win, a loss, then wins", {{1, 5.0, 4.0}, {16, 3.0, 3.5}, {64, 40.0, 12.0}, {128, 80.0, 2.0}}, 64},
      {"ties count as wins", {{1, 2.0, 4.0}, {16, 3.5, 3.5}, {256, 40.0, 40.0}}, 16},
      {"a single winning point", {{7, 1.25, 1.0}}, 7},
      {"a single losing point", {{7, 1.0, 1.25}}, std::nullopt},
      {"empty", {}, std::nullopt},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    CHECK(measured_min_m(c.timings) == c.expected);
  }
  std::mt19937 rng(3);
  const std::vector<std::uint32_t> ms{1, 2, 4, 8, 16, 32, 64};
  for (std::size_t wins_from = 0; wins_from <= ms.size(); ++wins_from) {
    const auto got = measured_min_m(ladder(rng, ms, wins_from));
    CHECK(got == (wins_from < ms.size() ? std::optional(ms[wins_from]) : std::nullopt));
  }
}

TEST_CASE("tuning table: find returns the row of a key and nothing for another", "[tuning_table]") {
  const TuningTable table = random_table(42);
  const TuningRow* mma = table.find("ssm_ba_gates", "mma", 96, 5120);
  REQUIRE(mma != nullptr);
  CHECK(mma == &table.rows[1]);
  CHECK(table.find("fp8_act_quant", "twin", 0, 7168) == &table.rows[2]);
  CHECK(table.find("ssm_ba_gates", "mma", 128, 5120) == nullptr);
  CHECK(table.find("ssm_ba_gates", "mma", 96, 5121) == nullptr);
  CHECK(table.find("ssm_ba_gates", "shared", 96, 5120) == nullptr);
  CHECK(TuningTable{}.find("ssm_ba_gates", "twin", 96, 5120) == nullptr);
}

TEST_CASE("tuning table: load_tuning_table reads a file and names one it cannot read", "[tuning_table]") {
  const metrale::test::TempDir dir("metrale-tuning");
  const TuningTable table = random_table(8);
  dir.write("table.toml", write_tuning_table(table));
  const std::string path = (dir.path() / "table.toml").string();
  check_same(metrale::ops::load_tuning_table(path), table);

  const std::string missing = (dir.path() / "absent.toml").string();
  CHECK_THROWS_WITH(metrale::ops::load_tuning_table(missing),
                    "cannot read tuning table " + missing + ": No such file or directory");
  dir.write("edited.toml", replaced(write_tuning_table(table), "repeats = 5", "repeats = 6"));
  const std::string edited = (dir.path() / "edited.toml").string();
  CHECK_THROWS_WITH(metrale::ops::load_tuning_table(edited), Catch::StartsWith(edited + ": the table was edited"));
}
