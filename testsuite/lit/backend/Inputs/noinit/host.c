/* A model is initialized when it opens, as by tdsl_init(m, 0): a host that sets the
 * parameters itself (or loads a checkpoint of them) and never calls tdsl_init gets the
 * model's constants and initial values, as a dynamic tensor got them when allocated.
 * Before, the constants of y (a range and 3.0) and b were 0 until tdsl_init. */
#include <stdio.h>

#include "tdsl.h"

static void show(tdsl_model *m, const char *name, int n) {
  float v[4] = {0};
  int rc = tdsl_read(m, name, v, n);
  printf("%s: %d", name, rc);
  for (int i = 0; i < n; i++) printf(" %g", v[i]);
  printf("\n");
}

/* A model whose tensor comes from a data file that is gone. */
static int missing_file(void) {
  char err[256];
  tdsl_model *m = tdsl_open("./f.so", err, sizeof err);
  printf("open: %s\n", m ? "model" : err);
  if (!m) return 1;
  printf("init: %d %s\n", tdsl_init(m, 0), tdsl_error(m));
  tdsl_close(m);
  return 0;
}

int main(int argc, char **argv) {
  (void)argv;
  if (argc > 1) return missing_file();
  char err[256];
  tdsl_model *m = tdsl_open("./m.so", err, sizeof err);
  if (!m) return puts(err), 1;
  show(m, "b", 2);
  float w[4] = {1, 0, 0, 1}, x[2] = {1, 2};
  tdsl_write(m, "w", w, 4);
  tdsl_write(m, "x", x, 2);
  tdsl_set_dim(m, "n", 2);
  printf("call: %d\n", tdsl_call(m, "y.forward"));
  show(m, "y", 2);
  printf("call: %d\n", tdsl_call(m, "z.forward"));
  show(m, "z", 4);
  tdsl_close(m);
  return 0;
}
