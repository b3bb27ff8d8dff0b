/* Dynamic dimensions through lowering, the IR printer, gccjit, the C
 * rendering and the runtime, on a hand-built graph with a dimension n:
 *   x [n, 3] (range)   w [3, 2] (values)
 *   y [n, 2] = x * w              (matmul over a dynamic batch)
 *   t [2, n] = y transposed       (a stride over n: n*i)
 *   u [n]    = x[i - 1, 0]        (padding guard 0 <= i - 1 < n)
 *   v [n]    = t[1, j]            (a constant offset times n)
 * Expected values are computed in plain C from the definitions. */
#include <unistd.h>

#include "emit_c.h"
#include "graph_builder.h"

static const double W[6] = {1, -2, 3, 0.5, -1, 2};

static void dyn_graph(GB *b) {
  DimSym *n = ANEW(&b->a, DimSym);
  n->name = "n";
  vec_push(&b->a, &b->g.dimsyms, n);
  int N = DIM_DYN(0);
  Tensor *x = gb_tensor(b, "x", TK_CONST, 1, 1, 0, (int[]){N, 3});
  Tensor *w = gb_tensor(b, "w", TK_CONST, 0, 1, 1, (int[]){3, 2});
  Tensor *y = gb_tensor(b, "y", TK_OP, 1, 1, 0, (int[]){N, 2});
  Tensor *t = gb_tensor(b, "t", TK_OP, 0, 2, 0, (int[]){2, N});
  Tensor *u = gb_tensor(b, "u", TK_OP, 1, 0, 0, (int[]){N});
  Tensor *v = gb_tensor(b, "v", TK_OP, 1, 0, 0, (int[]){N});
  x->init.kind = INIT_RANGE;
  gb_values(b, w, 6, W);
  gb_matmul(b, x, w, y, N, 2, 3); /* over a dynamic number of rows */
  UpdateStep *s = gb_step(b, t, 1, (Tensor *[]){y}, 2, (int[]){2, N}); /* o, i */
  gb_it(s, 0, 0, 0);
  gb_it(s, 0, 1, 1);
  gb_it(s, 1, 0, 1);
  gb_it(s, 1, 1, 0);
  gb_asgn(b, &t->fwd, (Buf){t, false}, 0, OP_ARG2, false, ae_buf(&b->a, y, false, 1), s);
  s = gb_step(b, u, 1, (Tensor *[]){x}, 1, (int[]){N});
  gb_it(s, 0, 0, 0);
  gb_ax(s, 1, 0, -1, 1, 1, 0);
  gb_asgn(b, &u->fwd, (Buf){u, false}, 0, OP_ADD, true, ae_buf(&b->a, x, false, 1), s);
  s = gb_step(b, v, 1, (Tensor *[]){t}, 1, (int[]){N});
  gb_it(s, 0, 0, 0);
  gb_ax(s, 1, 0, 1, 0);
  gb_it(s, 1, 1, 0);
  gb_asgn(b, &v->fwd, (Buf){v, false}, 0, OP_ARG2, false, ae_buf(&b->a, t, false, 1), s);
  Routine *r = gb_routine(b, "run");
  Code *codes[4] = {&y->fwd, &t->fwd, &u->fwd, &v->fwd};
  for (int c = 0; c < 4; c++)
    for (int i = 0; i < codes[c]->asgns.len; i++) vec_push(&b->a, &r->code.asgns, codes[c]->asgns.items[i]);
}

/* Checks every tensor of the open model m against the definitions for n rows. */
static void expect_values(GB *b, int n) {
  double y[2 * 64], t[2 * 64], u[64], v[64];
  for (int i = 0; i < n; i++)
    for (int o = 0; o < 2; o++) {
      double acc = 0;
      for (int k = 0; k < 3; k++) acc += (double)(i * 3 + k) * W[k * 2 + o];
      y[i * 2 + o] = t[o * n + i] = acc;
    }
  for (int i = 0; i < n; i++) {
    u[i] = i >= 1 ? (double)((i - 1) * 3) : 0;
    v[i] = t[n + i];
  }
  gb_expect(b, "w", 6, W);
  gb_expect(b, "y", 2 * n, y);
  gb_expect(b, "t", 2 * n, t);
  gb_expect(b, "u", n, u);
  gb_expect(b, "v", n, v);
}

static char *ir_text(const IrModule *m) {
  char *txt = NULL;
  size_t len = 0;
  FILE *o = open_memstream(&txt, &len);
  ir_print(o, m);
  fclose(o);
  return txt;
}

/* The run at n = 4, then n = 2 (reallocated), the shapes the runtime reports, and the
 * errors: an unset dimension, a bad value, a shape that contradicts a static dim. */
static void run_model(GB *b, tdsl_model *m) {
  tdsl_model *keep = b->m;
  b->m = m;
  CHECK(tdsl_num_dims(m) == 1 && !strcmp(tdsl_dim_name(m, 0), "n"));
  CHECK(tdsl_call(m, "run") != 0 && strstr(tdsl_error(m), "dimension n is not set"), "%s", tdsl_error(m));
  tdsl_tensor_info ti;
  CHECK(tdsl_tensor_by_name(m, "y", &ti) == 0 && ti.size == 0 && ti.data == NULL);
  long nv = 0;
  CHECK(tdsl_get_dim(m, "n", &nv) == 0 && nv == -1); /* unset: 0 is a value */
  CHECK(tdsl_set_dim(m, "n", -1) != 0 && strstr(tdsl_error(m), "out of its range 0.."));
  /* n = 0, an empty batch: storage of no elements (a valid pointer), and the run works */
  CHECK(tdsl_set_dim(m, "n", 0) == 0 && tdsl_get_dim(m, "n", &nv) == 0 && nv == 0);
  CHECK(tdsl_tensor_by_name(m, "y", &ti) == 0 && ti.size == 0 && ti.data != NULL);
  CHECK(tdsl_call(m, "run") == 0, "%s", tdsl_error(m));
  CHECK(tdsl_set_dim(m, "nope", 3) != 0 && strstr(tdsl_error(m), "no dynamic dimension named 'nope'"));
  CHECK(tdsl_set_dim(m, "n", 4) == 0);
  CHECK(tdsl_tensor_by_name(m, "t", &ti) == 0 && ti.size == 8 && ti.dims[0] == 2 && ti.dims[1] == 4);
  gb_call(b, "run");
  expect_values(b, 4);
  /* a shape sets n: x written as 2 x 3 (the range values it had) */
  CHECK(tdsl_write_shaped_f64(m, "x", (double[]){0, 1, 2, 3, 4, 5}, 2, (long[]){2, 3}) == 0, "%s", tdsl_error(m));
  CHECK(tdsl_get_dim(m, "n", &nv) == 0 && nv == 2);
  gb_call(b, "run");
  expect_values(b, 2);
  CHECK(tdsl_write_shaped_f64(m, "x", (double[]){0, 1, 2, 3}, 2, (long[]){2, 2}) != 0 &&
        strstr(tdsl_error(m), "axis 1 has size 3, not 2"), "%s", tdsl_error(m));
  CHECK(tdsl_write_f64(m, "x", (double[]){0, 1, 2}, 3) != 0); /* 2 x 3 now */
  CHECK(tdsl_write_shaped(m, "x", (float[]){0, 1, 2, 3, 4, 5}, 2, (long[]){2, 3}) == 0); /* the same: n stays */
  CHECK(tdsl_write_shaped(m, "x", (float[]){0}, 1, (long[]){1}) != 0 &&
        strstr(tdsl_error(m), "tensor x has dims (n, 3), not (1) (even up to axes of size 1)"), "%s", tdsl_error(m));
  /* axes of size 1 may differ, as for a static tensor (tdsl.h): (2, 1, 3) sets n = 2 */
  CHECK(tdsl_write_shaped(m, "x", (float[]){0, 1, 2, 3, 4, 5}, 3, (long[]){2, 1, 3}) == 0, "%s", tdsl_error(m));
  CHECK(tdsl_get_dim(m, "n", &nv) == 0 && nv == 2);
  /* a .npy file of 3 x 3 sets n = 3 (float64, values 0..8: x's range init) */
  char path[] = "/tmp/tdsl_dyn_npyXXXXXX";
  int fd = mkstemp(path);
  FILE *f = fd >= 0 ? fdopen(fd, "wb") : NULL;
  if (f) {
    static const char dict[] = "{'descr': '<f8', 'fortran_order': False, 'shape': (3, 3), }";
    char hdr[118]; /* 10 + 118 bytes: the data starts 64-byte aligned */
    memset(hdr, ' ', sizeof hdr);
    memcpy(hdr, dict, strlen(dict));
    hdr[117] = '\n';
    fwrite("\x93NUMPY\x01\x00\x76\x00", 1, 10, f);
    fwrite(hdr, 1, sizeof hdr, f);
    for (int i = 0; i < 9; i++) {
      double v = i;
      fwrite(&v, 8, 1, f);
    }
    fclose(f);
    CHECK(tdsl_load_file(m, "x", path) == 0 && tdsl_get_dim(m, "n", &nv) == 0 && nv == 3, "%s", tdsl_error(m));
    gb_call(b, "run");
    expect_values(b, 3);
    unlink(path);
  } else CHECK(false, "mkstemp");
  b->m = keep;
}

static void test_ir_text(void) {
  GB b;
  gb_init(&b);
  dyn_graph(&b);
  b.ir = lower_graph(&b.a, &b.d, &b.g, false);
  CHECK(b.ir != NULL);
  if (!b.ir) return;
  char *txt = ir_text(b.ir);
  if (getenv("DYN_DUMP")) fputs(txt, stderr);
  CHECK(strstr(txt, "buf y f32 [n,2]") && strstr(txt, "buf t f32 [2,n]") && strstr(txt, "dim ?0 n"), "%s", txt);
  CHECK(strstr(txt, "for i0 < n\n"), "loop over n");
  CHECK(strstr(txt, "t[n*i"), "a stride over n in t's index");
  CHECK(strstr(txt, "< n\n") && strstr(txt, "if 0 <= i"), "the padding guard against n");
  CHECK(strstr(txt, "t[n + i"), "t[1, j]: the offset 1 times n");
  /* the metadata: a dim line, dynamic dims as -1 - id, size 0 */
  const char *meta = ir_metadata(&b.a, b.ir, "tdsl");
  CHECK(strstr(meta, "\ndim 0 n ") && strstr(meta, "buf 2 y f32 0 1 1 0 -1 2"), "%s", meta);
  free(txt);
  gb_free(&b);
}

static void test_jit(int opt, bool check) {
  GB b;
  gb_init(&b);
  dyn_graph(&b);
  CHECK(gb_open(&b, opt, false, check));
  if (b.m) run_model(&b, b.m);
  gb_free(&b);
}

/* --emit-c of the same graph, compiled by cc and opened as a model. */
static void test_emit_c(void) {
  GB b;
  gb_init(&b);
  dyn_graph(&b);
  b.ir = lower_graph(&b.a, &b.d, &b.g, false);
  char dir[] = "/tmp/tdsl_dynXXXXXX";
  if (!b.ir || !mkdtemp(dir)) {
    CHECK(false, "lowering or mkdtemp");
    gb_free(&b);
    return;
  }
  char src[64], so[64], cmd[256];
  snprintf(src, sizeof src, "%s/m.c", dir);
  snprintf(so, sizeof so, "%s/m.so", dir);
  FILE *o = fopen(src, "w");
  emit_c(o, b.ir, true, false, "tdsl");
  fclose(o);
  snprintf(cmd, sizeof cmd, "cc -std=c11 -O1 -Wall -Werror -shared -fPIC -o %s %s -lm", so, src);
  CHECK(system(cmd) == 0, "%s", cmd);
  /* --emit-header: a dynamic buffer's accessor reads the pointer, the dim has one */
  char *hdr = NULL;
  size_t hlen = 0;
  FILE *ho = open_memstream(&hdr, &hlen);
  emit_header(ho, b.ir, "tdsl", NULL);
  fclose(ho);
  CHECK(strstr(hdr, "#define tdsl_y(inst) (*(float **)((char *)(inst) + ") && strstr(hdr, "/* y [n,2] */") &&
            strstr(hdr, "#define tdsl_dim_n(inst) (*(int *)((char *)(inst) + "),
        "%s", hdr);
  free(hdr);
  char err[256];
  tdsl_model *m = tdsl_open(so, err, sizeof err);
  CHECK(m != NULL && tdsl_init(m, 0) == 0, "%s", err);
  if (m) {
    run_model(&b, m);
    tdsl_close(m);
  }
  unlink(src);
  unlink(so);
  rmdir(dir);
  gb_free(&b);
}

int main(void) {
  test_ir_text();
  test_jit(0, false);
  test_jit(2, false);
  test_jit(1, true);
  test_emit_c();
  return tk_exit("test_dyn");
}
