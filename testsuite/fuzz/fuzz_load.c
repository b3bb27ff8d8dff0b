/* libFuzzer harness over the runtime's file readers: tdsl_load (safetensors
 * checkpoints, runtime/checkpoint.c) and tdsl_load_file (.npy arrays or raw float32,
 * runtime/npy.c). Both read files a user may have been handed: a damaged or hostile file
 * must be refused with a message, never crash, leak, or leave a tensor whose dims and
 * storage disagree.
 * Input: byte 0 picks the reader (even: tdsl_load; odd: tdsl_load_file into tensor
 * byte0 / 2 % 4, after setting the batch to 2 and initializing unless bit 3 is set),
 * the rest is the file. The model is fixed metadata (functions resolve to
 * a no-op): a dynamic batch ("x"; left unset for a checkpoint, whose shapes set it), static f32 tensors
 * and an f64 one. After each load every tensor is read back whole through the API, and
 * the model, whatever the load left in it (the batch may still be unset: tensors
 * without storage), is saved and loaded into a fresh model, which must then hold the
 * same bytes.
 * Seeds: testsuite/fuzz/load_corpus/ (ckpt-huge-batch: 12 bytes of data claiming a batch
 * of 2^30, which the runtime once allocated before checking the offsets). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tdsl.h"

static const char meta_text[] = "tdsl 3\n"
                                "model m 2048\n"
                                "dim 0 batch 1024\n"
                                "buf 0 x f32 0 1 1 0 -1 3 - -\n"
                                "at 0 640\n"
                                "role 0 param\n"
                                "buf 1 w1 f32 12 0 1 1 4 3 - -\n"
                                "at 1 704\n"
                                "role 1 param\n"
                                "buf 2 b1 f32 4 0 1 0 4 -\n"
                                "at 2 768\n"
                                "role 2 param\n"
                                "buf 3 d f64 6 0 1 1 2 3 - -\n"
                                "at 3 832\n"
                                "role 3 param\n";

static const char *const names[4] = {"x", "w1", "b1", "d"};

static const char *meta(void) { return meta_text; }

static void *resolve(void *h, const char *name) {
  (void)h;
  return strcmp(name, "tdsl_model_meta") ? NULL : (void *)meta;
}

/* Every tensor's cells, read through the API: its storage must hold its dims' product. */
static void read_all(tdsl_model *m) {
  for (int i = 0; i < tdsl_num_tensors(m); i++) {
    tdsl_tensor_info ti;
    if (tdsl_tensor(m, i, &ti)) continue;
    long n = 1;
    for (int k = 0; k < ti.rank; k++) n *= ti.dims[k];
    if (n != ti.size) abort();
    if (ti.size > (1 << 22)) continue;
    float *buf = malloc((size_t)(ti.size ? ti.size : 1) * sizeof(float));
    if (buf && tdsl_read(m, ti.name, buf, ti.size) != 0) abort();
    free(buf);
  }
}

static char path[64], saved[80];
static void remove_file(void) {
  unlink(path);
  unlink(saved);
}

/* tdsl_save then tdsl_load into a fresh model round-trips every tensor. */
static void round_trip(tdsl_model *m) {
  char err[256];
  if (tdsl_save(m, saved, TDSL_SAVE_ALL) != 0) abort();
  tdsl_model *r = tdsl_open_resolved(resolve, NULL, err, sizeof err);
  if (!r || tdsl_load(r, saved) != 0) abort();
  for (int i = 0; i < tdsl_num_tensors(m); i++) {
    tdsl_tensor_info a, b;
    if (tdsl_tensor(m, i, &a) || tdsl_tensor(r, i, &b) || a.size != b.size) abort();
    if (a.size && memcmp(a.data, b.data, (size_t)a.size * (a.elem == TDSL_F64 ? 8 : 4))) abort();
  }
  tdsl_close(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  if (!path[0]) {
    snprintf(path, sizeof path, "/tmp/fuzz_load.%d", (int)getpid());
    snprintf(saved, sizeof saved, "/tmp/fuzz_load.%d.saved", (int)getpid());
    atexit(remove_file);
  }
  FILE *f = fopen(path, "wb");
  if (!f) return 0;
  fwrite(data + 1, 1, size - 1, f);
  fclose(f);
  char err[256];
  tdsl_model *m = tdsl_open_resolved(resolve, NULL, err, sizeof err);
  if (!m) abort(); /* the fixed metadata must open */
  int rc;
  if (data[0] % 2) {
    if (!(data[0] & 8) && (tdsl_set_dim(m, "batch", 2) != 0 || tdsl_init(m, 1) != 0)) abort();
    rc = tdsl_load_file(m, names[data[0] / 2 % 4], path);
  } else
    rc = tdsl_load(m, path); /* batch unset: the checkpoint's shapes set it */
  if (rc != 0 && !tdsl_error(m)[0]) abort(); /* a refusal says why */
  if (getenv("FUZZ_LOAD_VERBOSE")) fprintf(stderr, "load: %s\n", rc ? tdsl_error(m) : "ok");
  read_all(m);
  round_trip(m);
  tdsl_close(m);
  return 0;
}
