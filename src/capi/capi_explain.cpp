// capi_explain.cpp: metrale_op_explain: what an op call with a shape would run on this runtime
// and the smallest M each guarded role takes, with where its threshold came from (a tuning table's
// row or the prediction), from the op's own explain (Runtime::explain), so it cannot disagree with
// the op call. With a device a kernel counts as present when its handle is; without one, when
// the target ships it (as the CLI's explain).
// Invariants: knows no op; the strings handed out are the calling thread's copy of the last
// explanation, replaced only once the new one is known to fit the C struct.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstring>
#include <utility>

#include "capi_call.hpp"
#include "capi_runtime.hpp"

namespace metrale::capi {
namespace {

static_assert(METRALE_MAX_EXPLAIN_ROLES >= ops::kMaxRoles, "metrale_op_explanation holds a row per role");

ops::Explanation& stored_explanation() {
  thread_local ops::Explanation explanation;
  return explanation;
}

// The C struct has room for METRALE_MAX_EXPLAIN_DETAILS details per role; an op that explains
// more is refused rather than answered in part.
void require_fits(const ops::Explanation& explanation) {
  if (explanation.roles.size() > METRALE_MAX_EXPLAIN_ROLES) {
    throw CapiError(METRALE_ERROR_INTERNAL,
                    fmt::format("op {} explains {} roles; metrale_op_explanation holds {}", explanation.op,
                                explanation.roles.size(), METRALE_MAX_EXPLAIN_ROLES));
  }
  for (const ops::RoleExplanation& role : explanation.roles) {
    if (role.details.size() > METRALE_MAX_EXPLAIN_DETAILS) {
      throw CapiError(METRALE_ERROR_INTERNAL,
                      fmt::format("op {} explains role {} with {} details; metrale_role_explanation holds {}",
                                  explanation.op, role.role, role.details.size(), METRALE_MAX_EXPLAIN_DETAILS));
    }
  }
}

const char* optional_text(const std::optional<std::string>& text) { return text ? text->c_str() : nullptr; }

metrale_role_explanation c_role(const ops::RoleExplanation& role) {
  metrale_role_explanation out{};
  out.role = role.role.c_str();
  out.kernel = role.kernel.c_str();
  out.present = role.present ? 1 : 0;
  out.runs = role.runs ? 1 : 0;
  out.reject = optional_text(role.reject);
  out.lever = role.lever.c_str();
  out.requested = role.requested ? 1 : 0;
  out.lever_origin = role.lever_origin.c_str();
  out.has_min_m = role.min_m ? 1 : 0;
  out.min_m = role.min_m.value_or(0);
  out.min_reason = optional_text(role.min_reason);
  for (const auto& [name, value] : role.details) {
    out.details[out.detail_count++] = metrale_explain_detail{name.c_str(), value};
  }
  return out;
}

metrale_op_explanation c_explanation(const ops::Explanation& explanation, std::size_t struct_size) {
  metrale_op_explanation out;
  metrale_op_explanation_init(&out);
  out.struct_size = struct_size;
  out.op = explanation.op.c_str();
  out.kernel = explanation.kernel.c_str();
  out.role = explanation.role.c_str();
  out.sm_count = explanation.sm_count;
  for (const ops::RoleExplanation& role : explanation.roles) {
    out.threshold_origins[out.role_count] = role.threshold_origin.c_str();  // ABI 8
    out.roles[out.role_count++] = c_role(role);
  }
  return out;
}

}  // namespace
}  // namespace metrale::capi

extern "C" {

void metrale_op_explanation_init(metrale_op_explanation* explanation) { metrale::capi::init_struct(explanation); }

metrale_status metrale_op_explain(const metrale_runtime* runtime, const char* op, const metrale_op_arg* shape,
                                  size_t arg_count, int32_t m_given, metrale_op_explanation* explanation) {
  using namespace metrale::capi;
  return capi_call("metrale_op_explain", [&] {
    const HeldRuntime held(runtime);
    const metrale::Runtime& rt = runtime_of(runtime);
    const FoundOp found = find_op(runtime, op);
    // ABI 7's struct ended at roles: it is still filled, up to its size and never past it.
    require_struct_since(explanation, "explanation", offsetof(metrale_op_explanation, threshold_origins));
    if (arg_count > 0 && shape == nullptr) {
      throw CapiError(METRALE_ERROR_ARGUMENT, fmt::format("shape is NULL but arg_count is {}", arg_count));
    }
    std::vector<metrale::ops::NamedArg> named;
    named.reserve(arg_count);
    for (std::size_t i = 0; i < arg_count; ++i) {
      named.push_back(metrale::ops::NamedArg{c_text(shape[i].name, fmt::format("shape[{}].name", i)), shape[i].value});
    }
    metrale::ops::Explanation answer = rt.explain(found.op->name, named, m_given != 0);
    require_fits(answer);
    metrale::ops::Explanation& stored = stored_explanation();
    stored = std::move(answer);
    const metrale_op_explanation out = c_explanation(stored, explanation->struct_size);
    std::memcpy(explanation, &out, std::min(explanation->struct_size, sizeof(out)));
  });
}

}  // extern "C"
