/* npy.c: reading NumPy .npy arrays into tensors (tdsl_load_file, --load). The header is
 * a Python dict literal such as {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
 * (numpy.lib.format); only little-endian float32/float64 in C order are accepted. */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tdslrt_int.h"

enum { NPY_MAX_RANK = 32, NPY_MAX_HEADER = 1 << 20 };

typedef struct NpyHeader {
  char descr[16];
  bool fortran;
  int rank;
  long long dims[NPY_MAX_RANK];
} NpyHeader;

bool tdsl_rt_is_npy(const char *path) {
  unsigned char magic[6];
  FILE *f = fopen(path, "rb");
  if (!f) return false;
  bool yes = fread(magic, 1, 6, f) == 6 && !memcmp(magic, "\x93NUMPY", 6);
  fclose(f);
  return yes;
}

/* The text after the key `'key':` in the header dict, or NULL. */
static const char *npy_value(const char *h, const char *key) {
  char pat[32];
  snprintf(pat, sizeof pat, "'%s'", key);
  const char *p = strstr(h, pat);
  if (!p) return NULL;
  p += strlen(pat);
  while (*p == ' ') p++;
  if (*p++ != ':') return NULL;
  while (*p == ' ') p++;
  return p;
}

static const char *parse_header(const char *h, NpyHeader *out) {
  const char *d = npy_value(h, "descr"), *fo = npy_value(h, "fortran_order"), *sh = npy_value(h, "shape");
  if (!d || !fo || !sh) return "header lacks descr, fortran_order or shape";
  if (*d != '\'') return "descr is not a simple type";
  const char *e = strchr(d + 1, '\'');
  if (!e || e - d - 1 >= (long)sizeof out->descr) return "bad descr";
  memcpy(out->descr, d + 1, (size_t)(e - d - 1));
  out->descr[e - d - 1] = 0;
  if (!strncmp(fo, "True", 4)) out->fortran = true;
  else if (strncmp(fo, "False", 5)) return "bad fortran_order";
  if (*sh++ != '(') return "bad shape";
  out->rank = 0;
  for (;;) {
    while (*sh == ' ' || *sh == ',') sh++;
    if (*sh == ')') return NULL;
    char *end;
    errno = 0;
    long long v = strtoll(sh, &end, 10);
    if (end == sh || errno || v < 0 || v > (1LL << 40)) return "bad shape";
    if (out->rank == NPY_MAX_RANK) return "shape has too many axes";
    out->dims[out->rank++] = v;
    sh = end;
  }
}

/* Whether the array's shape is the tensor's dims up to axes of size 1, over all of the
 * tensor's axes (it may have more than an array: a 33-axis tensor of 3 elements, compared
 * by its first 32, took a scalar's file and 3 values from the bytes after it). */
static bool same_squeezed(const tdsl_tensor_info *ti, const NpyHeader *h) {
  int j = 0;
  for (int i = 0; i < h->rank; i++) {
    if (h->dims[i] == 1) continue;
    while (j < ti->rank && ti->dims[j] == 1) j++;
    if (j == ti->rank || ti->dims[j] != h->dims[i]) return false;
    j++;
  }
  while (j < ti->rank && ti->dims[j] == 1) j++;
  return j == ti->rank;
}

/* dims printed "(2, 3)", cut with "...)" where they do not fit. */
static void dims_str(char *buf, size_t n, const long long *dims, int rank) {
  size_t len = (size_t)snprintf(buf, n, "(");
  for (int i = 0; i < rank && len + 24 < n; i++) len += (size_t)snprintf(buf + len, n - len, "%s%lld", i ? ", " : "", dims[i]);
  snprintf(buf + len, n - len, "%s)", len + 24 < n ? "" : "...");
}

static int check_shape(tdsl_model *m, const tdsl_tensor_info *ti, const NpyHeader *h, const char *path) {
  if (same_squeezed(ti, h)) return 0;
  char fs[256], ts[256];
  dims_str(fs, sizeof fs, h->dims, h->rank);
  long long td[NPY_MAX_RANK + 1];
  int rank = ti->rank <= NPY_MAX_RANK ? ti->rank : NPY_MAX_RANK + 1; /* the last: cut to "..." */
  for (int i = 0; i < rank; i++) td[i] = ti->dims[i];
  dims_str(ts, sizeof ts, td, rank);
  return tdsl_rt_fail(m, "'%s' has shape %s but tensor %s has dims %s", path, fs, ti->name, ts);
}

/* A tensor with dynamic dimensions takes the array's (then ti describes it anew). */
static int take_shape(tdsl_model *m, tdsl_tensor_info *ti, const NpyHeader *h) {
  long dims[NPY_MAX_RANK];
  for (int i = 0; i < h->rank && i < NPY_MAX_RANK; i++) dims[i] = h->dims[i] > LONG_MAX ? LONG_MAX : (long)h->dims[i];
  const char *name = ti->name;
  if (tdsl_rt_take_shape(m, name, h->rank, dims)) return -1;
  return tdsl_tensor_by_name(m, name, ti);
}

static int read_header(tdsl_model *m, FILE *f, const char *path, NpyHeader *h) {
  unsigned char pre[12];
  if (fread(pre, 1, 10, f) != 10) return tdsl_rt_fail(m, "'%s': truncated .npy header", path);
  long hlen;
  if (pre[6] == 1) hlen = pre[8] | (long)pre[9] << 8;
  else if (pre[6] == 2 || pre[6] == 3) {
    if (fread(pre + 10, 1, 2, f) != 2) return tdsl_rt_fail(m, "'%s': truncated .npy header", path);
    hlen = pre[8] | (long)pre[9] << 8 | (long)pre[10] << 16 | (long)pre[11] << 24;
  } else return tdsl_rt_fail(m, "'%s': unsupported .npy version %d", path, pre[6]);
  if (hlen <= 0 || hlen > NPY_MAX_HEADER) return tdsl_rt_fail(m, "'%s': bad .npy header length", path);
  char *text = malloc((size_t)hlen + 1);
  if (!text) return tdsl_rt_fail(m, "out of memory");
  const char *why = fread(text, 1, (size_t)hlen, f) == (size_t)hlen ? NULL : "truncated header";
  text[hlen] = 0;
  if (!why) why = parse_header(text, h);
  free(text);
  return why ? tdsl_rt_fail(m, "'%s': %s", path, why) : 0;
}

static int read_values(tdsl_model *m, FILE *f, const char *path, const tdsl_tensor_info *ti, bool f64) {
  long n = ti->size;
  double *vals = malloc((size_t)(n ? n : 1) * sizeof *vals);
  if (!vals) return tdsl_rt_fail(m, "out of memory");
  size_t w = f64 ? 8 : 4;
  unsigned char q[8];
  for (long i = 0; i < n; i++) {
    if (fread(q, 1, w, f) != w) {
      free(vals);
      return tdsl_rt_fail(m, "'%s': short read (%ld of %ld values)", path, i, n);
    }
    uint64_t u = 0;
    for (size_t k = 0; k < w; k++) u |= (uint64_t)q[k] << (8 * k);
    if (f64) memcpy(&vals[i], &u, 8);
    else {
      uint32_t u32 = (uint32_t)u;
      float x;
      memcpy(&x, &u32, 4);
      vals[i] = x;
    }
  }
  int rc = tdsl_write_f64(m, ti->name, vals, n);
  free(vals);
  return rc;
}

/* Whether the data after the header holds the values its shape counts. Checked before
 * the shape may set a dynamic dimension: a short file claiming a huge array must not
 * make the runtime allocate it. */
static int data_present(tdsl_model *m, FILE *f, const char *path, const NpyHeader *h, bool f64) {
  long at = ftell(f);
  if (at < 0 || fseek(f, 0, SEEK_END)) return tdsl_rt_fail(m, "cannot read '%s': %s", path, strerror(errno));
  long end = ftell(f);
  if (end < at || fseek(f, at, SEEK_SET)) return tdsl_rt_fail(m, "cannot read '%s': %s", path, strerror(errno));
  double need = 1; /* exact up to 2^53, beyond any file after that */
  for (int i = 0; i < h->rank; i++) need *= (double)h->dims[i];
  long have = (end - at) / (f64 ? 8 : 4);
  return need > (double)have ? tdsl_rt_fail(m, "'%s': short read (%ld of %.0f values)", path, have, need) : 0;
}

int tdsl_rt_load_npy(tdsl_model *m, const char *name, const char *path) {
  tdsl_tensor_info ti;
  if (tdsl_tensor_by_name(m, name, &ti)) return -1;
  FILE *f = fopen(path, "rb");
  if (!f) return tdsl_rt_fail(m, "cannot read '%s': %s", path, strerror(errno));
  NpyHeader h = {0};
  int rc = read_header(m, f, path, &h);
  bool f64 = !strcmp(h.descr, "<f8");
  if (!rc && !f64 && strcmp(h.descr, "<f4"))
    rc = tdsl_rt_fail(m, "'%s': dtype '%s' is not supported (expected float32 '<f4' or float64 '<f8')", path, h.descr);
  if (!rc && h.fortran) rc = tdsl_rt_fail(m, "'%s': Fortran-order arrays are not supported (save a C-order array)", path);
  if (!rc) rc = data_present(m, f, path, &h, f64);
  if (!rc) rc = take_shape(m, &ti, &h);
  if (!rc) rc = check_shape(m, &ti, &h, path);
  if (!rc) rc = read_values(m, f, path, &ti, f64);
  fclose(f);
  return rc;
}
