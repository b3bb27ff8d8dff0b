/* libFuzzer harness over the runtime's metadata parser (runtime/tdslrt.c): the input is
 * a model's tdsl_model_meta text. Symbols resolve to small static storage; the model
 * is opened, queried and closed (init is not run: the storage is not the model's).
 * Any crash, sanitizer report or leak is a bug: malformed metadata must be refused
 * with a message. Seeds: testsuite/fuzz/meta_corpus/. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tdsl.h"

static float storage[64][64];
static int syms[64];
static char *text;
static const char *meta(void) { return text; }
static void fn(void) {}

static void *resolve(void *h, const char *name) {
  (void)h;
  int i;
  if (!strcmp(name, "tdsl_model_meta")) return (void *)meta;
  if (sscanf(name, "tdsl_buf_%d", &i) == 1) return i >= 0 && i < 64 ? storage[i] : NULL;
  if (sscanf(name, "tdsl_sym_%d", &i) == 1) return i >= 0 && i < 64 ? &syms[i] : NULL;
  if (!strncmp(name, "tdsl_fn_", 8)) return (void *)fn;
  return NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  text = malloc(size + 8);
  if (!text) return 0;
  memcpy(text, "tdsl 1\n", 7);
  memcpy(text + 7, data, size);
  text[size + 7] = 0;
  char err[256];
  tdsl_model *m = tdsl_open_resolved(resolve, NULL, err, sizeof err);
  if (m) {
    tdsl_tensor_info ti;
    for (int i = 0; i < tdsl_num_tensors(m); i++)
      if (tdsl_tensor(m, i, &ti) == 0 && ti.rank > 0) (void)ti.dims[ti.rank - 1];
    for (int i = 0; i < tdsl_num_routines(m); i++) (void)tdsl_find_routine(m, tdsl_routine_name(m, i));
    for (int i = 0; i < tdsl_num_indices(m); i++) (void)tdsl_set_index(m, tdsl_index_name(m, i), 1);
    (void)tdsl_find_tensor(m, "x.grad");
    tdsl_close(m);
  }
  free(text);
  return 0;
}
