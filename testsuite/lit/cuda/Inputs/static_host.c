/* A host program statically linked with a cuda model object (tdslc --backend=cuda -c)
 * and opened through the resolver of its --emit-header. */
#include <stdio.h>

#include "tdsl.h"
#include "emit.h"

int main(void) {
  char err[512];
  tdsl_model *m = tdsl_open_resolved(emit_resolve, NULL, err, sizeof err);
  if (!m) {
    printf("open failed: %s\n", err);
    return 1;
  }
  float c[6];
  if (tdsl_init(m, 0) || tdsl_call(m, "c.forward") || tdsl_read(m, "c", c, 6)) {
    printf("error: %s\n", tdsl_error(m));
    return 1;
  }
  for (int i = 0; i < 6; i++) printf("%g ", c[i]);
  printf("\n");
  tdsl_close(m);
  return 0;
}
