// profile/shape_variants.cpp: an op's shape constants at a profiled shape.
#include "profile/shape_variants.hpp"

#include <fmt/format.h>

namespace metrale {

std::optional<std::uint64_t> profile_shape_value(const ProfileShape& shape, bool has_n, std::string_view arg) {
  if (arg == "m") {
    return shape.m;
  }
  if (arg == "k") {
    return shape.k;
  }
  if (has_n && arg == "n") {
    return shape.n;
  }
  if (has_n && arg == "vheads_per_group") {
    return shape.vheads_per_group;
  }
  return std::nullopt;
}

std::vector<ProfiledShapeConstant> profile_shape_constants(const HardwareTarget& target, const ops::OpDeclaration& op,
                                                           const ProfileShape& shape, bool has_n) {
  std::vector<ProfiledShapeConstant> out;
  for (const ops::ShapeConstantDecl& constant : op.shape_constants) {
    const std::optional<std::size_t> role = op.role_index(constant.role);
    if (!role || target.find_kernel(op.roles[*role].kernel) == nullptr) {
      continue;
    }
    ProfiledShapeConstant row;
    row.role = op.roles[*role].role;
    row.kernel = op.roles[*role].kernel;
    row.arg = constant.arg;
    const std::optional<std::uint64_t> value = profile_shape_value(shape, has_n, constant.arg);
    if (!value) {
      row.reason = std::string(kNoProfileValue);
      out.push_back(std::move(row));
      continue;
    }
    row.value = *value;
    const ops::ShapeChoice choice = constant.rule(*value);
    row.shape = choice.shape;
    if (choice.shape == 0) {
      row.reason = std::string(choice.refusal);
    }
    out.push_back(std::move(row));
  }
  return out;
}

std::string shape_constant_note(const ProfiledShapeConstant& constant) {
  if (constant.shape != 0) {
    return {};
  }
  return fmt::format("note: {} at {} = {} stays generic (no specialised row): {}", constant.kernel, constant.arg,
                     constant.value, constant.reason);
}

}  // namespace metrale
