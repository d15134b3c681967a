// cmd_keygen.cpp: `metrale-jit keygen --out PREFIX` makes an Ed25519 key pair for signing bundles:
// PREFIX.key (the secret key, mode 0600) and PREFIX.pub (the public key a runtime is given through
// METRALE_BUNDLE_PUBKEY or RuntimeOptions::bundle_public_key). Never overwrites a key file. The
// formats are in jit/bundle_signature.hpp and README's bundle section.
#include <fmt/format.h>

#include <cstdio>
#include <memory>
#include <string>

#include "cli_support.hpp"
#include "jit/bundle_signature.hpp"

namespace metrale::cli {
namespace {

void setup_keygen(CLI::App& app, CommandContext& context) {
  auto* command = app.add_subcommand("keygen", "Make an Ed25519 key pair for signing bundles (PREFIX.key, PREFIX.pub)");
  auto prefix = std::make_shared<std::string>();
  command->add_option("--out", *prefix, "Write PREFIX.key (secret, 0600) and PREFIX.pub")->required();
  command->callback([prefix, &context] {
    run_command(context, [&] {
      write_bundle_key_pair(*prefix);
      std::fputs(fmt::format("wrote {0}.key (secret, keep it private) and {0}.pub\n", *prefix).c_str(), stdout);
      return kDone;
    });
  });
}

const CommandRegistration kKeygen{"keygen", setup_keygen};

}  // namespace
}  // namespace metrale::cli
