/* hello: opens hello.so through the tdsl.h runtime, writes the input x, runs the
 * exported routine `infer` and prints y = w * x.  Build: make (needs tdslc installed). */
#include <stdio.h>

#include "tdsl.h"

int main(void) {
  char err[256];
  tdsl_model *m = tdsl_open("./hello.so", err, sizeof err);
  if (!m) {
    fprintf(stderr, "hello: %s\n", err);
    return 1;
  }
  float x[3] = {7, 8, 9}, y[2];
  if (tdsl_init(m, 0) || tdsl_write(m, "x", x, 3) || tdsl_call(m, "infer") || tdsl_read(m, "y", y, 2)) {
    fprintf(stderr, "hello: %s\n", tdsl_error(m));
    tdsl_close(m);
    return 1;
  }
  printf("y = [%g, %g]\n", y[0], y[1]);
  tdsl_close(m);
  return 0;
}
