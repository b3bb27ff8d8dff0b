/* A host program driving model.so (or, with -DSTATIC, the linked-in model.o through
 * the --emit-header resolver) through tdsl.h only. Prints results for FileCheck. */
#include <stdio.h>
#include <string.h>

#include "tdsl.h"
#ifdef STATIC
#include "model.h"
#endif

#define OK(x)                                                 \
  do {                                                        \
    if ((x) != 0) {                                           \
      printf("FAILED %s: %s\n", #x, tdsl_error(m));           \
      return 1;                                               \
    }                                                         \
  } while (0)

int main(void) {
  char err[512];
  tdsl_model *bad = tdsl_open("./no-such-model.so", err, sizeof err);
  printf("open missing: %s %s\n", bad ? "opened?!" : "NULL", strstr(err, "no-such-model.so") ? "named" : err);
#ifdef STATIC
  tdsl_model *m = tdsl_open_resolved(model_resolve, NULL, err, sizeof err);
#else
  tdsl_model *m = tdsl_open("model.so", err, sizeof err);
#endif
  if (!m) {
    printf("open: %s\n", err);
    return 1;
  }
  for (int i = 0; i < tdsl_num_tensors(m); i++) {
    tdsl_tensor_info ti;
    OK(tdsl_tensor(m, i, &ti));
    if (ti.name[0] == 't' && ti.name[1] == '#') continue;
    printf("tensor %s rank %d batch %d output %d input %d size %ld %s\n", ti.name, ti.rank, ti.nkind[TDSL_BATCH],
           ti.nkind[TDSL_OUTPUT], ti.nkind[TDSL_INPUT], ti.size, ti.elem == TDSL_F32 ? "f32" : "f64");
  }
  for (int i = 0; i < tdsl_num_routines(m); i++) printf("routine %s\n", tdsl_routine_name(m, i));
  OK(tdsl_init(m, 7));
  float x[3] = {7, 8, 9}, y[2];
  OK(tdsl_write(m, "x", x, 3));
  OK(tdsl_call(m, "infer"));
  OK(tdsl_read(m, "y", y, 2));
  printf("y = %g %g\n", y[0], y[1]);
  OK(tdsl_set_index(m, "n", 1));
  OK(tdsl_call(m, "pick"));
  float row[3];
  OK(tdsl_read(m, "row", row, 3));
  printf("row = %g %g %g\n", row[0], row[1], row[2]);
  /* uniform init: in [0,1), reproducible for a seed, different for another seed */
  static float u1[1000], u2[1000], u3[1000];
  OK(tdsl_read(m, "u", u1, 1000));
  OK(tdsl_init(m, 7));
  OK(tdsl_read(m, "u", u2, 1000));
  OK(tdsl_init(m, 8));
  OK(tdsl_read(m, "u", u3, 1000));
  double mean = 0;
  int in01 = 1;
  for (int i = 0; i < 1000; i++) {
    mean += u1[i] / 1000.0;
    in01 &= u1[i] >= 0 && u1[i] < 1;
  }
  printf("uniform: in [0,1) %d, same seed same %d, other seed differs %d, mean ok %d\n", in01,
         !memcmp(u1, u2, sizeof u1), !!memcmp(u1, u3, sizeof u1), mean > 0.45 && mean < 0.55);
  /* errors are codes + messages */
  printf("call: %d %s\n", tdsl_call(m, "nosuch"), tdsl_error(m));
  printf("write: %d %s\n", tdsl_write(m, "x", x, 2), tdsl_error(m));
  printf("set: %d %s\n", tdsl_set_index(m, "n", 5), tdsl_error(m));
  printf("find: %d\n", tdsl_find_tensor(m, "nosuch"));
  tdsl_close(m);
  return 0;
}
