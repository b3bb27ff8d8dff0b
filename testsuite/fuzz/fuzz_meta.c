/* libFuzzer harness over the runtime's metadata parser (runtime/tdslrt.c): the input is
 * a model's tdsl_model_meta text after its version line. Functions resolve to a no-op;
 * the model is opened, queried, initialized, its routines called, and closed.
 * Any crash, sanitizer report or leak is a bug: malformed metadata must be refused
 * with a message. Seeds: testsuite/fuzz/meta_corpus/. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tdsl.h"

static char *text;
static const char *meta(void) { return text; }
static void fn(void *inst) { (void)inst; }

static void *resolve(void *h, const char *name) {
  (void)h;
  if (!strcmp(name, "tdsl_model_meta")) return (void *)meta;
  if (strstr(name, "_fn_") || strstr(name, "_call")) return (void *)fn;
  return NULL;
}

/* Whether a model line asks for an instance above 16 MB. The size is the model's to
 * choose (a real one may need gigabytes, and the runtime allocates what it says, or
 * fails with "out of memory"); the fuzzer's allocations stay small, as its memory limit
 * (and ASan's, for absurd sizes) would report them as crashes. */
static int huge_instance(const char *t) {
  for (const char *p = t; p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
    /* the keyword, the name and the size, as the runtime splits them: at runs of
     * spaces, leading ones included */
    p += strspn(p, " ");
    if (strncmp(p, "model ", 6)) continue;
    const char *q = p + 6;
    q += strspn(q, " ");
    q += strcspn(q, " \n");
    if (*q == ' ' && strtod(q + strspn(q, " "), NULL) > (double)(1 << 24)) return 1;
  }
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  text = malloc(size + 8);
  if (!text) return 0;
  memcpy(text, "tdsl 3\n", 7);
  memcpy(text + 7, data, size);
  text[size + 7] = 0;
  if (huge_instance(text)) {
    free(text);
    return 0;
  }
  char err[256];
  tdsl_model *m = tdsl_open_resolved(resolve, NULL, err, sizeof err);
  if (m) {
    tdsl_tensor_info ti;
    for (int i = 0; i < tdsl_num_tensors(m); i++)
      if (tdsl_tensor(m, i, &ti) == 0 && ti.rank > 0) (void)ti.dims[ti.rank - 1];
    for (int i = 0; i < tdsl_num_routines(m); i++) (void)tdsl_find_routine(m, tdsl_routine_name(m, i));
    for (int i = 0; i < tdsl_num_indices(m); i++) (void)tdsl_set_index(m, tdsl_index_name(m, i), 1);
    (void)tdsl_find_tensor(m, "x.grad");
    if (tdsl_init(m, 1) == 0) /* the storage is the instance the runtime allocated */
      for (int i = 0; i < tdsl_num_routines(m); i++) (void)tdsl_call(m, tdsl_routine_name(m, i));
    tdsl_close(m);
  }
  free(text);
  return 0;
}
