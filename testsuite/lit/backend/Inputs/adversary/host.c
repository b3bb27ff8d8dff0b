/* The C API under hostile use beyond misuse.test and runtime-hostile.test (each line a
 * case of runtime-adversary.test): built with ASan+UBSan, leaks checked. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "tdsl.h"

static void show(tdsl_model *m, const char *label, long rc) { printf("%s: %ld %s\n", label, rc, rc ? tdsl_error(m) : ""); }

static void try_open(const char *path) {
  char err[512] = "";
  tdsl_model *m = tdsl_open(path, err, sizeof err);
  printf("open %s: %s %s\n", path, m ? "OPEN" : "NULL", err);
  tdsl_close(m);
}

static void dims(tdsl_model *m, const char *label) {
  long b = -1;
  tdsl_tensor_info ti;
  tdsl_get_dim(m, "b", &b);
  tdsl_tensor_by_name(m, "x", &ti);
  printf("%s: b = %ld, x: size %ld dims %d %d data %s\n", label, b, ti.size, ti.dims[0], ti.dims[1], ti.data ? "set" : "NULL");
}

/* An allocation that fails although the machine has the memory (an address-space limit
 * here; another process's use in general): set_dim goes back to the old size, so no
 * tensor is left without storage or at the refused size. Plain build only: ASan needs
 * more address space than the limit allows. */
static int rlimit_case(void) {
  char err[512];
  tdsl_model *m = tdsl_open("./m.so", err, sizeof err);
  if (!m) {
    puts(err);
    return 1;
  }
  show(m, "set_dim 4", tdsl_set_dim(m, "b", 4));
  struct rlimit rl = {512L << 20, 512L << 20};
  int lim = setrlimit(RLIMIT_AS, &rl);
  show(m, "set_dim 1e8 under a 512 MiB limit", lim ? lim : tdsl_set_dim(m, "b", 100000000));
  dims(m, "after failed");
  show(m, "call", tdsl_call(m, "y.forward"));
  tdsl_close(m);
  return 0;
}

int main(int argc, char **argv) {
  char err[512];
  if (argc == 2 && !strcmp(argv[1], "--rlimit")) return rlimit_case();
  /* loading: files that are not models, or only look like one */
  for (int i = 1; i < argc; i++) try_open(argv[i]);
  tdsl_model *m = tdsl_open("./m.so", err, sizeof err);
  if (!m) {
    puts(err);
    return 1;
  }
  /* a checkpoint of a model whose dynamic dimension is unset: its tensors have no storage */
  show(m, "save unset", tdsl_save(m, "unset.st", TDSL_SAVE_ALL));
  show(m, "load unset", tdsl_load(m, "unset.st"));
  /* sizes no machine has: refused before anything is allocated, nothing changes */
  show(m, "set_dim INT_MAX", tdsl_set_dim(m, "b", INT_MAX));
  dims(m, "after refused");
  show(m, "write_shaped INT_MAX", tdsl_write_shaped(m, "x", (float[2]){0}, 2, (long[2]){INT_MAX, 2}));
  show(m, "set_dim 4", tdsl_set_dim(m, "b", 4));
  show(m, "set_dim 1 << 30", tdsl_set_dim(m, "b", 1L << 30));
  dims(m, "after refused");
  /* names with bytes a terminal would obey come back as '?' */
  show(m, "read escape", tdsl_read(m, "w\x1b[31m\n", (float[1]){0}, 1));
  show(m, "read utf-8", tdsl_read(m, "w\xc3\xa9", (float[1]){0}, 1));
  /* checkpoint entry names with a NUL: they named another tensor */
  const char *files[] = {"nul_escape", "nul_raw", "backslash", "nul_padding", "escape"};
  for (int i = 0; i < 5; i++) {
    char path[64];
    snprintf(path, sizeof path, "%s.safetensors", files[i]);
    show(m, files[i], tdsl_load(m, path));
  }
  tdsl_close(m);
  return 0;
}
