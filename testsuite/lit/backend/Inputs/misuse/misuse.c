/* A host program misusing the runtime: NULL and garbage arguments to every function,
 * directories for files. Each call must return an error with a message (never crash);
 * built with ASan+UBSan, so an out-of-bounds access would fail the test. */
#include <stdio.h>
#include <string.h>

#include "tdsl.h"

#define SHOW(what, rc, m) printf("%s: %d %s\n", what, (int)(rc), tdsl_error(m))

int main(int argc, char **argv) {
  (void)argc;
  char err[256] = "";
  printf("open NULL: %s %s\n", tdsl_open(NULL, err, sizeof err) ? "model" : "NULL", err);
  printf("open empty: %s %s\n", tdsl_open("", err, sizeof err) ? "model" : "NULL", err);
  printf("open dir: %s %s\n", tdsl_open(argv[1], err, sizeof err) ? "model" : "NULL", err);
  /* a FIFO: opening it to read blocked until a writer came (forever) */
  printf("open fifo: %s %s\n", tdsl_open(argv[2], err, sizeof err) ? "model" : "NULL", err);
  printf("open no err buffer: %s\n", tdsl_open("nosuch.so", NULL, 0) ? "model" : "NULL");
  printf("open_resolved NULL: %s %s\n", tdsl_open_resolved(NULL, NULL, err, sizeof err) ? "model" : "NULL", err);
  printf("NULL model: %d %d %d %s %s %s\n", tdsl_num_tensors(NULL), tdsl_num_routines(NULL), tdsl_num_indices(NULL),
         tdsl_routine_name(NULL, 0) ? "name" : "NULL", tdsl_index_name(NULL, 0) ? "name" : "NULL", tdsl_error(NULL));
  float f[6];
  double d[6];
  long v;
  tdsl_tensor_info ti;
  SHOW("init NULL", tdsl_init(NULL, 0), NULL);
  SHOW("read NULL model", tdsl_read(NULL, "x", f, 6), NULL);
  SHOW("call NULL model", tdsl_call(NULL, "y.forward"), NULL);
  SHOW("tensor NULL model", tdsl_tensor(NULL, 0, &ti), NULL);
  printf("find NULL model: %d %d\n", tdsl_find_tensor(NULL, "x"), tdsl_find_routine(NULL, "y.forward"));
  tdsl_close(NULL);
  SHOW("save NULL model", tdsl_save(NULL, "x.st", TDSL_SAVE_ALL), NULL);
  SHOW("load checkpoint NULL model", tdsl_load(NULL, "x.st"), NULL);
  printf("threads NULL model: %d %d\n", tdsl_set_num_threads(NULL, 2), tdsl_get_num_threads(NULL));
  printf("instance NULL model: %s\n", tdsl_instance(NULL) ? "pointer" : "NULL");
  printf("role names: %s %s\n", tdsl_role_name(TDSL_ROLE_OPTIMIZER), tdsl_role_name((tdsl_role)99));
  /* a pointer to something that is not a model */
  static char garbage[4096];
  memset(garbage, 0x41, sizeof garbage);
  tdsl_model *g = (tdsl_model *)garbage;
  SHOW("garbage model call", tdsl_call(g, "y.forward"), g);
  printf("garbage model: %d %d %s\n", tdsl_num_tensors(g), tdsl_get_num_threads(g), tdsl_instance(g) ? "pointer" : "NULL");
  tdsl_close(g);

  tdsl_model *m = tdsl_open("./m.so", err, sizeof err);
  if (!m) {
    printf("cannot open m.so: %s\n", err);
    return 1;
  }
  SHOW("init", tdsl_init(m, 0), m);
  SHOW("read NULL name", tdsl_read(m, NULL, f, 6), m);
  SHOW("read NULL dst", tdsl_read(m, "x", NULL, 6), m);
  SHOW("read negative n", tdsl_read(m, "x", f, -1), m);
  SHOW("read huge n", tdsl_read(m, "x", f, 1L << 40), m);
  SHOW("write NULL src", tdsl_write(m, "x", NULL, 6), m);
  SHOW("read_f64 NULL dst", tdsl_read_f64(m, "x", NULL, 6), m);
  SHOW("write_f64 NULL name", tdsl_write_f64(m, NULL, d, 6), m);
  SHOW("tensor NULL out", tdsl_tensor(m, 0, NULL), m);
  SHOW("tensor -1", tdsl_tensor(m, -1, &ti), m);
  SHOW("tensor huge", tdsl_tensor(m, 1 << 30, &ti), m);
  SHOW("tensor_by_name NULL", tdsl_tensor_by_name(m, NULL, &ti), m);
  printf("find NULL name: %d %d\n", tdsl_find_tensor(m, NULL), tdsl_find_routine(m, NULL));
  printf("names out of range: %s %s\n", tdsl_routine_name(m, -1) ? "name" : "NULL", tdsl_index_name(m, 99) ? "name" : "NULL");
  SHOW("call NULL", tdsl_call(m, NULL), m);
  SHOW("set NULL", tdsl_set_index(m, NULL, 0), m);
  SHOW("set out of range", tdsl_set_index(m, "n", 3), m);
  SHOW("set negative", tdsl_set_index(m, "n", -1), m);
  SHOW("get NULL value", tdsl_get_index(m, "n", NULL), m);
  SHOW("get", tdsl_get_index(m, "n", &v), m);
  SHOW("load dir", tdsl_load_file(m, "x", argv[1]), m);
  SHOW("load NULL path", tdsl_load_file(m, "x", NULL), m);
  SHOW("load NULL name", tdsl_load_file(m, NULL, "m.tdsl"), m);
  SHOW("load missing", tdsl_load_file(m, "x", "nosuch.bin"), m);
  SHOW("save NULL path", tdsl_save(m, NULL, TDSL_SAVE_ALL), m);
  SHOW("load checkpoint NULL path", tdsl_load(m, NULL), m);
  SHOW("load checkpoint dir", tdsl_load(m, argv[1]), m);
  SHOW("set", tdsl_set_index(m, "n", 2), m);
  SHOW("call", tdsl_call(m, "y.forward"), m);
  SHOW("read", tdsl_read(m, "y", f, 2), m);
  printf("y = %g %g\n", f[0], f[1]);
  tdsl_close(m);
  return 0;
}
