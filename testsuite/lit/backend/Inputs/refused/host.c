/* Refused changes change nothing, and saves keep what they replace:
 *   - a tdsl_write_shaped whose shape sets two dimensions, the second refused (out of
 *     range, too large for the machine, or not allocatable under --rlimit), sets
 *     neither: the first used to stay set (and its tensors reallocated);
 *   - tdsl_save over a file keeps the file's permissions (a private checkpoint stayed
 *     private only until the next save made it 0644), and saves a file whose name is
 *     near NAME_MAX (the temporary's suffix took it past the limit). */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tdsl.h"

#define SHOW(label, expr)                                                     \
  do {                                                                        \
    int rc_ = (expr);                                                         \
    printf("%s: %d %s\n", label, rc_, rc_ ? tdsl_error(m) : "");              \
  } while (0)

static void dims(tdsl_model *m) {
  long n = -7, k = -7;
  tdsl_get_dim(m, "n", &n);
  tdsl_get_dim(m, "k", &k);
  tdsl_tensor_info ti;
  tdsl_tensor_by_name(m, "x", &ti);
  float x0 = ti.size ? ((float *)ti.data)[0] : -1;
  printf("  n = %ld, k = %ld, x size %ld, x[0] %g\n", n, k, ti.size, x0);
}

static void refused_shapes(tdsl_model *m) {
  float one[1] = {0};
  SHOW("(5, INT_MAX)", tdsl_write_shaped(m, "x", one, 2, (long[2]){5, INT_MAX}));
  dims(m);
  SHOW("(5, -3)", tdsl_write_shaped(m, "x", one, 2, (long[2]){5, -3}));
  dims(m);
  float xs[6] = {7, 1, 2, 3, 4, 5};
  SHOW("(2, 3)", tdsl_write_shaped(m, "x", xs, 2, (long[2]){2, 3}));
  dims(m);
  SHOW("(9, 1 << 40)", tdsl_write_shaped(m, "x", one, 2, (long[2]){9, 1L << 40}));
  dims(m);
  SHOW("(9, INT_MAX)", tdsl_write_shaped(m, "x", one, 2, (long[2]){9, INT_MAX}));
  dims(m);
  SHOW("call", tdsl_call(m, "step"));
}

static void saves(tdsl_model *m) {
  umask(022);
  SHOW("save", tdsl_save(m, "private.st", TDSL_SAVE_ALL));
  chmod("private.st", 0600);
  SHOW("save again", tdsl_save(m, "private.st", TDSL_SAVE_ALL));
  struct stat st;
  stat("private.st", &st);
  printf("  mode %o\n", (unsigned)(st.st_mode & 0777));
  char name[NAME_MAX + 1];
  memset(name, 'c', NAME_MAX - 5);
  strcpy(name + NAME_MAX - 5, ".st");
  SHOW("save long name", tdsl_save(m, name, TDSL_SAVE_ALL));
  SHOW("load long name", tdsl_load(m, name));
}

/* Under an address-space limit the allocation itself fails although the sizes fit the
 * machine: both dimensions go back to their values. */
static void rlimited(tdsl_model *m) {
  float xs[6] = {7, 1, 2, 3, 4, 5};
  SHOW("(2, 3)", tdsl_write_shaped(m, "x", xs, 2, (long[2]){2, 3}));
  struct rlimit rl = {512L << 20, 512L << 20};
  setrlimit(RLIMIT_AS, &rl);
  SHOW("(20000, 10000) under 512 MiB", tdsl_write_shaped(m, "x", xs, 2, (long[2]){20000, 10000}));
  dims(m);
  SHOW("call", tdsl_call(m, "step"));
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IONBF, 0);
  char err[256];
  tdsl_model *m = tdsl_open("./m.so", err, sizeof err);
  if (!m) return puts(err), 1;
  tdsl_init(m, 1);
  if (argc > 1 && !strcmp(argv[1], "--rlimit")) rlimited(m);
  else {
    refused_shapes(m);
    saves(m);
  }
  tdsl_close(m);
  return 0;
}
