/* Random sequences of runtime calls on one model (two dynamic dimensions, an index over
 * one of them, gradients): dimensions set, refused and reset between writes, calls,
 * saves, loads, holds and releases, in any order, valid or not. Built with ASan+UBSan
 * (leaks checked); besides never crashing, it checks what must hold after every step:
 * a tensor's size is its dims' product, a write reads back, a refused shape changes no
 * dimension, a held block stays writable, and every release of a hold succeeds.
 *   host SEED   prints "seed SEED: N calls, N saves, N loads ran" or a FAIL line */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tdsl.h"

enum { STEPS = 3000, MAXHELD = 64, BUF = 100000 };

static unsigned long long state;
static unsigned pick(unsigned n) {
  state ^= state << 13, state ^= state >> 7, state ^= state << 17;
  return (unsigned)(state % n);
}

static const char *const tensors[] = {"x", "w", "w.grad", "h", "loss", "b1", "t#2", "h.grad", "nosuch", "", "loss.grad"};
static const char *const routines[] = {"step", "h.forward", "loss.backprop", "init", "w.forward", "row.forward", "nosuch"};
static const long sizes[] = {0, 1, 2, 3, 5, -1, 7, 100, 2147483647};
#define NELEM(a) ((unsigned)(sizeof a / sizeof *a))

static float buf[BUF];

#define FAIL(...) return printf("FAIL: " __VA_ARGS__), printf("\n"), 1

/* Writes 0, 1, 2, ... into the tensor and reads them back. */
static int write_read(tdsl_model *m, const char *name) {
  tdsl_tensor_info ti;
  if (tdsl_tensor_by_name(m, name, &ti)) return 0;
  long cells = 1;
  for (int k = 0; k < ti.rank; k++) cells *= ti.dims[k];
  if (ti.data && cells != ti.size) FAIL("%s has %ld elements, its dims %ld", name, ti.size, cells);
  if (ti.size > BUF) return 0;
  for (long i = 0; i < ti.size; i++) buf[i] = (float)i;
  if (tdsl_write(m, name, buf, ti.size)) FAIL("write %s: %s", name, tdsl_error(m));
  memset(buf, 0, sizeof(float) * (size_t)ti.size);
  if (tdsl_read(m, name, buf, ti.size)) FAIL("read %s: %s", name, tdsl_error(m));
  for (long i = 0; i < ti.size; i++)
    if (buf[i] != (float)i) FAIL("%s[%ld] reads %g", name, i, buf[i]);
  return 0;
}

static int shaped(tdsl_model *m, const char *name, int *ran) {
  long dims[3] = {sizes[pick(NELEM(sizes))], sizes[pick(NELEM(sizes))], sizes[pick(NELEM(sizes))]};
  long n0, k0, n1, k1;
  tdsl_get_dim(m, "n", &n0);
  tdsl_get_dim(m, "k", &k0);
  int rc = tdsl_write_shaped(m, name, buf, (int)pick(4), dims);
  tdsl_get_dim(m, "n", &n1);
  tdsl_get_dim(m, "k", &k1);
  if (rc && (n0 != n1 || k0 != k1)) FAIL("refused shape for %s set n, k %ld, %ld -> %ld, %ld", name, n0, k0, n1, k1);
  *ran += !rc;
  return 0;
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IONBF, 0);
  unsigned long long seed = argc > 1 ? strtoull(argv[1], NULL, 10) : 1;
  state = 88172645463325252ull + seed;
  char err[256];
  tdsl_model *m = tdsl_open("./m.so", err, sizeof err);
  if (!m) FAIL("%s", err);
  void *held[MAXHELD];
  int nheld = 0, ran[4] = {0};
  tdsl_tensor_info ti;
  for (int step = 0; step < STEPS; step++) {
    const char *name = tensors[pick(NELEM(tensors))];
    long v;
    int bad = 0;
    switch (pick(14)) {
    case 0: tdsl_set_dim(m, pick(2) ? "n" : "k", sizes[pick(NELEM(sizes))]); break;
    case 1: bad = write_read(m, name); break;
    case 2: ran[0] += !tdsl_call(m, routines[pick(NELEM(routines))]); break;
    case 3: bad = shaped(m, name, &ran[3]); break;
    case 4: ran[1] += !tdsl_save(m, "seq.st", pick(2) ? TDSL_SAVE_ALL : TDSL_SAVE_TRAINING); break;
    case 5: ran[2] += !tdsl_load(m, "seq.st"); break;
    case 6:
      if (!tdsl_tensor_by_name(m, name, &ti) && ti.data && nheld < MAXHELD && !tdsl_hold(m, ti.data)) held[nheld++] = ti.data;
      break;
    case 7:
      if (nheld) {
        int i = (int)pick((unsigned)nheld);
        if (tdsl_release(m, held[i])) FAIL("release: %s", tdsl_error(m));
        held[i] = held[--nheld];
      }
      break;
    case 8: tdsl_init(m, pick(5)); break;
    case 9: tdsl_set_index(m, "i", sizes[pick(NELEM(sizes))]); break;
    case 10: tdsl_set_num_threads(m, 1 + (int)pick(3)); break;
    case 11: tdsl_load_file(m, name, pick(2) ? "seq.st" : "m.tdsl"); break;
    case 12:
      if (nheld) ((float *)held[pick((unsigned)nheld)])[0] += 1; /* a held block is still ours */
      break;
    default: tdsl_get_dim(m, "n", &v), tdsl_get_index(m, "i", &v);
    }
    if (bad) return 1;
  }
  tdsl_close(m); /* frees what is still held */
  printf("seed %llu: %d calls, %d saves, %d loads, %d shaped writes ran\n", seed, ran[0], ran[1], ran[2], ran[3]);
  return 0;
}
