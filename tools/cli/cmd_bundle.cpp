// cmd_bundle.cpp: `metrale-jit bundle list DIR [--json]` shows a bundle's entries;
// `metrale-jit bundle verify DIR [--pubkey FILE] [--json]` checks each one (its manifest key against
// its fields, its files' checksums, its CUBIN's arch) and names every bad one (exit 1 if any), and
// says whether the bundle is signed: "unsigned", or with a public key (--pubkey, else
// METRALE_BUNDLE_PUBKEY) "signed, good signature" / "signed, bad signature: ..." (a bad or, with a
// key, a missing signature exits 1, as a runtime with that key would refuse the bundle);
// `metrale-jit bundle sign DIR --key FILE` signs an existing bundle (bundle_signature.hpp).
// Verify checks a bundle by itself; whether its keys match this library's templates is
// checked by the runtime that loads it (a stale entry is named there).
#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "cli_support.hpp"
#include "jit/bundle.hpp"
#include "jit/bundle_signature.hpp"
#include "metrale/error.hpp"

namespace metrale::cli {
namespace {

struct BundleOptions {
  std::string dir;
  bool json = false;
  std::string pubkey;  // verify: the signer's public key file
  std::string key;     // sign: the secret key file
};

// The signature's verdict as verify prints it, and the signature when it holds.
struct SignatureLine {
  std::string text;  // "unsigned", "signed, good signature", ...
  bool refused = false;
  std::shared_ptr<const BundleSignature> signature;
};

SignatureLine signature_line(const BundleOptions& options, const std::string& manifest_text) {
  std::string key_file = options.pubkey;
  if (key_file.empty()) {
    const char* from_env = std::getenv("METRALE_BUNDLE_PUBKEY");
    key_file = from_env != nullptr ? from_env : "";
  }
  if (key_file.empty()) {
    return {bundle_has_signature(options.dir)
                ? "signed (not checked: no public key given, --pubkey FILE or METRALE_BUNDLE_PUBKEY)"
                : "unsigned",
            false, nullptr};
  }
  const BundleSignatureCheck checked =
      check_bundle_signature(options.dir, manifest_text, read_bundle_public_key(key_file));
  switch (checked.status) {
    case BundleSignatureStatus::kUnsigned:
      return {"unsigned: refused under that key: " + checked.problem, true, nullptr};
    case BundleSignatureStatus::kGood:
      return {"signed, good signature (" + key_file + ")", false, checked.signature};
    case BundleSignatureStatus::kBad:
      break;
  }
  return {"signed, bad signature: " + checked.problem, true, nullptr};
}

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
  const std::string manifest_text = read_bundle_manifest_text(options.dir);
  const BundleManifest manifest =
      manifest_from_json(manifest_text, (std::filesystem::path(options.dir) / kBundleManifestName).string());
  const SignatureLine signature = signature_line(options, manifest_text);
  int bad = 0;
  nlohmann::json out = nlohmann::json::array();
  for (const BundleEntry& entry : manifest.entries) {
    CompiledEntry loaded;
    std::string problem = bundle_entry_problem(options.dir, entry, &loaded);
    if (problem.empty() && signature.signature) {
      problem = signature.signature->entry_problem(entry, loaded);
    }
    bad += problem.empty() ? 0 : 1;
    if (options.json) {
      out.push_back({{"entry", entry.label()},
                     {"ok", problem.empty() && !signature.refused},
                     {"problem", problem},
                     {"signature", signature.text}});
    } else if (!problem.empty()) {
      std::fputs(fmt::format("BAD  {}: {}\n", entry.label(), problem).c_str(), stdout);
    }
  }
  if (options.json) {
    std::fputs((out.dump(2) + "\n").c_str(), stdout);
  } else {
    std::fputs(fmt::format("{} entries checked, {} bad\n", manifest.entries.size(), bad).c_str(), stdout);
    std::fputs(fmt::format("signature: {}\n", signature.text).c_str(), stdout);
  }
  return bad == 0 && !signature.refused ? kDone : kFailed;
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
  verify->add_option("--pubkey", options->pubkey,
                     "Check the signature under this public key file (default: METRALE_BUNDLE_PUBKEY)");
  verify->callback([options, &context] { run_command(context, [&] { return verify_bundle(*options); }); });
  auto* sign = bundle->add_subcommand("sign", "Sign a bundle with an Ed25519 secret key file (writes bundle.sig)");
  sign->add_option("dir", options->dir, "The bundle directory")->required();
  sign->add_option("--key", options->key, "The secret key file (metrale-jit keygen)")->required();
  sign->callback([options, &context] {
    run_command(context, [&] {
      sign_bundle(options->dir, read_bundle_secret_key(options->key));
      std::fputs(fmt::format("signed {} ({})\n", options->dir, kBundleSignatureName).c_str(), stdout);
      return kDone;
    });
  });
}

const CommandRegistration kBundle{"bundle", setup_bundle};

}  // namespace
}  // namespace metrale::cli
