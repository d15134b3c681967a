/* A C engine built against the installed package: opens a runtime on the host backend through
 * metrale/metrale.h, prints the library's version and the runtime's target, and lists the ops
 * it serves with their roles (so the installed library exports the op catalogue too). */
#include <stdio.h>

#include "metrale/metrale.h"

int main(void) {
  metrale_runtime_options options;
  metrale_runtime_options_init(&options);
  options.backend = METRALE_BACKEND_HOST;
  metrale_runtime* rt = NULL;
  if (metrale_runtime_open(&options, &rt) != METRALE_OK) {
    fprintf(stderr, "c_consumer: %s\n", metrale_last_error());
    return 1;
  }
  metrale_runtime_info info;
  metrale_runtime_info_init(&info);
  metrale_status status = metrale_runtime_describe(rt, &info);
  if (status == METRALE_OK) {
    printf("metrale %s on %s (ABI %u)\n", metrale_version(), info.target, metrale_abi_version());
  }
  for (size_t i = 0; status == METRALE_OK && i < info.op_count; ++i) {
    metrale_op_info op;
    metrale_op_info_init(&op);
    status = metrale_op_get(rt, i, &op);
    for (size_t r = 0; status == METRALE_OK && r < op.role_count; ++r) {
      metrale_role_info role;
      metrale_role_info_init(&role);
      status = metrale_op_role(rt, op.name, r, &role);
      if (status == METRALE_OK) {
        printf("  %s: %s -> %s\n", op.name, role.role, role.kernel);
      }
    }
  }
  if (status != METRALE_OK) {
    fprintf(stderr, "c_consumer: %s\n", metrale_last_error());
  }
  metrale_runtime_close(rt);
  return status == METRALE_OK && info.op_count >= 2 ? 0 : 1;
}
