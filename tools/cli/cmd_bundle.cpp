// cmd_bundle.cpp: `metrale-jit bundle list DIR [--json]` shows a bundle's entries;
// `metrale-jit bundle verify DIR [--json]` checks each one (its manifest key against its
// fields, its files' checksums, its CUBIN's arch) and names every bad one (exit 1 if any).
// Verify checks a bundle by itself; whether its keys match this library's templates is
// checked by the runtime that loads it (a stale entry is named there).
#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "cli_support.hpp"
#include "jit/bundle.hpp"
#include "metrale/error.hpp"

namespace metrale::cli {
namespace {

struct BundleOptions {
  std::string dir;
  bool json = false;
};

void list_bundle(const BundleOptions& options) {
  const BundleManifest manifest = read_bundle_manifest(options.dir);
  if (options.json) {
    nlohmann::json out = nlohmann::json::array();
    for (const BundleEntry& entry : manifest.entries) {
      out.push_back({{"kernel", entry.fields.kernel},
                     {"params", entry.fields.params_tag},
                     {"arch", entry.fields.arch},
                     {"lowered_name", entry.lowered_name},
                     {"key", entry.key},
                     {"cubin_file", entry.cubin_file},
                     {"ptx_file", entry.ptx_file},
                     {"built_by_nvrtc", entry.built_by_nvrtc}});
    }
    std::fputs((out.dump(2) + "\n").c_str(), stdout);
    return;
  }
  std::fputs(fmt::format("{} entries in {} ({})\n", manifest.entries.size(), options.dir, manifest.library).c_str(),
             stdout);
  std::fputs(fmt::format("{:<28} {:<12} {:<8} {:<16} {}\n", "kernel", "params", "arch", "key", "files").c_str(),
             stdout);
  for (const BundleEntry& entry : manifest.entries) {
    std::fputs(fmt::format("{:<28} {:<12} {:<8} {:<16} {} {}\n", entry.fields.kernel, entry.fields.params_tag,
                           entry.fields.arch, entry.key.substr(0, 16), entry.cubin_file, entry.ptx_file)
                   .c_str(),
               stdout);
  }
}

int verify_bundle(const BundleOptions& options) {
  const BundleManifest manifest = read_bundle_manifest(options.dir);
  int bad = 0;
  nlohmann::json out = nlohmann::json::array();
  for (const BundleEntry& entry : manifest.entries) {
    const std::string problem = bundle_entry_problem(options.dir, entry);
    bad += problem.empty() ? 0 : 1;
    if (options.json) {
      out.push_back({{"entry", entry.label()}, {"ok", problem.empty()}, {"problem", problem}});
    } else if (!problem.empty()) {
      std::fputs(fmt::format("BAD  {}: {}\n", entry.label(), problem).c_str(), stdout);
    }
  }
  if (options.json) {
    std::fputs((out.dump(2) + "\n").c_str(), stdout);
  } else {
    std::fputs(fmt::format("{} entries checked, {} bad\n", manifest.entries.size(), bad).c_str(), stdout);
  }
  return bad == 0 ? kDone : kFailed;
}

void setup_bundle(CLI::App& app, CommandContext& context) {
  auto* bundle = app.add_subcommand("bundle", "List or verify an ahead-of-time bundle (build --bundle DIR)");
  bundle->require_subcommand(1);
  auto options = std::make_shared<BundleOptions>();
  auto add_common = [&](CLI::App* command) {
    command->add_option("dir", options->dir, "The bundle directory")->required();
    command->add_flag("--json", options->json, "Print JSON");
  };
  auto* list = bundle->add_subcommand("list", "Entries with kernel, params, arch, key and files");
  add_common(list);
  list->callback([options, &context] {
    run_command(context, [&] {
      list_bundle(*options);
      return kDone;
    });
  });
  auto* verify = bundle->add_subcommand("verify", "Check every entry; name the bad ones (exit 1 if any)");
  add_common(verify);
  verify->callback([options, &context] { run_command(context, [&] { return verify_bundle(*options); }); });
}

const CommandRegistration kBundle{"bundle", setup_bundle};

}  // namespace
}  // namespace metrale::cli
