/* A cuda model whose first kernel launch faults (the emulation's TDSL_CUDA_EMULATE_FAULT):
 * the failing call and every later call, read, write and init return -1 with the
 * message, instead of stale host data. */
#include <stdio.h>

#include "tdsl.h"

int main(int argc, char **argv) {
  char err[256];
  tdsl_model *m = tdsl_open(argv[1], err, sizeof err);
  if (!m) {
    printf("open: %s\n", err);
    return 1;
  }
  float c[6] = {0};
  printf("init: %d\n", tdsl_init(m, 0));
  printf("call: %d %s\n", tdsl_call(m, "c.forward"), tdsl_error(m));
  printf("read: %d %s\n", tdsl_read(m, "c", c, 6), tdsl_error(m));
  printf("call again: %d %s\n", tdsl_call(m, "c.forward"), tdsl_error(m));
  printf("write: %d\n", tdsl_write(m, "a", c, 6));
  printf("init again: %d\n", tdsl_init(m, 0));
  tdsl_tensor_info ti;
  printf("tensor: %d\n", tdsl_tensor_by_name(m, "c", &ti));
  tdsl_close(m);
  return 0;
}
