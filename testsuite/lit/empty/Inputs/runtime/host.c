/* Empty tensors through the runtime API: info, 0-element reads and writes (NULL data
 * included), a call, a safetensors round trip, a .npy of shape (2,0), and the
 * --emit-header accessors. */
#include <stdio.h>
#include <string.h>

#include "tdsl.h"
#ifdef STATIC
#include "model.h"
#endif

static void show(tdsl_model *m, const char *name) {
  tdsl_tensor_info ti;
  if (tdsl_tensor_by_name(m, name, &ti)) {
    printf("info %s: %s\n", name, tdsl_error(m));
    return;
  }
  printf("tensor %s rank %d size %ld dims", name, ti.rank, ti.size);
  for (int i = 0; i < ti.rank; i++) printf(" %d", ti.dims[i]);
  printf(" data %s\n", ti.data ? "set" : "NULL");
}

int main(void) {
  char err[256];
#ifdef STATIC
  tdsl_model *m = tdsl_open_resolved(model_resolve, NULL, err, sizeof err);
#else
  tdsl_model *m = tdsl_open("./model.so", err, sizeof err);
#endif
  if (!m) {
    printf("open: %s\n", err);
    return 1;
  }
  printf("init %d\n", tdsl_init(m, 0));
  show(m, "x");
  show(m, "x.grad");
  show(m, "h");
  float f[4] = {9, 9, 9, 9};
  double d[2];
  printf("read0 %d\n", tdsl_read(m, "x", f, 0));
  printf("read0 NULL %d\n", tdsl_read(m, "x", NULL, 0));
  printf("write0 %d\n", tdsl_write(m, "h", f, 0));
  printf("write0 NULL %d\n", tdsl_write(m, "h", NULL, 0));
  printf("read0 f64 %d\n", tdsl_read_f64(m, "x.grad", d, 0));
  printf("write1 %d %s\n", tdsl_write(m, "x", f, 1), tdsl_error(m));
  printf("call step %d\n", tdsl_call(m, "step"));
  int r = tdsl_read(m, "loss", f, 1);
  printf("loss %d %g\n", r, f[0]);
  r = tdsl_read(m, "q.grad", f, 2);
  printf("q.grad %d %g %g\n", r, f[0], f[1]);
  printf("call hs %d\n", tdsl_call(m, "hs.forward"));
  r = tdsl_read(m, "hs", f, 3);
  printf("hs %d %g %g %g\n", r, f[0], f[1], f[2]);
  printf("save %d\n", tdsl_save(m, "ck.safetensors", ~0u));
  printf("load %d\n", tdsl_load(m, "ck.safetensors"));
  printf("npy %d\n", tdsl_load_file(m, "x", "e20.npy"));
  r = tdsl_load_file(m, "x", "e30.npy");
  printf("npy 3x0 %d %s\n", r, tdsl_error(m));
#ifdef STATIC
  tdsl_tensor_info ti;
  tdsl_tensor_by_name(m, "x", &ti);
  printf("header x %s\n", (void *)model_x(tdsl_instance(m)) == ti.data ? "is the tensor's data" : "differs");
#endif
  tdsl_close(m);
  return 0;
}
