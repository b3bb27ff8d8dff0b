/* A dynamic dimension set to 0 through the runtime API (lit/dyn/zero.test): unset is
 * -1 and 0 a value, tensors of 0 elements with a valid pointer, 0-element reads and
 * writes, calls over the empty batch, the switch 0 -> 4 -> 0, a shape (0, 3) setting
 * n, checkpoints that keep n = 0 (and refuse it where n is set otherwise), a .npy of
 * shape (0, 3). usage: host MODEL.so */
#include <math.h>
#include <stdio.h>

#include "tdsl.h"

static void show(tdsl_model *m, const char *name) {
  tdsl_tensor_info ti;
  if (tdsl_tensor_by_name(m, name, &ti)) {
    printf("info %s: %s\n", name, tdsl_error(m));
    return;
  }
  printf("tensor %s size %ld dims", name, ti.size);
  for (int i = 0; i < ti.rank; i++) printf(" %d", ti.dims[i]);
  printf(" data %s\n", ti.data ? "set" : "NULL");
}

static void values(tdsl_model *m, const char *name, long n) {
  float v[16];
  int rc = tdsl_read(m, name, v, n);
  printf("%s", name);
  if (rc) printf(" read: %s", tdsl_error(m));
  for (long i = 0; !rc && i < n; i++) printf(" %g", v[i]);
  printf("\n");
}

static long dim(tdsl_model *m) {
  long v = -2;
  return tdsl_get_dim(m, "n", &v) ? -3 : v;
}

#define SHOW(mm, what, call)                                                           \
  do {                                                                                  \
    int rc_ = (call);                                                                   \
    printf("%s: %d%s%s\n", what, rc_, rc_ ? " " : "", rc_ ? tdsl_error(mm) : "");        \
  } while (0)

static tdsl_model *open_model(const char *so) {
  char err[256];
  tdsl_model *m = tdsl_open(so, err, sizeof err);
  if (!m) printf("open: %s\n", err);
  else tdsl_init(m, 3);
  return m;
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IONBF, 0);
  if (argc < 2) return 2;
  tdsl_model *m = open_model(argv[1]);
  if (!m) return 1;
  printf("unset: n = %ld\n", dim(m));
  show(m, "x");
  SHOW(m, "step unset", tdsl_call(m, "step"));
  SHOW(m, "set_dim -1", tdsl_set_dim(m, "n", -1));
  SHOW(m, "set_dim 0", tdsl_set_dim(m, "n", 0));
  printf("n = %ld\n", dim(m));
  show(m, "x");
  show(m, "h");
  show(m, "x.grad");
  float f[3] = {0};
  SHOW(m, "read0", tdsl_read(m, "x", f, 0));
  SHOW(m, "write0", tdsl_write(m, "x", NULL, 0));
  SHOW(m, "write3", tdsl_write(m, "x", f, 3));
  for (int round = 0; round < 2; round++) {
    SHOW(m, "step", tdsl_call(m, "step"));
    SHOW(m, "fwd", tdsl_call(m, "fwd"));
    values(m, "loss", 1);
    values(m, "b1.grad", 4);
    values(m, "mx", 4);
    float g[12];
    double s = 0;
    if (!tdsl_read(m, "w.grad", g, 12))
      for (int i = 0; i < 12; i++) s += fabs(g[i]);
    printf("sum |w.grad| %g\n", s);
    /* 4 rows and back: reallocated each way */
    float xs[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
    SHOW(m, "write_shaped 4x3", tdsl_write_shaped(m, "x", xs, 2, (long[]){4, 3}));
    SHOW(m, "step 4", tdsl_call(m, "step"));
    SHOW(m, "write_shaped 0x3", tdsl_write_shaped(m, "x", NULL, 2, (long[]){0, 3}));
    printf("n = %ld\n", dim(m));
  }
  SHOW(m, "save", tdsl_save(m, "ck.safetensors", TDSL_SAVE_ALL));
  tdsl_model *m2 = open_model(argv[1]);
  SHOW(m2, "load into unset", tdsl_load(m2, "ck.safetensors"));
  printf("loaded: n = %ld\n", dim(m2));
  show(m2, "h");
  SHOW(m2, "step loaded", tdsl_call(m2, "step"));
  tdsl_close(m2);
  tdsl_model *m3 = open_model(argv[1]);
  tdsl_set_dim(m3, "n", 5);
  SHOW(m3, "load into n = 5", tdsl_load(m3, "ck.safetensors"));
  printf("after: n = %ld\n", dim(m3));
  tdsl_close(m3);
  tdsl_model *m4 = open_model(argv[1]);
  SHOW(m4, "save unset", tdsl_save(m4, "unset.safetensors", TDSL_SAVE_ALL));
  tdsl_close(m4);
  m4 = open_model(argv[1]);
  SHOW(m4, "load unset", tdsl_load(m4, "unset.safetensors"));
  printf("still unset: n = %ld\n", dim(m4));
  SHOW(m4, "npy 0x3", tdsl_load_file(m4, "x", "e03.npy"));
  printf("npy: n = %ld\n", dim(m4));
  tdsl_close(m4);
  tdsl_close(m);
  return 0;
}
