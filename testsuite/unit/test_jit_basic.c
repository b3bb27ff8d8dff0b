/* Lowering + gccjit + runtime on hand-built graphs: matmul (forward, backprop, loop
 * order), broadcast, reductions with init_neutral (sum, max from -inf), fixed index,
 * padded convolution (sum and max skip out-of-range points), index symbols, double
 * precision, --check-bounds. Expected numbers are worked out by hand or by plain C. */
#include <unistd.h>

#include "graph_builder.h"

static const int OPTS[] = {0, 3};

/* y = w * x with w: 3->2 = {1..6} and x: 3 = {7, 8, 9} (parameters): the step and y's
 * forward; the caller adds backward assignments through the step. */
static UpdateStep *matvec(GB *b, Tensor **w, Tensor **x, Tensor **y) {
  *w = gb_tensor(b, "w", TK_PARAM, 0, 1, 1, (int[]){2, 3});
  *x = gb_tensor(b, "x", TK_PARAM, 0, 1, 0, (int[]){3});
  *y = gb_tensor(b, "y", TK_OP, 0, 1, 0, (int[]){2});
  gb_values(b, *w, 6, (double[]){1, 2, 3, 4, 5, 6});
  gb_values(b, *x, 3, (double[]){7, 8, 9});
  UpdateStep *s = gb_step(b, *y, 2, (Tensor *[]){*w, *x}, 2, (int[]){2, 3});
  gb_it(s, 0, 0, 0);
  gb_it(s, 1, 0, 0);
  gb_it(s, 1, 1, 1);
  gb_it(s, 2, 0, 1);
  gb_asgn(b, &(*y)->fwd, (Buf){*y, false}, 0, OP_ADD, true,
          ae_op(&b->a, OP_MUL, ae_buf(&b->a, *w, false, 1), ae_buf(&b->a, *x, false, 2), NULL), s);
  return s;
}

/* The lowered IR as ir_print writes it (in the builder's arena). */
static const char *ir_text(GB *b) {
  char *txt = NULL;
  size_t len = 0;
  FILE *o = open_memstream(&txt, &len);
  ir_print(o, b->ir);
  fclose(o);
  const char *r = arena_strdup(&b->a, txt);
  free(txt);
  return r;
}

/* y = w * x (w: 3->2, x: 3) with backprop: w.grad[o,i] += g[o] x[i], x.grad[i] += w[o,i] g[o]. */
static void test_matmul_vec(int opt) {
  GB b;
  gb_init(&b);
  Tensor *w, *x, *y;
  UpdateStep *s = matvec(&b, &w, &x, &y);
  w->diff = x->diff = y->diff = true;
  gb_asgn(&b, &y->bwd, (Buf){w, true}, 1, OP_ADD, false, ae_op(&b.a, OP_MUL, ae_buf(&b.a, y, true, 0), ae_buf(&b.a, x, false, 2), NULL), s);
  gb_asgn(&b, &y->bwd, (Buf){x, true}, 2, OP_ADD, false, ae_op(&b.a, OP_MUL, ae_buf(&b.a, w, false, 1), ae_buf(&b.a, y, true, 0), NULL), s);
  CHECK(gb_open(&b, opt, false, false));
  if (b.m) {
    gb_call(&b, "y.forward");
    gb_expect(&b, "y", 2, (double[]){50, 122});
    gb_call(&b, "y.forward"); /* init_neutral: running twice gives the same */
    gb_expect(&b, "y", 2, (double[]){50, 122});
    CHECK(tdsl_write_f64(b.m, "y.grad", (double[]){1, -1}, 2) == 0);
    gb_call(&b, "y.backprop");
    gb_expect(&b, "w.grad", 6, (double[]){7, 8, 9, -7, -8, -9});
    gb_expect(&b, "x.grad", 3, (double[]){-3, -3, -3});
    gb_call(&b, "w.backprop"); /* a parameter's forward and backprop run nothing */
    gb_call(&b, "w.forward");
    gb_expect(&b, "w.grad", 6, (double[]){7, 8, 9, -7, -8, -9});
    CHECK(tdsl_call(b.m, "nope") != 0 && strstr(tdsl_error(b.m), "nope"));
  }
  gb_free(&b);
}

/* c[i,j] = sum_k a[i,k] b[k,j], 4x5 * 5x6 from ranges; checks values and i-k-j order. */
static void test_matmul_2d(int opt) {
  GB b;
  gb_init(&b);
  Tensor *a = gb_tensor(&b, "a", TK_CONST, 0, 1, 1, (int[]){4, 5});
  Tensor *bb = gb_tensor(&b, "b", TK_CONST, 0, 1, 1, (int[]){5, 6});
  Tensor *c = gb_tensor(&b, "c", TK_OP, 0, 1, 1, (int[]){4, 6});
  a->init.kind = bb->init.kind = INIT_RANGE;
  gb_matmul(&b, a, bb, c, 4, 6, 5);
  CHECK(gb_open(&b, opt, false, false));
  if (b.m) {
    gb_call(&b, "c.forward");
    double want[24];
    for (int i = 0; i < 4; i++)
      for (int j = 0; j < 6; j++) {
        double acc = 0;
        for (int k = 0; k < 5; k++) acc += (double)(i * 5 + k) * (k * 6 + j);
        want[i * 6 + j] = acc;
      }
    gb_expect(&b, "c", 24, want);
    /* loop order: i (v0) outermost, then k (v2), then j (v1) innermost */
    const char *txt = ir_text(&b);
    const char *p0 = strstr(txt, "for i0 < 4"), *p2 = strstr(txt, "for i2 < 5"), *p1 = strstr(txt, "for i1 < 6");
    CHECK(p0 && p1 && p2 && p0 < p2 && p2 < p1);
    if (opt == 0) fputs(txt, stderr);
  }
  gb_free(&b);
}

/* y[b,o] = x[b,o] + bias[o] (overwrite). */
static void test_broadcast(int opt) {
  GB b;
  gb_init(&b);
  Tensor *x = gb_tensor(&b, "x", TK_CONST, 1, 1, 0, (int[]){2, 3});
  Tensor *bias = gb_tensor(&b, "bias", TK_CONST, 0, 1, 0, (int[]){3});
  Tensor *y = gb_tensor(&b, "y", TK_OP, 1, 1, 0, (int[]){2, 3});
  x->init.kind = INIT_RANGE;
  gb_values(&b, bias, 3, (double[]){10, 20, 30});
  UpdateStep *s = gb_step(&b, y, 2, (Tensor *[]){x, bias}, 2, (int[]){2, 3});
  gb_it(s, 0, 0, 0);
  gb_it(s, 0, 1, 1);
  gb_it(s, 1, 0, 0);
  gb_it(s, 1, 1, 1);
  gb_it(s, 2, 0, 1);
  gb_asgn(&b, &y->fwd, (Buf){y, false}, 0, OP_ARG2, false, ae_op(&b.a, OP_ADD, ae_buf(&b.a, x, false, 1), ae_buf(&b.a, bias, false, 2), NULL), s);
  CHECK(gb_open(&b, opt, false, false));
  if (b.m) {
    gb_call(&b, "y.forward");
    gb_expect(&b, "y", 6, (double[]){10, 21, 32, 13, 24, 35});
  }
  gb_free(&b);
}

/* total = sum of all x; rowmax[i] = max_j x[i,j] from -inf (all values negative);
 * allmax through slot -1 of a scalar constant: m = max(x) * k[0]. */
static void test_reductions(int opt) {
  GB b;
  gb_init(&b);
  Tensor *x = gb_tensor(&b, "x", TK_CONST, 0, 1, 1, (int[]){2, 3});
  Tensor *k = gb_tensor(&b, "k", TK_CONST, 0, 1, 0, (int[]){1});
  Tensor *total = gb_tensor(&b, "total", TK_OP, 0, 1, 0, (int[]){1});
  Tensor *rowmax = gb_tensor(&b, "rowmax", TK_OP, 0, 1, 0, (int[]){2});
  Tensor *m = gb_tensor(&b, "m", TK_OP, 0, 1, 0, (int[]){1});
  gb_values(&b, x, 6, (double[]){-3, -7, -1, -9, -2, -8});
  k->init.kind = INIT_CONST;
  k->init.value = 2;
  UpdateStep *s1 = gb_step(&b, total, 1, (Tensor *[]){x}, 2, (int[]){2, 3});
  gb_ax(s1, 0, 0, 0, 0);
  gb_it(s1, 1, 0, 0);
  gb_it(s1, 1, 1, 1);
  gb_asgn(&b, &total->fwd, (Buf){total, false}, 0, OP_ADD, true, ae_buf(&b.a, x, false, 1), s1);
  UpdateStep *s2 = gb_step(&b, rowmax, 1, (Tensor *[]){x}, 2, (int[]){2, 3});
  gb_it(s2, 0, 0, 0);
  gb_it(s2, 1, 0, 0);
  gb_it(s2, 1, 1, 1);
  gb_asgn(&b, &rowmax->fwd, (Buf){rowmax, false}, 0, OP_MAX, true, ae_buf(&b.a, x, false, 1), s2);
  UpdateStep *s3 = gb_step(&b, m, 1, (Tensor *[]){x}, 2, (int[]){2, 3});
  gb_ax(s3, 0, 0, 0, 0);
  gb_it(s3, 1, 0, 0);
  gb_it(s3, 1, 1, 1);
  gb_asgn(&b, &m->fwd, (Buf){m, false}, 0, OP_MAX, true, ae_op(&b.a, OP_MUL, ae_buf(&b.a, x, false, 1), ae_buf(&b.a, k, false, -1), NULL), s3);
  CHECK(gb_open(&b, opt, false, false));
  if (b.m) {
    gb_call(&b, "total.forward");
    gb_call(&b, "rowmax.forward");
    gb_call(&b, "m.forward");
    gb_expect(&b, "total", 1, (double[]){-30});
    gb_expect(&b, "rowmax", 2, (double[]){-1, -2});
    gb_expect(&b, "m", 1, (double[]){-2});
  }
  gb_free(&b);
}

/* y[o] = x[2, o]: a fixed index on the batch axis. */
static void test_fixed_index(int opt) {
  GB b;
  gb_init(&b);
  Tensor *x = gb_tensor(&b, "x", TK_CONST, 1, 1, 0, (int[]){3, 2});
  Tensor *y = gb_tensor(&b, "y", TK_OP, 0, 1, 0, (int[]){2});
  x->init.kind = INIT_RANGE;
  UpdateStep *s = gb_step(&b, y, 1, (Tensor *[]){x}, 1, (int[]){2});
  gb_it(s, 0, 0, 0);
  gb_ax(s, 1, 0, 2, 0);
  gb_it(s, 1, 1, 0);
  gb_asgn(&b, &y->fwd, (Buf){y, false}, 0, OP_ADD, true, ae_buf(&b.a, x, false, 1), s);
  CHECK(gb_open(&b, opt, false, false));
  if (b.m) {
    gb_call(&b, "y.forward");
    gb_expect(&b, "y", 2, (double[]){4, 5});
  }
  gb_free(&b);
}

/* y[o] = sum_k x[o+k-1] w[k] (padded, x = 0..4, w = 1,2,3) and the max-accumulating
 * z[o] = max_k v[o+k-1]: padding contributes nothing, never a fake 0. */
static void test_padded_conv(int opt) {
  GB b;
  gb_init(&b);
  Tensor *x = gb_tensor(&b, "x", TK_CONST, 0, 1, 0, (int[]){5});
  Tensor *w = gb_tensor(&b, "w", TK_CONST, 0, 1, 0, (int[]){3});
  Tensor *y = gb_tensor(&b, "y", TK_OP, 0, 1, 0, (int[]){5});
  Tensor *v = gb_tensor(&b, "v", TK_CONST, 0, 1, 0, (int[]){5});
  Tensor *z = gb_tensor(&b, "z", TK_OP, 0, 1, 0, (int[]){5});
  x->init.kind = INIT_RANGE;
  gb_values(&b, w, 3, (double[]){1, 2, 3});
  gb_values(&b, v, 5, (double[]){-1, -2, -3, -4, -5});
  gb_conv1d_graph(&b, x, w, y, v, z, 5, 3);
  CHECK(gb_open(&b, opt, false, false));
  if (b.m) {
    gb_call(&b, "y.forward");
    gb_call(&b, "z.forward");
    gb_expect(&b, "y", 5, (double[]){3, 8, 14, 20, 11});
    gb_expect(&b, "z", 5, (double[]){-1, -1, -2, -3, -4});
  }
  gb_free(&b);
}

/* y[o] = x[n, o] + n, with the index symbol n (range 3) set through the runtime. */
static void test_symbol(int opt) {
  GB b;
  gb_init(&b);
  Tensor *y = gb_symbol_graph(&b);
  Routine *r = gb_routine(&b, "step");
  vec_push(&b.a, &r->code.asgns, y->fwd.asgns.items[0]);
  CHECK(gb_open(&b, opt, false, false));
  if (b.m) {
    CHECK(tdsl_set_index(b.m, "n", 1) == 0);
    gb_call(&b, "step");
    gb_expect(&b, "y", 2, (double[]){3, 4});
    CHECK(tdsl_set_index(b.m, "n", 2) == 0);
    gb_call(&b, "y.forward");
    gb_expect(&b, "y", 2, (double[]){6, 7});
    CHECK(tdsl_set_index(b.m, "n", 3) != 0);  /* out of range */
    CHECK(tdsl_set_index(b.m, "m", 0) != 0);  /* unknown */
  }
  gb_free(&b);
}

/* Double precision: 1e8 + 1 and 0.1 + 0.2 are exact only in double. */
static void test_double(int opt) {
  GB b;
  gb_init(&b);
  gb_double_sum(&b);
  CHECK(gb_open(&b, opt, true, false));
  if (b.m) {
    gb_call(&b, "y.forward");
    double got[2];
    CHECK(tdsl_read_f64(b.m, "y", got, 2) == 0);
    CHECK(got[0] == 1e8 + 0.2);
    CHECK(got[1] == 0.1 + 0.2);
    tdsl_tensor_info ti;
    CHECK(tdsl_tensor_by_name(b.m, "y", &ti) == 0 && ti.elem == TDSL_F64);
  }
  gb_free(&b);
}

/* A transpose y[j,i] = x[i,j] (37x45: not multiples of the tile) is tiled, and exact;
 * also accumulating into it (y += 2*x^T) so that a tile visits every cell once. */
static void test_transpose_tiled(int opt) {
  GB b;
  gb_init(&b);
  Tensor *x = gb_tensor(&b, "x", TK_CONST, 0, 1, 1, (int[]){37, 45});
  Tensor *y = gb_tensor(&b, "y", TK_OP, 0, 1, 1, (int[]){45, 37});
  x->init.kind = INIT_RANGE;
  UpdateStep *s = gb_step(&b, y, 1, (Tensor *[]){x}, 2, (int[]){37, 45}); /* i j */
  gb_it(s, 0, 0, 1);
  gb_it(s, 0, 1, 0);
  gb_it(s, 1, 0, 0);
  gb_it(s, 1, 1, 1);
  gb_asgn(&b, &y->fwd, (Buf){y, false}, 0, OP_ARG2, false, ae_buf(&b.a, x, false, 1), s);
  gb_asgn(&b, &y->fwd, (Buf){y, false}, 0, OP_ADD, false, ae_op(&b.a, OP_MUL, ae_const(&b.a, 2), ae_buf(&b.a, x, false, 1), NULL), s);
  CHECK(gb_open(&b, opt, false, false));
  if (b.m) {
    gb_call(&b, "y.forward");
    static double want[37 * 45];
    for (int i = 0; i < 37; i++)
      for (int j = 0; j < 45; j++) want[j * 37 + i] = 3.0 * (i * 45 + j);
    gb_expect(&b, "y", 37 * 45, want);
    const char *txt = ir_text(&b);
    CHECK(strstr(txt, "..< min(16*") != NULL);
  }
  gb_free(&b);
}

/* --check-bounds: a fixed index 5 on an axis of 3 makes tdsl_call return -1 with the
 * message (tensor, index, axis, assignment); the process goes on, and the model with it
 * (a second call fails the same way, an in-range routine still runs). */
static void test_check_bounds(void) {
  GB b;
  gb_init(&b);
  Tensor *x = gb_tensor(&b, "x", TK_CONST, 0, 1, 0, (int[]){3});
  Tensor *y = gb_tensor(&b, "y", TK_OP, 0, 1, 0, (int[]){2});
  UpdateStep *s = gb_step(&b, y, 1, (Tensor *[]){x}, 1, (int[]){2});
  gb_it(s, 0, 0, 0);
  gb_ax(s, 1, 0, 5, 0);
  gb_asgn(&b, &y->fwd, (Buf){y, false}, 0, OP_ARG2, false, ae_buf(&b.a, x, false, 1), s);
  CHECK(gb_open(&b, 1, false, true));
  if (b.m) {
    for (int k = 0; k < 2; k++) {
      CHECK(tdsl_call(b.m, "y.forward") == -1);
      const char *msg = tdsl_error(b.m);
      CHECK(strstr(msg, "y.forward: index 5 out of range [0, 3) on axis 0 of tensor x in y =: x"));
      if (k == 0) fprintf(stderr, "check-bounds message: %s\n", msg);
    }
    CHECK(tdsl_call(b.m, "x.forward") == 0);
  }
  gb_free(&b);
}

/* --emit-c renders a complete model: gcc compiles it to a .so that the runtime opens
 * with dlopen (tdsl_open) and that computes the same numbers. */
static void test_emit_c(void) {
  GB b;
  gb_init(&b);
  Tensor *w, *x, *y;
  matvec(&b, &w, &x, &y);
  Tensor *v = gb_tensor(&b, "v", TK_CONST, 0, 1, 0, (int[]){5});
  Tensor *z = gb_tensor(&b, "z", TK_OP, 0, 1, 0, (int[]){5});
  gb_values(&b, v, 5, (double[]){-1, -2, -3, -4, -5});
  UpdateStep *s2 = gb_step(&b, z, 1, (Tensor *[]){v}, 2, (int[]){5, 3});
  gb_it(s2, 0, 0, 0);
  gb_ax(s2, 1, 0, -1, 2, 1, 0, 1, 1);
  gb_asgn(&b, &z->fwd, (Buf){z, false}, 0, OP_MAX, true, ae_buf(&b.a, v, false, 1), s2);
  b.ir = lower_graph(&b.a, &b.d, &b.g, false);
  CHECK(b.ir != NULL);
  char dir[] = "/tmp/tdsl-emitc-XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  char *src = arena_printf(&b.a, "%s/m.c", dir), *so = arena_printf(&b.a, "%s/m.so", dir);
  FILE *f = fopen(src, "w");
  CHECK(f != NULL);
  if (!f || !b.ir) return;
  emit_c(f, b.ir, false, false, "tdsl");
  fclose(f);
  int rc = system(arena_printf(&b.a, "gcc -std=c11 -O2 -w -shared -fPIC -o %s %s -lm", so, src));
  CHECK(rc == 0);
  char err[256];
  b.m = tdsl_open(so, err, sizeof err);
  CHECK(b.m != NULL);
  if (b.m) {
    CHECK(tdsl_init(b.m, 0) == 0);
    gb_call(&b, "y.forward");
    gb_call(&b, "z.forward");
    gb_expect(&b, "y", 2, (double[]){50, 122});
    gb_expect(&b, "z", 5, (double[]){-1, -1, -2, -3, -4});
  } else fprintf(stderr, "%s\n", err);
  gb_free(&b);
  if (!failures) {
    unlink(src);
    unlink(so);
    rmdir(dir);
  }
}

int main(void) {
  for (size_t i = 0; i < sizeof OPTS / sizeof *OPTS; i++) {
    int o = OPTS[i];
    test_matmul_vec(o);
    test_matmul_2d(o);
    test_broadcast(o);
    test_reductions(o);
    test_fixed_index(o);
    test_padded_conv(o);
    test_symbol(o);
    test_double(o);
    test_transpose_tiled(o);
  }
  test_check_bounds();
  test_emit_c();
  return tk_exit("test_jit_basic");
}
