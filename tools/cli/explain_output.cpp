// explain_output.cpp: an Explanation as explain's JSON keys and its text lines.
#include "explain_output.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace metrale::cli {
namespace {

using Json = nlohmann::json;

Json or_null(const std::optional<std::string>& text) { return text ? Json(*text) : Json(nullptr); }

// The primary role's row: "twin", else the last (nearest the parent); nullptr with no guarded role.
const ops::RoleExplanation* primary(const ops::Explanation& e) {
  const auto twin =
      std::find_if(e.roles.begin(), e.roles.end(), [](const ops::RoleExplanation& r) { return r.role == "twin"; });
  if (twin != e.roles.end()) {
    return &*twin;
  }
  return e.roles.empty() ? nullptr : &e.roles.back();
}

// "tensor-core" for "tensor_core".
std::string spoken(std::string_view role) {
  std::string out(role);
  std::replace(out.begin(), out.end(), '_', '-');
  return out;
}

std::string on_off(bool on) { return on ? "on" : "off"; }

}  // namespace

namespace {

Json roles_json(const ops::Explanation& e, std::string_view op) {
  const ops::RoleExplanation* main = primary(e);
  Json out = {{"op", op}, {"target", e.target}};
  if (!e.m) {
    if (main != nullptr) {
      out[main->role + "_kernel"] = main->kernel;
      out["min_m"] = main->min_m ? Json(*main->min_m) : Json(nullptr);
      out["reject"] = or_null(main->min_reason);
    }
    for (const ops::RoleExplanation& row : e.roles) {
      if (&row != main) {
        out[row.role + "_kernel"] = row.kernel;
        out[row.role + "_min_m"] = row.min_m ? Json(*row.min_m) : Json(nullptr);
        out[row.role + "_reject"] = or_null(row.min_reason);
      }
    }
    return out;
  }
  out["kernel"] = e.kernel;
  out["m"] = *e.m;
  out["sm_count"] = e.sm_count;
  out["twin"] = main != nullptr && main->runs;
  out["reject"] = main != nullptr ? or_null(main->reject) : Json(nullptr);
  out["requested"] = main != nullptr && main->requested;
  out["lever"] = main != nullptr ? main->lever_origin : "";
  if (main != nullptr && !main->threshold_origin.empty()) {
    out["threshold"] = main->threshold_origin;
  }
  if (main != nullptr && !main->verification.empty()) {
    out["verification"] = main->verification;  // only where verification ran (a device, verify on)
  }
  for (const ops::RoleExplanation& row : e.roles) {
    if (&row == main) {
      continue;
    }
    Json role = {
        {"runs", row.runs}, {"reject", or_null(row.reject)}, {"requested", row.requested}, {"lever", row.lever_origin}};
    if (!row.verification.empty()) {
      role["verification"] = row.verification;
    }
    if (!row.threshold_origin.empty()) {
      role["threshold"] = row.threshold_origin;  // "prediction" or the tuning table's file and row
    }
    for (const auto& [key, value] : row.details) {
      role[key] = value;
    }
    out[row.role] = std::move(role);
  }
  return out;
}

Json shape_json(const ShapeVariantState& state) {
  return {{"role", state.role},
          {"kernel", state.kernel},
          {"arg", state.arg},
          {"value", state.value},
          {"params", state.params.tag()},
          {"specialised", state.shape != 0},
          {"pinned", state.declared},
          {"reason", state.shape != 0 ? Json(nullptr) : Json(std::string(state.refusal))}};
}

// "  shape  n = 96: ssm_ba_gates_mma b256l128g6s6, pinned: built at open"
std::string shape_text(const ShapeVariantState& state) {
  if (state.shape == 0) {
    return fmt::format("  shape  {} = {}: {} {} (generic): {}\n", state.arg, state.value, state.kernel,
                       state.params.tag(), state.refusal);
  }
  return fmt::format(
      "  shape  {} = {}: {} {}, {}\n", state.arg, state.value, state.kernel, state.params.tag(),
      state.declared ? "pinned: built at open"
                     : "built in the background on first sight; the guards pick among the kernels built until then");
}

std::string explain_roles_text(const ops::Explanation& e, std::string_view op) {
  const ops::RoleExplanation* main = primary(e);
  std::string text;
  if (!e.m) {
    const auto line = [&](const ops::RoleExplanation& row) {
      const auto ceiling = std::find_if(row.details.begin(), row.details.end(),
                                        [](const auto& detail) { return detail.first == ops::kMaxMDetail; });
      text += !row.min_m ? std::string{}
              : ceiling != row.details.end()
                  ? fmt::format("{} runs {} for {} <= M <= {}", op, row.kernel, *row.min_m, ceiling->second)
                  : fmt::format("{} runs {} for M >= {}", op, row.kernel, *row.min_m);
      text += row.min_m ? std::string{}
                        : fmt::format("{} never runs {} for this shape: {}", op, row.kernel,
                                      row.min_reason.value_or("no reason given"));
      text += row.threshold_origin.empty() ? "\n" : fmt::format(" (threshold: {})\n", row.threshold_origin);
    };
    if (main != nullptr) {
      line(*main);
    }
    for (const ops::RoleExplanation& row : e.roles) {
      if (&row != main) {
        line(row);
      }
    }
    return text;
  }
  const bool main_runs = main != nullptr && main->runs;
  text = fmt::format("{} on {} (SM count {}, lever {} from {}):\n  runs   {}{}\n", op, e.target, e.sm_count,
                     on_off(main != nullptr && main->requested), main != nullptr ? main->lever_origin : "none",
                     e.kernel, main_runs ? fmt::format(" (the {})", main->role) : "");
  bool other_runs = false;
  for (const ops::RoleExplanation& row : e.roles) {
    if (&row == main) {
      continue;
    }
    other_runs = other_runs || row.runs;
    text += fmt::format("  {} kernel: {} (lever {} from {})\n", spoken(row.role),
                        row.runs ? "runs" : "declines: " + row.reject.value_or(""), on_off(row.requested),
                        row.lever_origin);
    if (row.runs && !row.note.empty()) {
      text += fmt::format("  {}\n", row.note);
    }
    if (!row.threshold_origin.empty()) {
      text += fmt::format("  {} threshold: {}\n", spoken(row.role), row.threshold_origin);
    }
    if (!row.verification.empty()) {
      text += fmt::format("  {} kernel verdict: {}\n", spoken(row.role), row.verification);
    }
  }
  if (main != nullptr && !main->verification.empty()) {
    text += fmt::format("  {} verdict: {}\n", main->kernel, main->verification);
  }
  if (!other_runs && main != nullptr) {
    text += fmt::format("  reason {}\n", main->reject.value_or(fmt::format("none: the {} runs", main->role)));
  }
  return text;
}

}  // namespace

Json explain_json(const ops::Explanation& e, std::string_view op, std::span<const ShapeVariantState> shapes) {
  Json out = roles_json(e, op);
  if (!shapes.empty()) {
    Json rows = Json::array();
    for (const ShapeVariantState& state : shapes) {
      rows.push_back(shape_json(state));
    }
    out["shapes"] = std::move(rows);
  }
  return out;
}

std::string explain_text(const ops::Explanation& e, std::string_view op, std::span<const ShapeVariantState> shapes) {
  std::string text = explain_roles_text(e, op);
  for (const ShapeVariantState& state : shapes) {
    text += shape_text(state);
  }
  return text;
}

}  // namespace metrale::cli
