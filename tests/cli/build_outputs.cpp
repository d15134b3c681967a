// build_outputs.cpp: checks `metrale-jit build` from outside the binary.
// Usage: build_outputs <metrale-jit> <work dir> files|spills|cache-verify|broken-template
//   files:        build --all-targets --out writes <target>/<kernel>.<params>.<arch>.ptx and
//                 .cubin for every kernel every target ships; each CUBIN is a non-empty ELF.
//   spills:       the build's JSON table reports resources, and 0 spills, for every kernel.
//   cache-verify: after a build fills a fresh METRALE_CACHE_DIR, one entry with a flipped
//                 byte makes `cache verify` exit 1 naming that entry.
//   broken-template: with METRALE_TEMPLATE_DIR on the embedded templates written out, where
//                 ssm_ba_gates.cuh fails a static_assert, build exits 1 and prints NVRTC's
//                 error with the quoted source line; the FP8 kernels still build.
// The work dir is wiped first and holds the cache, so nothing touches ~/.cache.
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "cli_process.hpp"
#include "ground/embedded_files.hpp"
#include "hardware/hardware_loader.hpp"
#include "ops/op_kernels.hpp"
#include "ops/pinned_shapes.hpp"

namespace fs = std::filesystem;
using metrale::cli_test::Checks;
using metrale::cli_test::quoted;
using metrale::cli_test::Ran;
using metrale::cli_test::run_shell;

namespace {

std::string with_cache(const fs::path& work, const std::string& cli) {
  return fmt::format("METRALE_CACHE_DIR={} {}", quoted((work / "cache").string()), quoted(cli));
}

nlohmann::json build_all(Checks& checks, const std::string& cli, const fs::path& work) {
  const Ran ran = run_shell(with_cache(work, cli) +
                            fmt::format(" build --all-targets --json --out {}", quoted((work / "out").string())));
  checks.expect(ran.exit_code == 0, fmt::format("build --all-targets exits 0 (got {}): {}", ran.exit_code, ran.output));
  return nlohmann::json::parse(ran.output);
}

const nlohmann::json* find_row(const nlohmann::json& rows, const std::string& target, const std::string& kernel) {
  for (const auto& row : rows) {
    if (row.at("target") == target && row.at("kernel") == kernel) {
      return &row;
    }
  }
  return nullptr;
}

void check_files(Checks& checks, const nlohmann::json& rows, const fs::path& work) {
  std::size_t expected_rows = 0;
  for (const auto& target : metrale::load_targets(metrale::ops::library_catalog())) {
    for (const auto& kernel : target.kernels) {
      ++expected_rows;
      const std::string what = target.name + "/" + kernel.name;
      const nlohmann::json* row = find_row(rows, target.name, kernel.name);
      checks.expect(row != nullptr, what + ": a row in the build table");
      if (row == nullptr) {
        continue;
      }
      const std::string arch = row->at("arch");
      checks.expect(target.arch.empty() || arch == target.arch, what + ": built for the target's arch " + target.arch);
      checks.expect(row->at("params") == kernel.params.tag(), what + ": params " + kernel.params.tag());
      const fs::path stem =
          work / "out" / target.name / fmt::format("{}.{}.{}", kernel.name, kernel.params.tag(), arch);
      const std::string ptx = metrale::cli_test::read_file(stem.string() + ".ptx");
      const std::string cubin = metrale::cli_test::read_file(stem.string() + ".cubin");
      checks.expect(ptx.find(".entry") != std::string::npos, stem.string() + ".ptx holds PTX with an .entry");
      checks.expect(cubin.size() > 4 && cubin.compare(0, 4,
                                                      "\x7f"
                                                      "ELF") == 0,
                    stem.string() + ".cubin is a non-empty ELF");
      checks.expect(row->at("cubin_bytes") == cubin.size(), what + ": cubin_bytes equals the file's size");
    }
  }
  // Each target's pinned shapes ([shapes]) add their specialised variants' rows.
  for (const auto& target : metrale::load_targets(metrale::ops::library_catalog())) {
    const auto pins = metrale::ops::target_pins(target);
    for (const auto& pinned : metrale::ops::plan_pinned_shapes(target, pins, metrale::ops::library_ops()).variants) {
      ++expected_rows;
      const bool found = std::any_of(rows.begin(), rows.end(), [&](const nlohmann::json& row) {
        return row.at("target") == target.name && row.at("kernel") == pinned.kernel &&
               row.at("params") == pinned.params.tag() && row.at("ok") == true;
      });
      checks.expect(found,
                    target.name + "/" + pinned.kernel + " " + pinned.params.tag() + ": a row for the pinned shape");
    }
  }
  checks.expect(rows.size() == expected_rows,
                fmt::format("{} rows for {} shipped kernels and pinned shapes", rows.size(), expected_rows));
}

void check_spills(Checks& checks, const nlohmann::json& rows) {
  checks.expect(!rows.empty(), "the build table has rows");
  for (const auto& row : rows) {
    const std::string what =
        fmt::format("{}/{} {} {}", row.at("target").get<std::string>(), row.at("kernel").get<std::string>(),
                    row.at("params").get<std::string>(), row.at("arch").get<std::string>());
    checks.expect(row.at("registers").is_number() && row.at("registers").get<int>() > 0, what + ": registers reported");
    checks.expect(row.at("spill_stores") == 0 && row.at("spill_loads") == 0,
                  fmt::format("{}: 0 spills (stores {}, loads {})", what, row.at("spill_stores").dump(),
                              row.at("spill_loads").dump()));
    checks.expect(row.at("stack_bytes") == 0,
                  fmt::format("{}: no stack frame ({} bytes)", what, row.at("stack_bytes").dump()));
  }
}

void check_cache_verify(Checks& checks, const std::string& cli, const fs::path& work) {
  const Ran built = run_shell(with_cache(work, cli) + " build --target hopper 2>&1");
  checks.expect(built.exit_code == 0, "build --target hopper fills the cache: " + built.output);
  const Ran clean = run_shell(with_cache(work, cli) + " cache verify 2>&1");
  checks.expect(clean.exit_code == 0, "a fresh cache verifies: " + clean.output);
  std::set<fs::path> entries;
  for (const auto& file : fs::directory_iterator(work / "cache")) {
    if (file.path().extension() == ".cubin") {
      entries.insert(file.path());
    }
  }
  checks.expect(!entries.empty(), "the build wrote cache entries");
  if (entries.empty()) {
    return;
  }
  const fs::path victim = *entries.begin();
  std::string bytes = metrale::cli_test::read_file(victim);
  bytes[bytes.size() / 2] = static_cast<char>(bytes[bytes.size() / 2] ^ 0x5a);
  std::ofstream(victim, std::ios::binary | std::ios::trunc)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  const Ran verify = run_shell(with_cache(work, cli) + " cache verify 2>&1");
  checks.expect(verify.exit_code == 1,
                fmt::format("cache verify exits 1 on a corrupted entry (got {})", verify.exit_code));
  checks.expect(verify.output.find(victim.filename().string()) != std::string::npos,
                "cache verify names " + victim.filename().string() + ": " + verify.output);
  for (const auto& other : entries) {
    checks.expect(other == victim || verify.output.find(other.filename().string()) == std::string::npos,
                  "cache verify does not blame the intact " + other.filename().string());
  }
}

void check_broken_template(Checks& checks, const std::string& cli, const fs::path& work) {
  // The embedded set, flat as METRALE_TEMPLATE_DIR reads it (the sources live in several folders).
  fs::create_directories(work / "templates");
  for (const metrale::EmbeddedFile& file : metrale::embedded_templates()) {
    std::ofstream(work / "templates" / std::string(file.name), std::ios::binary) << file.text;
  }
  std::ofstream(work / "templates" / "ssm_ba_gates.cuh", std::ios::app)
      << "\nstatic_assert(sizeof(int) == 3, \"metrale test: deliberately broken\");\n";
  const Ran ran = run_shell(fmt::format("METRALE_TEMPLATE_DIR={} ", quoted((work / "templates").string())) +
                            with_cache(work, cli) + " build --target hopper 2>&1");
  checks.expect(ran.exit_code == 1, fmt::format("build exits 1 on a failing kernel (got {})", ran.exit_code));
  checks.expect(ran.output.find("failed to compile ssm_ba_gates b256l64") != std::string::npos,
                "the failure names the kernel: " + ran.output);
  checks.expect(ran.output.find("ssm_ba_gates.cuh:") != std::string::npos &&
                    ran.output.find("static_assert(sizeof(int) == 3") != std::string::npos,
                "the failure quotes the source line: " + ran.output);
  const std::size_t row = ran.output.find("\nhopper  fp8_act_quant_hopper ");
  const std::string row_text =
      row == std::string::npos ? "" : ran.output.substr(row + 1, ran.output.find('\n', row + 1) - row - 1);
  checks.expect(!row_text.empty() && row_text.find("FAILED") == std::string::npos,
                "the FP8 twin still builds: " + row_text);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: build_outputs <metrale-jit> <work dir> files|spills|cache-verify|broken-template\n");
    return 2;
  }
  const std::string cli = argv[1], mode = argv[3];
  const fs::path work = argv[2];
  fs::remove_all(work);
  fs::create_directories(work);
  Checks checks;
  try {
    if (mode == "files") {
      check_files(checks, build_all(checks, cli, work), work);
    } else if (mode == "spills") {
      check_spills(checks, build_all(checks, cli, work));
    } else if (mode == "broken-template") {
      check_broken_template(checks, cli, work);
    } else if (mode == "cache-verify") {
      check_cache_verify(checks, cli, work);
    } else {
      std::fprintf(stderr, "unknown mode %s\n", mode.c_str());
      return 2;
    }
  } catch (const std::exception& error) {
    checks.expect(false, std::string("unexpected error: ") + error.what());
  }
  return checks.finish(("build_outputs " + mode).c_str());
}
