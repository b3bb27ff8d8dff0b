/* The runtime's metadata parser (runtime/tdslrt.c) as a trust boundary: malformed or
 * hostile metadata is refused with a message naming the line, never a crash or an
 * out-of-bounds write; encoded strings decode (a label may hold spaces and newlines).
 * Routines come from a fake resolver; storage is the instance the runtime allocates. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "tdsl.h"
#include "testkit.h"

static const char *meta_text;
static const char *meta(void) { return meta_text; }
static void fn(void *inst) { (void)inst; }
/* What t_call ran, in order (a seq routine's runs, walked by the runtime). */
static int called[64], ncalled;
static void call(void *inst, int k) {
  (void)inst;
  if (ncalled < 64) called[ncalled++] = k;
}

static void *resolve(void *h, const char *name) {
  (void)h;
  int i;
  if (!strcmp(name, "tdsl_model_meta")) return (void *)meta;
  if (sscanf(name, "t_fn_%d", &i) == 1) return (void *)fn;
  if (!strcmp(name, "t_call")) return (void *)call;
  return NULL;
}

/* Opens text; NULL with the message in err. */
static tdsl_model *open_text(const char *text, char *err, size_t n) {
  meta_text = text;
  err[0] = 0;
  return tdsl_open_resolved(resolve, NULL, err, n);
}

static void refused(const char *text, const char *want) {
  char err[512];
  tdsl_model *m = open_text(text, err, sizeof err);
  CHECK(!m);
  if (m) tdsl_close(m);
  CHECK(strstr(err, want), "for:\n%s\nwant '%s', got '%s'", text, want, err);
}

/* The VmFlags of the mapping holding p ("" when /proc/self/smaps cannot say). */
static void vm_flags(const void *p, char *out, size_t n) {
  out[0] = 0;
  FILE *f = fopen("/proc/self/smaps", "r");
  char line[512];
  int in = 0;
  while (f && fgets(line, sizeof line, f)) {
    unsigned long lo, hi;
    if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' '))
      in = (uintptr_t)p >= lo && (uintptr_t)p < hi;
    else if (in && !strncmp(line, "VmFlags:", 8)) {
      snprintf(out, n, "%s", line + 8);
      break;
    }
  }
  if (f) fclose(f);
}

/* A large instance lies on 2 MiB boundaries, advised onto transparent huge pages
 * (VmFlags "hg"): on 4 KiB pages the sums and permutes of bench/cpu.py ran 1.2x slower
 * than numpy's arrays, which are so advised. A small one is not padded out. */
static void huge_instance(void) {
  char err[512], flags[512];
  tdsl_model *m = open_text("tdsl 3\nmodel t 8389632\nbuf 0 x f32 2097152 0 1 0 2097152 -\nat 0 640\n", err, sizeof err);
  CHECK(m != NULL, "%s", err);
  if (!m) return;
  CHECK((uintptr_t)tdsl_instance(m) % (2u << 20) == 0);
  vm_flags(tdsl_instance(m), flags, sizeof flags);
  CHECK(!flags[0] || strstr(flags, " hg"), "VmFlags:%s", flags);
  tdsl_close(m);
}

int main(void) {
  char err[512];
  /* A good model, with an encoded label (space, newline, percent) and file path. */
  tdsl_model *m = open_text("tdsl 3\nmodel t 2048\nbuf 0 x f32 4 0 1 0 4 a%20b%0Ac%25\nat 0 640\ninit 0 values 2 1 2\n"
                            "buf 1 y%2Ez f64 2 1 0 0 2 -\nat 1 704\nsym 0 n 3 768\nalias w 1\nfn 3 y.forward\n",
                            err, sizeof err);
  CHECK(m != NULL);
  if (m) {
    tdsl_tensor_info ti;
    CHECK(tdsl_tensor_by_name(m, "x", &ti) == 0 && ti.labels[0] && !strcmp(ti.labels[0], "a b\nc%"));
    CHECK(tdsl_find_tensor(m, "y.z") == 1 && tdsl_find_tensor(m, "w") == 1);
    CHECK(tdsl_init(m, 0) == 0 && ((float *)((char *)tdsl_instance(m) + 640))[2] == 1 && ((float *)((char *)tdsl_instance(m) + 640))[3] == 2);
    CHECK(tdsl_set_index(m, "n", 2) == 0 && tdsl_set_index(m, "n", 3) == -1);
    CHECK(tdsl_call(m, "y.forward") == 0);
    tdsl_close(m);
  } else tk_fail("good model refused: %s", err);

  /* A label with a raw newline would have injected this line: a 4-float tensor
   * claiming 100 000 000 cells. */
  refused("tdsl 3\nmodel t 2048\nbuf 0 x f32 4 0 1 0 4 a\nbuf 0 x f32 100000000 0 1 0 100000000 -\n", "line 4");
  refused("tdsl 3\nmodel t 2048\nbuf 0 x f32 100000000 0 1 0 4 -\n", "size is not the product of the dimensions");
  refused("tdsl 3\nmodel t 2048\nbuf 1 x f32 4 0 1 0 4 -\n", "buffers out of order");
  refused("tdsl 3\nmodel t 2048\nbuf 0 x f16 4 0 1 0 4 -\n", "bad buffer name or element type");
  refused("tdsl 3\nmodel t 2048\nbuf 0 x f32 4 0 1 0 4\n", "bad label");
  refused("tdsl 3\nmodel t 2048\nbuf 0 x f32 4 0 1 0 4x -\n", "bad dimension");
  refused("tdsl 3\nmodel t 2048\nbuf 0 x f32 -4 0 1 0 4 -\n", "bad buffer size");
  refused("tdsl 3\nmodel t 2048\nbuf 0 x f32 4 0 100000 0 4 -\n", "bad axis count");
  refused("tdsl 3\nmodel t 2048\nbuf 0 x f32 4 0 1 0 2147483647 -\n", "size is not the product");
  refused("tdsl 3\nmodel t 2048\nbuf 0 x f32 0 0 4 0 65536 65536 65536 65536 - - - -\n", "");
  refused("tdsl 3\nmodel t 2048\nbuf 0 x%G1 f32 4 0 1 0 4 -\n", "bad buffer name");
  refused("tdsl 3\nmodel t 2048\nbuf 0 x f32 4 0 1 0 4 -\ninit 0 explode\n", "unknown init kind");
  refused("tdsl 3\nmodel t 2048\nbuf 0 x f32 4 0 1 0 4 -\ninit 5 range\n", "bad init line");
  refused("tdsl 3\nmodel t 2048\ninit 0 range\n", "bad init line");
  refused("tdsl 3\nmodel t 2048\nbuf 0 x f32 4 0 1 0 4 -\ninit 0 values 3 1 2\n", "fewer values than announced");
  refused("tdsl 3\nmodel t 2048\nbuf 0 x f32 4 0 1 0 4 -\ninit 0 values 99999999999 1\n", "bad value count");
  refused("tdsl 3\nmodel t 2048\nbuf 0 x f32 4 0 1 0 4 -\ninit 0 const\n", "bad constant");
  refused("tdsl 3\nmodel t 2048\nbuf 0 x f32 4 0 1 0 4 -\ninit 0 file 4\n", "bad file init");
  refused("tdsl 3\nmodel t 2048\nbuf 0 x f32 4 0 1 0 4 -\nrole 0 emperor\n", "unknown role");
  refused("tdsl 3\nmodel t 2048\nsym 1 n 3 192\n", "index symbols out of order");
  refused("tdsl 3\nmodel t 2048\nsym 0 n -3\n", "bad index symbol line");
  refused("tdsl 3\nmodel t 2048\nbuf 0 x f32 4 0 1 0 4 -\nalias w 7\n", "bad alias line");
  refused("tdsl 3\nmodel t 2048\nfn x y\n", "bad routine line");
  refused("tdsl 3\nmodel t 2048\nbuf 0 x f32 4 0 1 0 4 -\nat 0 2044\n", "buffer storage outside the instance");
  refused("tdsl 3\nmodel t 2048\nbuf 0 x f32 4 0 1 0 4 -\nat 0 640\nat 0 704\n", "buffer storage outside the instance");
  refused("tdsl 3\nmodel t 2048\nsym 0 n 3 4096\n", "index symbol outside the instance");
  refused("tdsl 3\nmodel t 1000\n", "bad model line");
  refused("tdsl 3\nmodel t%2Fx 1024\n", "not a C identifier");
  refused("tdsl 3\nmodel t 2048\nmodel u 2048\n", "bad model line");
  refused("tdsl 3\nmodel t 2048\nbuf 0 x f32 4 0 1 0 4 -\n", "no storage for tensor x");
  /* Lines are dispatched on the whole keyword; an unknown one is refused with its line,
   * and a line with a fixed number of fields must have exactly that many. */
  refused("tdsl 3\nmodel t 2048\nbuffer 0 x f32 4 0 1 0 4 -\n", "(line 3): unknown keyword 'buffer'");
  refused("tdsl 3\nmodel t 2048\nsymbol 0 n 3 192\n", "(line 3): unknown keyword 'symbol'");
  refused("tdsl 3\nmodel t 2048\n\nb\x1b[0m 1\n", "(line 4): unknown keyword 'b?[0m'");
  refused("tdsl 3\nmodel t 2048\nbuf 0 x f32 4 0 1 0 4 -\nat 0 640 704\n", "(line 4): bad at line");
  refused("tdsl 3\nmodel t 2048\nbuf 0 x f32 4 0 1 0 4 -\nrole 0\n", "(line 4): bad role line");
  refused("tdsl 3\nmodel t 2048 64\n", "(line 2): bad model line");
  refused("tdsl 3\nmodel t 2048\nsym 0 n 3 192 7\n", "(line 3): bad index symbol line");
  refused("tdsl 3\nmodel t 2048\nfn 3\n", "(line 3): bad routine line");
  refused("tdsl 3\nmodel t 2048\nthreads 4\n", "(line 3): bad threads line");
  refused("tdsl 3\nmodel t 2048\ntdsl 2\n", "(line 3): a second version line");
  /* A seq routine is runs of function numbers (K, A-B, A-B/S), walked in turn. */
  m = open_text("tdsl 3\nmodel t 2048\nseq 9 s 3 5-7 20-14/-3 2-2 0-4/2\nseq 10 e\n", err, sizeof err);
  CHECK(m != NULL, "%s", err);
  if (m) {
    const int want[] = {3, 5, 6, 7, 20, 17, 14, 2, 0, 2, 4};
    ncalled = 0;
    CHECK(tdsl_call(m, "s") == 0 && ncalled == 11);
    for (int i = 0; i < 11 && i < ncalled; i++) CHECK(called[i] == want[i], "call %d: %d, want %d", i, called[i], want[i]);
    ncalled = 0;
    CHECK(tdsl_call(m, "e") == 0 && ncalled == 0);
    tdsl_close(m);
  }
  refused("tdsl 3\nmodel t 2048\nseq 5 n 7-3\n", "seq n");
  refused("tdsl 3\nmodel t 2048\nseq 5 n 1-6/2\n", "seq n");
  refused("tdsl 3\nmodel t 2048\nseq 5 n 1-6/0\n", "seq n");
  refused("tdsl 3\nmodel t 2048\nseq 5 n -3\n", "seq n");
  refused("tdsl 3\nmodel t 2048\nseq 5 n 3-\n", "seq n");
  refused("tdsl 3\nmodel t 2048\nseq 5 n 3x\n", "seq n");
  /* at most 2^22 calls per routine, over all its runs */
  refused("tdsl 3\nmodel t 2048\nseq 5 n 0-4000000 0-4000000\n", "seq n");
  /* found by the metadata fuzzer: a seq range at LONG_MAX overflowed; an f64 buffer at a
   * multiple of 4 only gave misaligned doubles */
  refused("tdsl 3\nmodel t 2048\nseq 5 n 0-333333333333333333333333333\n", "seq n");
  refused("tdsl 3\nmodel t 2048\nbuf 0 x f64 4 0 1 0 4 -\nat 0 644\n", "misaligned");
  /* the instance header (runtime slots, --check-bounds fault) is not a buffer's */
  refused("tdsl 3\nmodel t 2048\nbuf 0 x f32 4 0 1 0 4 -\nat 0 64\n", "buffer storage outside the instance");
  refused("tdsl 2\nmodel t 1024\nbuf 0 x f32 4 0 1 0 4 -\nat 0 64\n", "another tdslc version");
  refused("tdsl 1\nbuf 0 x f32 4 0 1 0 4 -\n", "another tdslc version");
  refused("not a model\n", "not a tdslc model");
  /* dynamic dimensions: dim lines first, in order, inside the instance; a
   * dynamic buffer has size 0 and a pointer slot */
  const char *dyn = "tdsl 3\nmodel t 2048\ndim 0 n 768\nflag 1 0 772\ncheck -1 4 1 x%20axis%200%20vs%204\n"
                    "buf 0 x f32 0 1 1 0 -1 2 - -\nat 0 640\nbuf 1 y f32 0 1 1 0 -1 -1 - -\nat 1 704\n"
                    "sym 0 i -1 776\nfn 2 run\n";
  char err2[256];
  tdsl_model *dm = open_text(dyn, err2, sizeof err2);
  CHECK(dm != NULL);
  if (dm) {
    tdsl_tensor_info ti;
    long v = -1;
    CHECK(tdsl_tensor_by_name(dm, "x", &ti) == 0 && ti.size == 0 && !ti.data);
    CHECK(tdsl_set_dim(dm, "n", 3) == 0 && tdsl_get_dim(dm, "n", &v) == 0 && v == 3);
    CHECK(*(int *)((char *)tdsl_instance(dm) + 768) == 3);
    CHECK(tdsl_tensor_by_name(dm, "x", &ti) == 0 && ti.size == 6 && ti.dims[0] == 3 && ti.dims[1] == 2 && ti.data &&
          *(void **)((char *)tdsl_instance(dm) + 640) == ti.data);
    CHECK(tdsl_set_dim(dm, "n", 2147483648L) == -1 && tdsl_set_dim(dm, "n", -1) == -1);
    /* the flag follows n != 1; the check holds for n = 4 or 1 only; the symbol's range is n */
    CHECK(*(int *)((char *)tdsl_instance(dm) + 772) == 1);
    CHECK(tdsl_call(dm, "run") == -1 && strstr(tdsl_error(dm), "run: x axis 0 vs 4 (n = 3, expected 4 or 1)"));
    CHECK(tdsl_set_index(dm, "i", 2) == 0 && tdsl_set_index(dm, "i", 3) == -1);
    /* n shrinks under the symbol: i = 2 is out of its range now, refused at the call */
    CHECK(tdsl_set_dim(dm, "n", 1) == 0 && *(int *)((char *)tdsl_instance(dm) + 772) == 0 && tdsl_call(dm, "run") == -1 &&
          strstr(tdsl_error(dm), "index i = 2 is out of its range 0..0"), "%s", tdsl_error(dm));
    CHECK(tdsl_set_index(dm, "i", 0) == 0 && tdsl_call(dm, "run") == 0);
    CHECK(tdsl_set_dim(dm, "n", 4) == 0 && tdsl_call(dm, "run") == 0);
    /* y is n x n: 2^31 - 1 makes it too large (refused before allocating; n stays) */
    CHECK(tdsl_set_dim(dm, "n", 2147483647L) == -1 && strstr(tdsl_error(dm), "makes tensor y too large") &&
          tdsl_get_dim(dm, "n", &v) == 0 && v == 4 && tdsl_call(dm, "run") == 0);
    tdsl_close(dm);
  } else tk_fail("dynamic model refused: %s", err2);
  /* a join: the largest of its dims (0 while one is unset or 0), kept by the runtime,
   * never set; a buffer over it is reallocated when either dim changes it */
  const char *joined = "tdsl 3\nmodel t 2048\ndim 0 n 768\ndim 1 m 772\njoin 2 max(n,m) 776 0 1\nflag 3 2 780\n"
                       "buf 0 x f32 0 1 1 0 -3 2 - -\nat 0 640\nfn 0 run\n";
  dm = open_text(joined, err2, sizeof err2);
  CHECK(dm != NULL);
  if (dm) {
    tdsl_tensor_info ti;
    long v = -1;
    int *jv = (int *)((char *)tdsl_instance(dm) + 776), *fl = (int *)((char *)tdsl_instance(dm) + 780);
    CHECK(tdsl_num_dims(dm) == 2 && !tdsl_dim_name(dm, 2));
    CHECK(tdsl_get_dim(dm, "n", &v) == 0 && v == -1 && tdsl_get_dim(dm, "max(n,m)", &v) == 0 && v == -1); /* unset */
    CHECK(tdsl_set_dim(dm, "n", 1) == 0 && *jv == 0 && tdsl_tensor_by_name(dm, "x", &ti) == 0 && !ti.data);
    CHECK(tdsl_set_dim(dm, "m", 4) == 0 && *jv == 4 && *fl == 1);
    CHECK(tdsl_tensor_by_name(dm, "x", &ti) == 0 && ti.size == 8 && ti.dims[0] == 4);
    CHECK(tdsl_set_dim(dm, "m", 1) == 0 && *jv == 1 && *fl == 0 && tdsl_tensor_by_name(dm, "x", &ti) == 0 && ti.size == 2);
    CHECK(tdsl_set_dim(dm, "n", 7) == 0 && tdsl_get_dim(dm, "max(n,m)", &v) == 0 && v == 7);
    CHECK(tdsl_set_dim(dm, "max(n,m)", 3) == -1 && strstr(tdsl_error(dm), "computed from the dimensions it joins"));
    long shape[2] = {5, 2};
    float data[10] = {0};
    CHECK(tdsl_write_shaped(dm, "x", data, 2, shape) == -1 && strstr(tdsl_error(dm), "max(n,m) = 7, not 5"));
    shape[0] = 7;
    float big[14] = {0};
    CHECK(tdsl_write_shaped(dm, "x", big, 2, shape) == 0);
    /* m = 0 (an empty batch): the join is 0, not max(7, 0) (0 against 1 broadcasts to 0;
     * against 7 the model's check fails the call), and x has storage of no elements */
    CHECK(tdsl_set_dim(dm, "m", 0) == 0 && *jv == 0 && *fl == 1 && tdsl_get_dim(dm, "max(n,m)", &v) == 0 && v == 0);
    CHECK(tdsl_tensor_by_name(dm, "x", &ti) == 0 && ti.size == 0 && ti.dims[0] == 0 && ti.data);
    CHECK(tdsl_set_dim(dm, "n", 1) == 0 && *jv == 0 && tdsl_set_dim(dm, "m", 3) == 0 && *jv == 3);
    tdsl_close(dm);
  } else tk_fail("joined model refused: %s", err2);
  refused("tdsl 3\nmodel t 2048\ndim 0 n 768\njoin 1 j 772 0\n", "bad join line");
  refused("tdsl 3\nmodel t 2048\ndim 0 n 768\ndim 1 m 772\njoin 2 j 776 1 0\n", "bad join line");
  refused("tdsl 3\nmodel t 2048\ndim 0 n 768\ndim 1 m 772\njoin 2 j 776 0 2\n", "bad join line");
  refused("tdsl 3\nmodel t 2048\ndim 0 n 768\ndim 1 m 772\njoin 2 j 776 0 1\ndim 3 k 780\n", "dimensions out of order");
  refused("tdsl 3\nmodel t 2048\ndim 0 n 768\ndim 1 m 772\njoin 2 j 2048 0 1\n", "dimension outside the instance");
  refused("tdsl 3\nmodel t 2048\ndim 1 n 768\n", "dimensions out of order");
  refused("tdsl 3\nmodel t 2048\nbuf 0 x f32 4 0 1 0 4 -\ndim 0 n 768\n", "dimensions out of order");
  refused("tdsl 3\nmodel t 2048\ndim 0 n 2048\n", "dimension outside the instance");
  refused("tdsl 3\nmodel t 2048\ndim 0 n\n", "bad dim line");
  refused("tdsl 3\nmodel t 2048\ndim 0 n 768\ndim 1 n 772\n", "two dimensions of one name");
  refused("tdsl 3\nmodel t 2048\ndim 0 n 768\nbuf 0 x f32 0 1 1 0 -2 2 - -\n", "bad dimension");
  refused("tdsl 3\nmodel t 2048\ndim 0 n 768\nbuf 0 x f32 2 1 1 0 -1 2 - -\n", "dynamic buffer's size is not 0");
  refused("tdsl 3\nmodel t 2048\ndim 0 n 768\nbuf 0 x f32 0 1 1 0 -1 2 - -\nat 0 2044\n", "buffer storage outside");
  refused("tdsl 3\nmodel t 2048\ndim 0 n 768\nbuf 0 x f32 0 1 1 0 -1 2 - -\nat 0 644\n", "buffer storage outside");
  refused("tdsl 3\nmodel t 2048\ndim 0 n 768\nbuf 0 x f32 0 1 1 0 -1 2 - -\n", "no storage for tensor x");
  refused("tdsl 3\nmodel t 2048\ndim 0 n 768\nflag 2 0 772\n", "flags out of order");
  refused("tdsl 3\nmodel t 2048\ndim 0 n 768\nflag 1 1 772\n", "bad flag line");
  refused("tdsl 3\nmodel t 2048\ndim 0 n 768\nflag 1 0 2046\n", "flag outside the instance");
  refused("tdsl 3\nmodel t 2048\ndim 0 n 768\nflag 1 0 772\ndim 2 m 776\n", "dimensions out of order");
  refused("tdsl 3\nmodel t 2048\ndim 0 n 768\ncheck -2 4 0 m\n", "bad check line");
  refused("tdsl 3\nmodel t 2048\ndim 0 n 768\ncheck -1 4 2 m\n", "bad check line");
  refused("tdsl 3\nmodel t 2048\ndim 0 n 768\ncheck -1 4 0\n", "bad check line");
  refused("tdsl 3\nmodel t 2048\ndim 0 n 768\nsym 0 i -2 776\n", "bad index symbol line");
  huge_instance();
  return tk_exit("test_meta");
}
