// host/prelude_table.hpp: the library's side of the host prelude's run-time entry points
// (METRALE_HOST_PRELUDE_API, metrale/host/thread_context.hpp): the table a host-JIT object
// binds when it is loaded.
// Invariants: one table per process, filled once from the list, so it cannot miss an entry
// the object calls; it outlives every object (they stay mapped for the process).
#pragma once

#include "metrale/host/thread_context.hpp"

namespace metrale::host {

const PreludeTable& prelude_table();

}  // namespace metrale::host
