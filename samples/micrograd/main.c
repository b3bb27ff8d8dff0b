/* micrograd: runs the backprop of micrograd.tdsl once and prints g, a.grad, b.grad. */
#include <stdio.h>

#include "tdsl.h"

int main(int argc, char **argv) {
  char err[512];
  tdsl_model *m = tdsl_open(argc > 1 ? argv[1] : "./micrograd.so", err, sizeof err);
  if (!m) {
    fprintf(stderr, "micrograd: %s\n", err);
    return 1;
  }
  float g, ga, gb;
  if (tdsl_init(m, 0) || tdsl_call(m, "step") || tdsl_read(m, "g", &g, 1) ||
      tdsl_read(m, "a.grad", &ga, 1) || tdsl_read(m, "b.grad", &gb, 1)) {
    fprintf(stderr, "micrograd: %s\n", tdsl_error(m));
    tdsl_close(m);
    return 1;
  }
  printf("g = %.4f\na.grad = %.4f\nb.grad = %.4f\n", g, ga, gb);
  tdsl_close(m);
  return 0;
}
