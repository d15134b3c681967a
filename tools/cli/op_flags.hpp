// op_flags.hpp: an op's scalar arguments and levers as command-line flags, from its declaration.
// Any declared scalar NAME is `--set NAME=VALUE` or `--NAME VALUE` with '_' written '-' (so
// `--k-stride 5124`, `--vheads-per-group 3`; a bare `--pow2-scales` means 1); a scalar declared
// fp32 takes a decimal number and travels as its bits. Any lever is `--lever-set KEY=on|off`;
// `--lever` and `--tensor-core` are the levers of the roles "twin" and "tensor_core".
// Invariants: a name the op does not declare, a repeated name, a value that is not a number or an
// on/off that is neither is a UsageError naming the flag and the op's scalars or levers (exit 2);
// ranges are the declaration's (bind_args) and the op's own checks.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "metrale/ops/op_declaration.hpp"

namespace metrale::cli {

struct OpFlags {
  std::vector<std::string> set;        // --set NAME=VALUE
  std::vector<std::string> lever_set;  // --lever-set KEY=on|off
  std::string twin_lever;              // --lever on|off
  std::string tensor_core_lever;       // --tensor-core on|off
};

// Adds --set, --lever-set, --lever and --tensor-core to `command` and lets it take the --NAME
// extras; `levers` false leaves the lever flags out (run, selftest).
void add_op_flags(CLI::App* command, OpFlags& flags, bool levers);

// The scalars given: --set, then the command's extras (`remaining`), by declared name.
std::map<std::string, std::uint64_t> given_scalars(const ops::OpDeclaration& op, const OpFlags& flags,
                                                   const std::vector<std::string>& remaining);

// The levers forced on the command line, by [defaults] key, with the flag that forced them.
struct ForcedLever {
  bool on = false;
  std::string flag;  // "--lever on"
};
std::map<std::string, ForcedLever> forced_levers(const ops::OpDeclaration& op, const OpFlags& flags);

// `--k-stride` for "k_stride".
std::string flag_of(std::string_view scalar);

}  // namespace metrale::cli
