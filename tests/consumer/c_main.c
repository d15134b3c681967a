/* A C engine built against the installed package: opens a runtime on the host backend through
 * metrale/metrale.h and prints the library's version and the runtime's target. */
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
  const metrale_status status = metrale_runtime_describe(rt, &info);
  if (status == METRALE_OK) {
    printf("metrale %s on %s\n", metrale_version(), info.target);
  } else {
    fprintf(stderr, "c_consumer: %s\n", metrale_last_error());
  }
  metrale_runtime_close(rt);
  return status == METRALE_OK ? 0 : 1;
}
