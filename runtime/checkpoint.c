/* checkpoint.c: tdsl_save / tdsl_load in the safetensors format: an 8-byte
 * little-endian header length N, N bytes of JSON
 *   {"w1":{"dtype":"F32","shape":[16,2],"data_offsets":[0,128]}, ..., "__metadata__":{...}}
 * (space-padded to a multiple of 8), then the tensors' bytes, each entry's offsets
 * relative to the end of the header. The JSON goes through cJSON both ways; the data
 * through the public tensor API, so it works for every model kind (cuda included).
 * Loading takes a model's dynamic dimensions from the saved shapes (load_dims). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "tdslrt_int.h"

enum { MAX_HEADER = 100 << 20 };

static size_t elem_bytes(tdsl_elem e) { return e == TDSL_F64 ? 8 : 4; }

static cJSON *entry_json(const tdsl_tensor_info *ti, size_t begin) {
  cJSON *e = cJSON_CreateObject(), *shape = cJSON_CreateArray(), *off = cJSON_CreateArray();
  cJSON_AddStringToObject(e, "dtype", ti->elem == TDSL_F64 ? "F64" : "F32");
  for (int k = 0; k < ti->rank; k++) cJSON_AddItemToArray(shape, cJSON_CreateNumber(ti->dims[k]));
  cJSON_AddItemToObject(e, "shape", shape);
  cJSON_AddItemToArray(off, cJSON_CreateNumber((double)begin));
  cJSON_AddItemToArray(off, cJSON_CreateNumber((double)(begin + (size_t)ti->size * elem_bytes(ti->elem))));
  cJSON_AddItemToObject(e, "data_offsets", off);
  return e;
}

/* The dimensions not set when saving, as "tdsl_unset": "n,m" (metadata values are
 * strings): their tensors are saved with an axis 0, as are those of a dimension set to
 * 0, and only this tells them apart when loading (load_dims). Written for every model
 * with dimensions, "" when all are set: a tdsl file without it predates empty batches. */
static int unset_dims(tdsl_model *m, cJSON *meta) {
  int n = tdsl_num_dims(m);
  if (n <= 0) return 0;
  size_t cap = 1, len = 0;
  for (int i = 0; i < n; i++) cap += strlen(tdsl_dim_name(m, i)) + 1;
  char *list = malloc(cap);
  if (!list) return -1;
  list[0] = 0;
  for (int i = 0; i < n; i++) {
    long v;
    const char *name = tdsl_dim_name(m, i);
    if (tdsl_get_dim(m, name, &v) || v >= 0) continue;
    len += (size_t)snprintf(list + len, cap - len, "%s%s", len ? "," : "", name);
  }
  cJSON *item = cJSON_AddStringToObject(meta, "tdsl_unset", list);
  free(list);
  return item ? 0 : -1;
}

/* The JSON header of the tensors `which` selects, padded; NULL when out of memory. */
static char *header_json(tdsl_model *m, unsigned which, size_t *len) {
  cJSON *root = cJSON_CreateObject(), *meta = cJSON_CreateObject();
  cJSON_AddStringToObject(meta, "format", "pt");
  cJSON_AddStringToObject(meta, "producer", "tdsl " TDSL_VERSION);
  if (unset_dims(m, meta)) {
    cJSON_Delete(meta);
    cJSON_Delete(root);
    return NULL;
  }
  cJSON_AddItemToObject(root, "__metadata__", meta);
  size_t at = 0;
  for (int i = 0; i < tdsl_num_tensors(m); i++) {
    tdsl_tensor_info ti;
    if (tdsl_tensor(m, i, &ti) || !(which & (1u << ti.role))) continue;
    cJSON_AddItemToObject(root, ti.name, entry_json(&ti, at));
    at += (size_t)ti.size * elem_bytes(ti.elem);
  }
  char *text = cJSON_PrintUnformatted(root);
  cJSON_Delete(root);
  if (!text) return NULL;
  size_t n = strlen(text), padded = (n + 7) / 8 * 8;
  char *out = realloc(text, padded + 1);
  if (!out) {
    cJSON_free(text);
    return NULL;
  }
  memset(out + n, ' ', padded - n);
  out[padded] = 0;
  *len = padded;
  return out;
}

static int write_body(tdsl_model *m, FILE *f, unsigned which, const char *hdr, size_t len) {
  unsigned char n8[8];
  for (int k = 0; k < 8; k++) n8[k] = (unsigned char)((uint64_t)len >> (8 * k));
  if (fwrite(n8, 1, 8, f) != 8 || fwrite(hdr, 1, len, f) != len) return -1;
  for (int i = 0; i < tdsl_num_tensors(m); i++) {
    tdsl_tensor_info ti;
    if (tdsl_tensor(m, i, &ti)) return -1;
    if (!(which & (1u << ti.role))) continue;
    size_t bytes = (size_t)ti.size * elem_bytes(ti.elem);
    /* a tensor whose dynamic dimensions are unset has no storage (data NULL, which
     * fwrite must not get even for 0 bytes) */
    if (bytes && fwrite(ti.data, 1, bytes, f) != bytes) return -1;
  }
  return 0;
}

/* The file a save replaces: through a symbolic link (even a dangling one) the file it
 * names, so the link stays, as tdslc's own outputs do (src/outfile.c). malloc'd. */
static char *save_target(const char *path) {
  char *real = realpath(path, NULL);
  if (real) return real;
  struct stat st;
  char link[4096];
  ssize_t n;
  if (lstat(path, &st) || !S_ISLNK(st.st_mode) || (n = readlink(path, link, sizeof link - 1)) <= 0) return strdup(path);
  link[n] = 0;
  const char *slash = strrchr(path, '/');
  if (link[0] == '/' || !slash) return strdup(link);
  size_t len = (size_t)(slash - path) + 1 + (size_t)n + 1;
  char *out = malloc(len);
  if (out) snprintf(out, len, "%.*s/%s", (int)(slash - path), path, link);
  return out;
}

/* A new temporary file next to target, created with mode 0666 so that the umask gives
 * the checkpoint its usual mode (mkstemp's 0600 would stay after the rename; umask()
 * itself is process-wide, not for a library to touch). Its name is target's with a
 * suffix, target's last component cut short where the suffix would take it past
 * NAME_MAX (a checkpoint of a name near the limit is still saved). -1 with errno on
 * failure. */
static int open_temp(const char *target, char *tmp, size_t len) {
  static unsigned counter;
  const char *slash = strrchr(target, '/');
  size_t dir = slash ? (size_t)(slash - target) + 1 : 0, base = strlen(target) - dir;
  int keep = (int)(dir + (base > NAME_MAX - 32 ? NAME_MAX - 32 : base));
  int fd = -1;
  for (int tries = 0; fd < 0 && tries < 100; tries++) {
    unsigned k = __atomic_fetch_add(&counter, 1, __ATOMIC_RELAXED);
    snprintf(tmp, len, "%.*s.tmp.%ld.%u", keep, target, (long)getpid(), k);
    fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0 && errno != EEXIST) return -1;
  }
  return fd;
}

/* tdsl_save with m entered: one checkpoint is one state of the model, even while other
 * threads call it. */
static int save_locked(tdsl_model *m, const char *path, unsigned which) {
  if (!*path) return tdsl_rt_fail(m, "tdsl_save: empty path");
  struct stat st;
  bool exists = stat(path, &st) == 0;
  if (exists && S_ISDIR(st.st_mode)) return tdsl_rt_fail(m, "cannot write '%s': it is a directory", path);
  /* A device, FIFO or socket (/dev/null, /dev/stdout) is written as it is: renaming a
   * temporary over it would replace /dev/null for everyone when run as root. */
  bool direct = exists && !S_ISREG(st.st_mode);
  size_t len;
  char *hdr = header_json(m, which, &len);
  if (!hdr) return tdsl_rt_fail(m, "out of memory");
  char *target = direct ? NULL : save_target(path);
  size_t tlen = target ? strlen(target) + 48 : 0;
  char *tmp = target ? malloc(tlen) : NULL;
  if (!direct && !tmp) {
    free(target);
    cJSON_free(hdr);
    return tdsl_rt_fail(m, "out of memory");
  }
  /* A FIFO without a reader: a blocking open would wait for one for ever; the
   * non-blocking one fails (ENXIO), and a FIFO that has one is then written blocking. */
  bool fifo = direct && S_ISFIFO(st.st_mode);
  int fd = direct ? open(path, O_WRONLY | O_TRUNC | O_CLOEXEC | (fifo ? O_NONBLOCK : 0)) : open_temp(target, tmp, tlen);
  if (fd < 0 && fifo && errno == ENXIO) {
    free(tmp);
    free(target);
    cJSON_free(hdr);
    return tdsl_rt_fail(m, "cannot write '%s': a FIFO that no process reads", path);
  }
  if (fd >= 0 && fifo) fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  /* the file it replaces keeps its permissions: a private checkpoint (0600) must not
   * become readable by others */
  if (fd >= 0 && exists && !direct) fchmod(fd, st.st_mode & 0777);
  FILE *f = fd >= 0 ? fdopen(fd, "wb") : NULL;
  int rc;
  if (!f) {
    rc = tdsl_rt_fail(m, "cannot write '%s': %s", path, strerror(errno));
    if (fd >= 0) close(fd);
    if (fd >= 0 && !direct) unlink(tmp);
  } else {
    rc = write_body(m, f, which, hdr, len);
    int err = rc ? errno : 0;
    if (fclose(f) && !rc) rc = -1, err = errno;
    if (rc) rc = tdsl_rt_fail(m, "cannot write '%s': %s", path, strerror(err ? err : EIO));
    else if (!direct && rename(tmp, target)) rc = tdsl_rt_fail(m, "cannot write '%s': %s", path, strerror(errno));
    if (rc && !direct) unlink(tmp);
  }
  free(tmp);
  free(target);
  cJSON_free(hdr);
  return rc;
}

int tdsl_save(tdsl_model *m, const char *path, unsigned which) {
  if (tdsl_rt_enter(m, "tdsl_save", "path", path)) return -1;
  int rc = save_locked(m, path, which);
  tdsl_rt_leave(m);
  return rc;
}

/* ---- loading ---- */

static void dims_text(char *buf, size_t n, const cJSON *shape, const tdsl_tensor_info *ti) {
  size_t len = (size_t)snprintf(buf, n, "[");
  const cJSON *d;
  int k = 0;
  if (shape) {
    cJSON_ArrayForEach(d, shape) {
      if (len >= n) break;
      if (cJSON_IsNumber(d)) len += (size_t)snprintf(buf + len, n - len, "%s%.15g", k++ ? "," : "", d->valuedouble);
      else len += (size_t)snprintf(buf + len, n - len, "%s?", k++ ? "," : "");
    }
  } else
    for (; k < ti->rank && len < n; k++) len += (size_t)snprintf(buf + len, n - len, "%s%d", k ? "," : "", ti->dims[k]);
  if (len < n) snprintf(buf + len, n - len, "]");
}

/* A whole, non-negative byte offset (JSON numbers are doubles; 2^53 bounds a file). */
static bool is_offset(const cJSON *v) {
  return cJSON_IsNumber(v) && v->valuedouble >= 0 && v->valuedouble < 9007199254740992.0 &&
         v->valuedouble == (double)(long long)v->valuedouble;
}

static bool same_shape(const cJSON *shape, const tdsl_tensor_info *ti) {
  if (!cJSON_IsArray(shape) || cJSON_GetArraySize(shape) != ti->rank) return false;
  int k = 0;
  const cJSON *d;
  cJSON_ArrayForEach(d, shape) {
    if (!cJSON_IsNumber(d) || d->valuedouble != ti->dims[k++]) return false;
  }
  return true;
}

/* The entry's data_offsets span bytes bytes within the file's data_len data bytes. */
static bool offsets_hold(const cJSON *e, double bytes, size_t data_len) {
  const cJSON *off = cJSON_GetObjectItemCaseSensitive(e, "data_offsets");
  const cJSON *b = cJSON_GetArrayItem(off, 0), *en = cJSON_GetArrayItem(off, 1);
  return cJSON_IsArray(off) && cJSON_GetArraySize(off) == 2 && is_offset(b) && is_offset(en) &&
         en->valuedouble - b->valuedouble == bytes && en->valuedouble <= (double)data_len;
}

/* Checks one header entry against the model; sets *begin to its data offset. */
static int check_entry(tdsl_model *m, const char *path, const cJSON *e, size_t data_len, char *seen, size_t *begin,
                       int *index) {
  const char *name = e->string;
  int i = *index = tdsl_rt_find_saved(m, name);
  tdsl_tensor_info ti;
  if (i < 0) return tdsl_rt_fail(m, "'%s': tensor '%s' is not in the model", path, name);
  if (tdsl_tensor(m, i, &ti)) return -1;
  if (seen[i]++) return tdsl_rt_fail(m, "'%s': tensor '%s' appears twice", path, name);
  const cJSON *dt = cJSON_GetObjectItemCaseSensitive(e, "dtype"), *shape = cJSON_GetObjectItemCaseSensitive(e, "shape");
  const cJSON *off = cJSON_GetObjectItemCaseSensitive(e, "data_offsets");
  const char *want = ti.elem == TDSL_F64 ? "F64" : "F32";
  if (!cJSON_IsString(dt)) return tdsl_rt_fail(m, "'%s': tensor '%s' has no dtype", path, name);
  if (strcmp(dt->valuestring, want))
    return tdsl_rt_fail(m, "'%s': tensor '%s' is %s but the model's is %s", path, name, dt->valuestring, want);
  if (!same_shape(shape, &ti)) {
    char fs[256], ms[256];
    dims_text(fs, sizeof fs, cJSON_IsArray(shape) ? shape : NULL, &ti);
    dims_text(ms, sizeof ms, NULL, &ti);
    if (!cJSON_IsArray(shape)) snprintf(fs, sizeof fs, "(none)");
    return tdsl_rt_fail(m, "'%s': tensor '%s' has shape %s but the model's is %s", path, name, fs, ms);
  }
  size_t bytes = (size_t)ti.size * elem_bytes(ti.elem);
  if (!offsets_hold(e, (double)bytes, data_len))
    return tdsl_rt_fail(m, "'%s': tensor '%s' has bad data_offsets (expected [begin, begin + %zu] within the %zu data bytes)",
                        path, name, bytes, data_len);
  *begin = (size_t)cJSON_GetArrayItem(off, 0)->valuedouble;
  return 0;
}

/* Whether JSON text has the escape \u0000 (a backslash that is not itself escaped).
 * cJSON decodes it into a NUL that ends the C string: the entry "w\u0000x" would load
 * into tensor "w". No tensor name has one, so such a file is refused. */
static bool has_nul_escape(const char *text, size_t n) {
  /* a raw NUL inside the object does the same (padding after it is harmless) */
  const char *z = memchr(text, 0, n);
  if (z && memchr(z, '}', n - (size_t)(z - text))) return true;
  for (size_t i = 0; i + 6 <= n; i++) {
    if (memcmp(text + i, "\\u0000", 6)) continue;
    size_t k = i;
    while (k > 0 && text[k - 1] == '\\') k--;
    if ((i - k) % 2 == 0) return true; /* an even run before it: this backslash escapes */
  }
  return false;
}

/* Reads the header; *data_at and *data_len locate the byte buffer. */
static cJSON *read_header(tdsl_model *m, FILE *f, const char *path, long *data_at, size_t *data_len) {
  unsigned char n8[8];
  if (fseek(f, 0, SEEK_END) || ftell(f) < 8 || fseek(f, 0, SEEK_SET) || fread(n8, 1, 8, f) != 8) {
    tdsl_rt_fail(m, "'%s' is not a safetensors file (too short)", path);
    return NULL;
  }
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  uint64_t n = 0;
  for (int k = 0; k < 8; k++) n |= (uint64_t)n8[k] << (8 * k);
  if (n > MAX_HEADER || (long)n > size - 8) {
    tdsl_rt_fail(m, "'%s' is not a safetensors file (header length %llu, file %ld bytes)", path, (unsigned long long)n, size);
    return NULL;
  }
  char *text = malloc((size_t)n + 1);
  if (!text) {
    tdsl_rt_fail(m, "out of memory");
    return NULL;
  }
  fseek(f, 8, SEEK_SET);
  if (fread(text, 1, (size_t)n, f) != (size_t)n) {
    free(text);
    tdsl_rt_fail(m, "'%s' is not a safetensors file (short header)", path);
    return NULL;
  }
  if (has_nul_escape(text, (size_t)n)) {
    free(text);
    tdsl_rt_fail(m, "'%s': its header has a NUL character (\\u0000) in a string", path);
    return NULL;
  }
  cJSON *root = cJSON_ParseWithLength(text, (size_t)n);
  free(text);
  if (!cJSON_IsObject(root)) {
    cJSON_Delete(root);
    tdsl_rt_fail(m, "'%s' is not a safetensors file (bad JSON header)", path);
    return NULL;
  }
  *data_at = 8 + (long)n;
  *data_len = (size_t)(size - *data_at);
  return root;
}

/* The shape of an entry as sizes (false when it is not an array of at most 64 whole
 * numbers from 0 to 2^31 - 1: the shape check reports it). */
static bool shape_sizes(const cJSON *shape, long *dims, int *rank) {
  const cJSON *d;
  *rank = 0;
  if (!cJSON_IsArray(shape) || cJSON_GetArraySize(shape) > 64) return false;
  cJSON_ArrayForEach(d, shape) {
    if (!cJSON_IsNumber(d) || d->valuedouble < 0 || d->valuedouble > 2147483647.0 || d->valuedouble != (double)(long)d->valuedouble)
      return false;
    dims[(*rank)++] = (long)d->valuedouble;
  }
  return true;
}

/* The bytes an entry's own dtype and shape give its data (0 for a dtype the model never
 * has, which check_entry refuses): checked against its data_offsets and the file before
 * its shape may set a dynamic dimension, so that a few bytes claiming a huge batch do
 * not make the runtime allocate it. Exact up to 2^53, beyond any file after that. */
static double entry_bytes(const cJSON *e, const long *dims, int rank) {
  const cJSON *dt = cJSON_GetObjectItemCaseSensitive(e, "dtype");
  if (!cJSON_IsString(dt) || (strcmp(dt->valuestring, "F32") && strcmp(dt->valuestring, "F64"))) return 0;
  double bytes = strcmp(dt->valuestring, "F64") ? 4 : 8;
  for (int k = 0; k < rank; k++) bytes *= (double)dims[k];
  return bytes;
}

/* Which saved dimensions were unset (an axis 0 then says nothing): the "tdsl_unset"
 * list tdsl_save writes; "*" (all) for a tdsl file from before it; NULL (none) for a
 * file of another producer, whose axis 0 is an empty axis. */
static const char *saved_unset(const cJSON *root) {
  const cJSON *meta = cJSON_GetObjectItemCaseSensitive(root, "__metadata__");
  const cJSON *u = cJSON_GetObjectItemCaseSensitive(meta, "tdsl_unset");
  const cJSON *p = cJSON_GetObjectItemCaseSensitive(meta, "producer");
  if (cJSON_IsString(u)) return u->valuestring;
  return cJSON_IsString(p) && !strncmp(p->valuestring, "tdsl ", 5) ? "*" : NULL;
}

/* Dynamic dimensions from the saved shapes, before any entry is checked against the
 * model's: unset ones are set (their tensors had no storage: nothing is lost when a
 * later check fails), set ones must agree. */
static int load_dims(tdsl_model *m, const char *path, const cJSON *root, size_t data_len) {
  long *want = tdsl_rt_want_new(m), dims[64];
  int rc = want ? 0 : -1, rank;
  char where[320];
  snprintf(where, sizeof where, "'%.300s'", path);
  const char *unset = saved_unset(root);
  const cJSON *e;
  cJSON_ArrayForEach(e, root) {
    if (rc || !cJSON_IsObject(e) || !shape_sizes(cJSON_GetObjectItemCaseSensitive(e, "shape"), dims, &rank)) continue;
    double bytes = entry_bytes(e, dims, rank);
    const cJSON *dt = cJSON_GetObjectItemCaseSensitive(e, "dtype");
    /* another dtype sets no dimension (check_entry refuses it); an entry of no data may:
     * a dimension set to 0 */
    if (!cJSON_IsString(dt) || (strcmp(dt->valuestring, "F32") && strcmp(dt->valuestring, "F64"))) continue;
    if (!offsets_hold(e, bytes, data_len))
      rc = tdsl_rt_fail(m, "'%s': tensor '%s' has bad data_offsets (expected [begin, begin + %.0f] within the %zu data bytes)",
                        path, e->string, bytes, data_len);
    else rc = tdsl_rt_want_shape(m, want, where, e->string, rank, dims, unset);
  }
  if (!rc) rc = tdsl_rt_want_apply(m, want, where);
  free(want);
  return rc;
}

/* An entry's bytes in the data: [begin, end). */
typedef struct Span {
  size_t begin, end;
  const char *name;
} Span;

static int span_cmp(const void *a, const void *b) {
  const Span *x = a, *y = b;
  return x->begin < y->begin ? -1 : x->begin > y->begin;
}

/* Refuses entries whose data overlap: a header that gives two tensors the same bytes
 * lies about the file (safetensors requires disjoint data), and loading would copy one
 * tensor's values into the other. The spans must also cover all data_len bytes: the
 * format indexes the whole byte buffer, without holes (safetensors' own reader refuses
 * a buffer the offsets do not fill, so that a file cannot carry hidden bytes); bytes
 * no tensor claims are refused too. Sorts spans. */
static int spans_tile(tdsl_model *m, const char *path, Span *spans, int n, size_t data_len) {
  qsort(spans, (size_t)n, sizeof *spans, span_cmp);
  const Span *last = NULL;
  size_t covered = 0; /* bytes [0, covered) are claimed */
  for (int i = 0; i < n; i++) {
    if (spans[i].begin == spans[i].end) continue; /* no data: overlaps nothing */
    if (last && spans[i].begin < last->end)
      return tdsl_rt_fail(m, "'%s': tensors '%s' and '%s' overlap in the data (bytes %zu to %zu)", path, last->name,
                          spans[i].name, spans[i].begin, (spans[i].end < last->end ? spans[i].end : last->end) - 1);
    if (spans[i].begin > covered)
      return tdsl_rt_fail(m, "'%s': no tensor covers data bytes %zu to %zu (safetensors data has no holes)", path,
                          covered, spans[i].begin - 1);
    if (!last || spans[i].end > last->end) last = &spans[i];
    covered = last->end;
  }
  if (covered < data_len)
    return tdsl_rt_fail(m, "'%s': no tensor covers data bytes %zu to %zu (safetensors data has no holes)", path,
                        covered, data_len - 1);
  return 0;
}

static int load_checked(tdsl_model *m, FILE *f, const char *path, cJSON *root, long data_at, size_t data_len);

static int load_entries(tdsl_model *m, FILE *f, const char *path, cJSON *root, long data_at, size_t data_len) {
  /* A refused load changes nothing: dimensions it set (from the shapes, before the
   * entries are checked against tensors of those sizes) are unset again. */
  long *before = tdsl_rt_dims_now(m);
  if (!before) return -1;
  int rc = load_dims(m, path, root, data_len) ? -1 : load_checked(m, f, path, root, data_at, data_len);
  if (rc) tdsl_rt_dims_restore(m, before);
  free(before);
  return rc;
}

static int load_checked(tdsl_model *m, FILE *f, const char *path, cJSON *root, long data_at, size_t data_len) {
  int nt = tdsl_num_tensors(m), count = 0;
  char *seen = calloc((size_t)nt + 1, 1);
  size_t *begin = calloc((size_t)cJSON_GetArraySize(root) + 1, sizeof *begin);
  int *index = calloc((size_t)cJSON_GetArraySize(root) + 1, sizeof *index);
  Span *spans = calloc((size_t)cJSON_GetArraySize(root) + 1, sizeof *spans);
  int rc = seen && begin && index && spans ? 0 : tdsl_rt_fail(m, "out of memory");
  const cJSON *e;
  cJSON_ArrayForEach(e, root) {
    if (rc || !strcmp(e->string, "__metadata__")) continue;
    if (!cJSON_IsObject(e)) rc = tdsl_rt_fail(m, "'%s': entry '%s' is not an object", path, e->string);
    else rc = check_entry(m, path, e, data_len, seen, &begin[count], &index[count]);
    if (!rc) {
      const cJSON *end = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(e, "data_offsets"), 1);
      spans[count] = (Span){begin[count], (size_t)end->valuedouble, e->string};
    }
    count++;
  }
  if (!rc) rc = spans_tile(m, path, spans, count, data_len);
  count = 0;
  cJSON_ArrayForEach(e, root) {
    if (rc || !strcmp(e->string, "__metadata__")) continue;
    tdsl_tensor_info ti;
    if (tdsl_tensor(m, index[count], &ti)) {
      rc = -1;
      continue;
    }
    size_t bytes = (size_t)ti.size * elem_bytes(ti.elem);
    if (bytes && (fseek(f, data_at + (long)begin[count], SEEK_SET) || fread(ti.data, 1, bytes, f) != bytes))
      rc = tdsl_rt_fail(m, "'%s': short read of tensor '%s'", path, e->string);
    count++;
  }
  free(seen);
  free(begin);
  free(index);
  free(spans);
  return rc;
}

static int load_locked(tdsl_model *m, const char *path) {
  if (tdsl_rt_readable(m, path)) return -1;
  FILE *f = fopen(path, "rb");
  if (!f) return tdsl_rt_fail(m, "cannot read '%s': %s", path, strerror(errno));
  long data_at;
  size_t data_len;
  cJSON *root = read_header(m, f, path, &data_at, &data_len);
  int rc = root ? load_entries(m, f, path, root, data_at, data_len) : -1;
  cJSON_Delete(root);
  fclose(f);
  return rc;
}

int tdsl_load(tdsl_model *m, const char *path) {
  if (tdsl_rt_enter(m, "tdsl_load", "path", path)) return -1;
  int rc = load_locked(m, path);
  tdsl_rt_leave(m);
  return rc;
}
