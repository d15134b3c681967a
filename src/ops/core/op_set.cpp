// op_set.cpp: the ops a runtime serves, by name or alias, and the library's own set.
#include <fmt/format.h>

#include <algorithm>

#include "metrale/error.hpp"
#include "metrale/ops/op_declaration.hpp"
#include "ops/core/library_ops.hpp"

namespace metrale::ops {

void OpSet::add(OpDeclaration op) {
  check_declaration(op);
  const auto clash = [&](std::string_view name) -> const OpDeclaration* { return find(name); };
  for (std::string_view name : [&] {
         std::vector<std::string_view> all{op.name};
         all.insert(all.end(), op.aliases.begin(), op.aliases.end());
         return all;
       }()) {
    if (const OpDeclaration* other = clash(name)) {
      throw ArgumentError(fmt::format("op '{}': the name '{}' is taken by op '{}'", op.name, name, other->name));
    }
  }
  op.extent_plan = make_extent_plan(op);
  ops_.push_back(std::move(op));
}

const OpDeclaration* OpSet::find(std::string_view name_or_alias) const {
  auto it =
      std::find_if(ops_.begin(), ops_.end(), [&](const OpDeclaration& op) { return op.answers_to(name_or_alias); });
  return it == ops_.end() ? nullptr : &*it;
}

const OpDeclaration& OpSet::get(std::string_view name_or_alias) const {
  if (const OpDeclaration* op = find(name_or_alias)) {
    return *op;
  }
  std::string known;
  for (const OpDeclaration& op : ops_) {
    known += (known.empty() ? "" : ", ") + op.name;
  }
  throw KernelChoiceError(fmt::format("no op named '{}' (known: {})", name_or_alias, known));
}

std::vector<std::string> OpSet::names() const {
  std::vector<std::string> names;
  names.reserve(ops_.size());
  for (const OpDeclaration& op : ops_) {
    names.push_back(op.name);
  }
  return names;
}

std::vector<LeverSpec> OpSet::levers() const {
  std::vector<LeverSpec> levers;
  for (const OpDeclaration& op : ops_) {
    for (const LeverSpec& lever : op.levers) {
      const bool known =
          std::any_of(levers.begin(), levers.end(), [&](const LeverSpec& l) { return l.toml_key == lever.toml_key; });
      if (!known) {
        levers.push_back(lever);
      }
    }
  }
  return levers;
}

const OpSet& library_ops() {
  static const OpSet ops = [] {
    OpSet set;
    for (OpDeclaration& op : library_op_declarations()) {
      set.add(std::move(op));
    }
    return set;
  }();
  return ops;
}

}  // namespace metrale::ops
