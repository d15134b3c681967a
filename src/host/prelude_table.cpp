// host/prelude_table.cpp: fills the host prelude's table from its one list (see the header).
#include "host/prelude_table.hpp"

namespace metrale::host {

const PreludeTable& prelude_table() {
  static const PreludeTable table = [] {
    PreludeTable filled;
    filled.fingerprint = prelude_table_fingerprint();
#define METRALE_HOST_PRELUDE_FILL(member, function, result, params, args, qualifiers) filled.member = &function;
    METRALE_HOST_PRELUDE_API(METRALE_HOST_PRELUDE_FILL)
#undef METRALE_HOST_PRELUDE_FILL
    return filled;
  }();
  return table;
}

}  // namespace metrale::host
