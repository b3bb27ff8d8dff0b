/* A downstream program with two statically linked models (tdsl.mk's %.o rule) opened
 * through their --emit-header resolvers. */
#include <stdio.h>

#include "tdsl.h"
#include "act.h"
#include "hello.h"

int main(void) {
  char err[512];
  tdsl_model *a = tdsl_open_resolved(act_resolve, NULL, err, sizeof err);
  tdsl_model *h = tdsl_open_resolved(hello_resolve, NULL, err, sizeof err);
  if (!a || !h) { printf("open: %s\n", err); return 1; }
  float x[3] = {1, -2, 3}, y[2];
  if (tdsl_init(a, 0) || tdsl_init(h, 0) || tdsl_write(a, "x", x, 3) || tdsl_write(h, "x", x, 3)) return 1;
  if (tdsl_call(a, "infer") || tdsl_read(a, "y", y, 2)) { printf("act: %s\n", tdsl_error(a)); return 1; }
  printf("act y = %.5f %.5f\n", y[0], y[1]);
  if (tdsl_call(h, "infer") || tdsl_read(h, "y", y, 2)) { printf("hello: %s\n", tdsl_error(h)); return 1; }
  printf("hello y = %.5f %.5f\n", y[0], y[1]);
  tdsl_close(a);
  tdsl_close(h);
  return 0;
}
