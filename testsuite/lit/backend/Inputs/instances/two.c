/* Two statically linked models in one program (hello.o and second.o, the latter built
 * with --name=second): their symbols carry their own prefixes, so both link, open
 * through their headers' resolvers and compute independently. */
#include <stdio.h>

#include "tdsl.h"
#include "hello.h"
#include "second.h"

int main(void) {
  char err[512];
  tdsl_model *h = tdsl_open_resolved(hello_resolve, NULL, err, sizeof err);
  if (!h) { printf("open hello: %s\n", err); return 1; }
  tdsl_model *s = tdsl_open_resolved(second_resolve, NULL, err, sizeof err);
  if (!s) { printf("open second: %s\n", err); return 1; }
  float x[3] = {1, 1, 1}, y[2];
  if (tdsl_init(h, 0) || tdsl_init(s, 0) || tdsl_write(h, "x", x, 3)) return 1;
  /* Typed access to the second model's storage through its header. */
  float *sx = second_x(tdsl_instance(s));
  sx[0] = 7, sx[1] = 8, sx[2] = 9;
  second_infer(tdsl_instance(s));
  if (tdsl_call(h, "infer") || tdsl_read(h, "y", y, 2)) { printf("hello: %s\n", tdsl_error(h)); return 1; }
  printf("hello y = %g %g\n", y[0], y[1]);
  float *sy = second_y(tdsl_instance(s));
  printf("second y = %g %g\n", sy[0], sy[1]);
  second_sym_n(tdsl_instance(s)) = 1;
  long n = -1;
  tdsl_get_index(s, "n", &n);
  printf("second n = %ld\n", n);
  tdsl_close(h);
  tdsl_close(s);
  return 0;
}
