/* The schedule pass (src/schedule.c) against the naive loops: contraction kernels at edge
 * sizes (1, 7, 17, 63, 65, primes), transposed, batched, strided, affine and fixed-index
 * operands, accumulation into existing values, double precision, and reductions in
 * partial sums. Each graph is lowered once; the naive module (-O0, generic target) and
 * the scheduled one (every contraction made a kernel) run from the same init and every
 * tensor must agree. The test also checks that the schedule did make the kernels. */
#include <unistd.h>

#include "graph_builder.h"
#include "schedule.h"

typedef struct Count {
  int kernels, reductions, parallel, overwrites, composite, direct, retiled, retiled_p;
  int nk_composite, runs, pack_guards; /* several n and k variables; column runs; a/b guards */
  int prefetches, epilogues;
  int short_tiles; /* tiles of a few cells: the last axis of a group of short axes */
  int linear_k;    /* kernels whose k is several variables read as one (KDim.linear) */
} Count;

static void count_stmts(const PtrVec *body, Count *c) {
  for (int i = 0; i < body->len; i++) {
    const Stmt *s = body->items[i];
    if (s->kind == S_KERNEL) c->kernels++, c->overwrites += s->kern->overwrite, c->composite += s->kern->nm > 1,
                                c->direct += s->kern->direct_a, c->nk_composite += s->kern->nd.n > 1 || (s->kern->kd.n > 1 && !s->kern->kd.linear), c->linear_k += s->kern->kd.linear,
                                c->runs += s->kern->b_runs + s->kern->c_runs,
                                c->pack_guards += s->kern->na_guards + s->kern->nb_guards,
                                c->epilogues += s->kern->epilogue.len > 0;
    if (s->kind == S_LOOP && s->accs > 1) c->reductions++;
    c->prefetches += s->kind == S_PREFETCH;
    if (s->kind == S_LOOP && s->tile == 32) c->retiled++; /* a transpose's source-contiguous tile */
    if (s->kind == S_LOOP && s->tile == 16) c->retiled_p++; /* its target-contiguous one */
    if (s->kind == S_LOOP && s->tile > 0 && s->tile < 16) c->short_tiles++;
    if ((s->kind == S_LOOP && s->parallel) || (s->kind == S_KERNEL && s->kern->parallel)) c->parallel++;
    if (s->kind == S_LOOP || s->kind == S_IF) count_stmts(&s->body, c);
  }
}

static tdsl_model *open_ir(GB *b, IrModule *m, int opt, bool native, gcc_jit_context **jc, gcc_jit_result **jr) {
  JitOpts o = {.opt_level = opt, .native = native};
  *jr = jit_compile_mem(&b->a, m, &o, jc);
  if (!*jr) return NULL;
  char err[256];
  tdsl_model *md = tdsl_open_resolved(gb_resolve, *jr, err, sizeof err);
  if (!md) fprintf(stderr, "open: %s\n", err);
  else if (tdsl_init(md, 5)) fprintf(stderr, "init: %s\n", tdsl_error(md));
  return md;
}

static bool agree(tdsl_model *x, tdsl_model *y, const char *what) {
  bool ok = true;
  for (int t = 0; t < tdsl_num_tensors(x); t++) {
    tdsl_tensor_info a, b;
    if (tdsl_tensor(x, t, &a) || tdsl_tensor(y, t, &b) || a.size != b.size) return false;
    double maxv = 0, maxd = 0;
    for (long i = 0; i < a.size; i++) {
      double u = a.elem == TDSL_F64 ? ((double *)a.data)[i] : ((float *)a.data)[i];
      double v = b.elem == TDSL_F64 ? ((double *)b.data)[i] : ((float *)b.data)[i];
      maxv = fmax(maxv, fabs(v));
      if (!(fabs(u - v) <= maxd)) maxd = fabs(u - v);
    }
    if (!(maxd <= 1e-5 * (1 + maxv))) {
      fprintf(stderr, "%s: tensor %s differs by %g (largest value %g)\n", what, a.name, maxd, maxv);
      ok = false;
    }
  }
  return ok;
}

/* Every tensor's bytes, concatenated (malloc'ed). */
static char *snapshot(tdsl_model *m, size_t *len) {
  size_t n = 0;
  char *buf = NULL;
  for (int t = 0; t < tdsl_num_tensors(m); t++) {
    tdsl_tensor_info a;
    if (tdsl_tensor(m, t, &a)) break;
    size_t sz = (size_t)a.size * (a.elem == TDSL_F64 ? 8 : 4);
    char *nb = realloc(buf, n + sz + 1);
    if (!nb) break;
    buf = nb;
    memcpy(buf + n, a.data, sz);
    n += sz;
  }
  *len = n;
  return buf;
}

/* The same results, bit for bit, on 1, 2 and 3 threads. */
static bool thread_count_invariant(tdsl_model *m, const char *routine) {
  char *ref = NULL;
  size_t rlen = 0;
  bool ok = true;
  for (int n = 1; n <= 3; n++) {
    size_t len;
    CHECK(tdsl_set_num_threads(m, n) == 0 && tdsl_get_num_threads(m) == n);
    tdsl_init(m, 5);
    CHECK(tdsl_call(m, routine) == 0);
    char *got = snapshot(m, &len);
    if (!ref) ref = got, rlen = len;
    else {
      ok = ok && len == rlen && !memcmp(ref, got, len);
      free(got);
    }
  }
  free(ref);
  CHECK(tdsl_set_num_threads(m, 0) != 0);
  return ok;
}

/* Runs `routine` naive and scheduled (at -O0 and -O3) and compares; returns what the
 * schedule made. */
static Count run_pair(GB *b, const char *routine, bool dbl, const char *what) {
  Count cnt = {0};
  b->ir = lower_graph(&b->a, &b->d, &b->g, dbl);
  CHECK(b->ir != NULL);
  if (!b->ir) return cnt;
  SchedOpts so = {.kernel_min_work = 1, .vec_bytes = sched_host_vec_bytes()};
  IrModule *sm = sched_module(&b->a, b->ir, &so);
  for (int f = 0; f < sm->funcs.len; f++) count_stmts(&VEC_AT(sm->funcs, IrFunc, f)->body, &cnt);
  gcc_jit_context *jc0 = NULL, *jc1 = NULL;
  gcc_jit_result *jr0 = NULL, *jr1 = NULL;
  tdsl_model *naive = open_ir(b, b->ir, 0, false, &jc0, &jr0);
  CHECK(naive != NULL);
  for (int opt = 0; opt <= 3 && naive; opt += 3) {
    tdsl_model *fast = open_ir(b, sm, opt, opt > 0, &jc1, &jr1);
    CHECK(fast != NULL);
    if (fast) {
      tdsl_init(naive, 5);
      CHECK(tdsl_call(naive, routine) == 0 && tdsl_call(fast, routine) == 0);
      CHECK(agree(naive, fast, what));
      if (opt == 3 && !thread_count_invariant(fast, routine)) {
        fprintf(stderr, "%s: results depend on the thread count\n", what);
        failures++;
      }
      tdsl_close(fast);
    }
    if (jr1) gcc_jit_result_release(jr1);
    if (jc1) gcc_jit_context_release(jc1);
  }
  if (naive) tdsl_close(naive);
  if (jr0) gcc_jit_result_release(jr0);
  if (jc0) gcc_jit_context_release(jc0);
  return cnt;
}

static Tensor *uniform(GB *b, const char *name, int nb, int no, int ni, const int *dims) {
  Tensor *t = gb_tensor(b, name, TK_PARAM, nb, no, ni, dims);
  t->init.kind = INIT_UNIFORM;
  return t;
}

static AExpr *product(GB *b, Tensor *x, Tensor *y) {
  return ae_op(&b->a, OP_MUL, ae_buf(&b->a, x, false, 1), ae_buf(&b->a, y, false, 2), NULL);
}

/* c (m x n, or n x m when tc) =+ a (m x k, or k x m) * b (k x n, or n x k); with init
 * false c keeps its uniform values and the products are added to them. */
static void test_matmul(int m, int n, int k, bool ta, bool tb, bool tc, bool init, bool dbl) {
  GB b;
  gb_init(&b);
  Tensor *a = uniform(&b, "a", 0, 1, 1, ta ? (int[]){k, m} : (int[]){m, k});
  Tensor *bb = uniform(&b, "b", 0, 1, 1, tb ? (int[]){n, k} : (int[]){k, n});
  Tensor *c = gb_tensor(&b, "c", TK_OP, 0, 1, 1, tc ? (int[]){n, m} : (int[]){m, n});
  if (!init) c->init.kind = INIT_UNIFORM;
  UpdateStep *s = gb_step(&b, c, 2, (Tensor *[]){a, bb}, 3, (int[]){m, n, k}); /* i, j, k */
  gb_it(s, 0, 0, tc ? 1 : 0), gb_it(s, 0, 1, tc ? 0 : 1);
  gb_it(s, 1, 0, ta ? 2 : 0), gb_it(s, 1, 1, ta ? 0 : 2);
  gb_it(s, 2, 0, tb ? 1 : 2), gb_it(s, 2, 1, tb ? 2 : 1);
  gb_asgn(&b, &c->fwd, (Buf){c, false}, 0, OP_ADD, init, product(&b, a, bb), s);
  char what[96];
  snprintf(what, sizeof what, "matmul %dx%dx%d%s%s%s%s%s", m, n, k, ta ? " ta" : "", tb ? " tb" : "", tc ? " tc" : "",
           init ? "" : " accumulate", dbl ? " f64" : "");
  Count cnt = run_pair(&b, "c.forward", dbl, what);
  CHECK(cnt.kernels == (m > 1 && n > 1 && k > 1)); /* a size-1 dimension has no loop: naive */
  CHECK(cnt.overwrites == (init ? cnt.kernels : 0), "%s: the fill is fused into the kernel", what);
  gb_free(&b);
}

/* Big enough for threads: a kernel splitting its rows, a row sum and a fused
 * pointwise nest over parallel outer loops; results must not depend on the count. */
static void test_parallel(void) {
  GB b;
  gb_init(&b);
  int M = 131, N = 67, K = 41, R = 300;
  Tensor *a = uniform(&b, "a", 0, 1, 1, (int[]){M, K});
  Tensor *bb = uniform(&b, "b", 0, 1, 1, (int[]){K, N});
  Tensor *c = gb_tensor(&b, "c", TK_OP, 0, 1, 1, (int[]){M, N});
  UpdateStep *s = gb_step(&b, c, 2, (Tensor *[]){a, bb}, 3, (int[]){M, N, K});
  gb_it(s, 0, 0, 0), gb_it(s, 0, 1, 1), gb_it(s, 1, 0, 0), gb_it(s, 1, 1, 2), gb_it(s, 2, 0, 2), gb_it(s, 2, 1, 1);
  gb_asgn(&b, &c->fwd, (Buf){c, false}, 0, OP_ADD, true, product(&b, a, bb), s);
  Tensor *x = uniform(&b, "x", 0, 1, 1, (int[]){R, R});
  Tensor *r = gb_tensor(&b, "r", TK_OP, 0, 1, 0, (int[]){R});
  UpdateStep *s2 = gb_step(&b, r, 1, (Tensor *[]){x}, 2, (int[]){R, R});
  gb_it(s2, 0, 0, 0), gb_it(s2, 1, 0, 0), gb_it(s2, 1, 1, 1);
  gb_asgn(&b, &r->fwd, (Buf){r, false}, 0, OP_ADD, true, ae_op(&b.a, OP_ID, ae_buf(&b.a, x, false, 1), NULL, NULL), s2);
  Tensor *y = gb_tensor(&b, "y", TK_OP, 0, 1, 1, (int[]){R, R}); /* y = x^T * 2, fill fused away */
  UpdateStep *s3 = gb_step(&b, y, 1, (Tensor *[]){x}, 2, (int[]){R, R});
  gb_it(s3, 0, 0, 0), gb_it(s3, 0, 1, 1), gb_it(s3, 1, 0, 1), gb_it(s3, 1, 1, 0);
  gb_asgn(&b, &y->fwd, (Buf){y, false}, 0, OP_ADD, true, ae_op(&b.a, OP_MUL, ae_buf(&b.a, x, false, 1), ae_const(&b.a, 2), NULL), s3);
  Routine *rt = gb_routine(&b, "all");
  for (int i = 0; i < c->fwd.asgns.len; i++) vec_push(&b.a, &rt->code.asgns, c->fwd.asgns.items[i]);
  for (int i = 0; i < r->fwd.asgns.len; i++) vec_push(&b.a, &rt->code.asgns, r->fwd.asgns.items[i]);
  for (int i = 0; i < y->fwd.asgns.len; i++) vec_push(&b.a, &rt->code.asgns, y->fwd.asgns.items[i]);
  Count cnt = run_pair(&b, "all", false, "parallel");
  /* y's nest twice: in y.fwd (y.forward calls it) and in the routine's fused copy */
  CHECK(cnt.kernels == 1 && cnt.reductions == 1 && cnt.parallel == 4, "%d %d %d", cnt.kernels, cnt.reductions, cnt.parallel);
  /* y's transposes: 32 x 16 tiles (300 = 9*32 + 12 = 18*16 + 12) */
  CHECK(cnt.retiled == 2 && cnt.retiled_p == 2, "%d %d", cnt.retiled, cnt.retiled_p);
  /* the fills of c and y are gone: c's kernel and y's nest overwrite every cell */
  SchedOpts so = {.vec_bytes = sched_host_vec_bytes()};
  IrModule *sm = sched_module(&b.a, b.ir, &so);
  int fills = 0, fills0 = 0;
  for (int f = 0; f < sm->funcs.len; f++) { /* the routine's fusion may add functions */
    const PtrVec *body = &VEC_AT(sm->funcs, IrFunc, f)->body;
    for (int i = 0; i < body->len; i++) fills += ((Stmt *)body->items[i])->kind == S_FILL;
  }
  for (int f = 0; f < b.ir->funcs.len; f++) {
    const PtrVec *body0 = &VEC_AT(b.ir->funcs, IrFunc, f)->body;
    for (int i = 0; i < body0->len; i++) fills0 += ((Stmt *)body0->items[i])->kind == S_FILL;
  }
  CHECK(fills0 - fills == 2); /* in c.fwd and y.fwd (the routine calls them) */
  gb_free(&b);
}

/* c[p,i,j] += a[p,i,k] * b[p,k,j]: the batch loop stays outside the kernel. */
static void test_batched(void) {
  GB b;
  gb_init(&b);
  int P = 3, M = 17, N = 19, K = 23;
  Tensor *a = uniform(&b, "a", 1, 1, 1, (int[]){P, M, K});
  Tensor *bb = uniform(&b, "b", 1, 1, 1, (int[]){P, K, N});
  Tensor *c = gb_tensor(&b, "c", TK_OP, 1, 1, 1, (int[]){P, M, N});
  UpdateStep *s = gb_step(&b, c, 2, (Tensor *[]){a, bb}, 4, (int[]){P, M, N, K});
  gb_it(s, 0, 0, 0), gb_it(s, 0, 1, 1), gb_it(s, 0, 2, 2);
  gb_it(s, 1, 0, 0), gb_it(s, 1, 1, 1), gb_it(s, 1, 2, 3);
  gb_it(s, 2, 0, 0), gb_it(s, 2, 1, 3), gb_it(s, 2, 2, 2);
  gb_asgn(&b, &c->fwd, (Buf){c, false}, 0, OP_ADD, true, product(&b, a, bb), s);
  Count cnt = run_pair(&b, "c.forward", false, "batched matmul");
  CHECK(cnt.kernels == 1);
  gb_free(&b);
}

/* y[i,j] += x[stride*i + k, 2] * w[k,j]: an affine (convolution-like, strided) row
 * index and a fixed index on x. */
static void test_affine(int stride) {
  GB b;
  gb_init(&b);
  int M = 29, N = 37, K = 5, X = stride * (M - 1) + K;
  Tensor *x = uniform(&b, "x", 0, 1, 1, (int[]){X, 3});
  Tensor *w = uniform(&b, "w", 0, 1, 1, (int[]){K, N});
  Tensor *y = gb_tensor(&b, "y", TK_OP, 0, 1, 1, (int[]){M, N});
  UpdateStep *s = gb_step(&b, y, 2, (Tensor *[]){x, w}, 3, (int[]){M, N, K});
  gb_it(s, 0, 0, 0), gb_it(s, 0, 1, 1);
  gb_ax(s, 1, 0, 0, 2, stride, 0, 1, 2);
  gb_ax(s, 1, 1, 2, 0);
  gb_it(s, 2, 0, 2), gb_it(s, 2, 1, 1);
  gb_asgn(&b, &y->fwd, (Buf){y, false}, 0, OP_ADD, true, product(&b, x, w), s);
  Count cnt = run_pair(&b, "y.forward", false, stride == 1 ? "affine conv" : "strided conv");
  CHECK(cnt.kernels == 1);
  gb_free(&b);
}

static void emit_c_agrees(GB *b, const char *routine, const char *what);

/* A padded 2-D convolution out[y,x,o] += img[y+ky-1, x+kx-1, c] * w[ky,kx,c,o]: the
 * kernel's rows are (y, x), both guards are tested per row; a guard on the reduced
 * dimension keeps the 1-D padded convolution naive. */
static void test_padded_conv(void) {
  GB b;
  gb_init(&b);
  int H = 9, W = 11, C = 5, O = 13;
  Tensor *img = uniform(&b, "img", 0, 3, 0, (int[]){H, W, C});
  Tensor *w = uniform(&b, "w", 0, 1, 3, (int[]){O, 3, 3, C});
  Tensor *out = gb_tensor(&b, "out", TK_OP, 0, 3, 0, (int[]){H, W, O});
  UpdateStep *s = gb_step(&b, out, 2, (Tensor *[]){img, w}, 6, (int[]){H, W, O, 3, 3, C}); /* y x o ky kx c */
  gb_it(s, 0, 0, 0), gb_it(s, 0, 1, 1), gb_it(s, 0, 2, 2);
  gb_ax(s, 1, 0, -1, 2, 1, 0, 1, 3), gb_ax(s, 1, 1, -1, 2, 1, 1, 1, 4), gb_it(s, 1, 2, 5);
  gb_it(s, 2, 0, 2), gb_it(s, 2, 1, 3), gb_it(s, 2, 2, 4), gb_it(s, 2, 3, 5);
  gb_asgn(&b, &out->fwd, (Buf){out, false}, 0, OP_ADD, true, product(&b, img, w), s);
  Count cnt = run_pair(&b, "out.forward", false, "padded 2-D conv");
  CHECK(cnt.kernels == 1 && cnt.composite == 1 && cnt.direct == 1); /* rows: (y, x); one column tile */
  emit_c_agrees(&b, "out.forward", "padded 2-D conv, emit-c");
  gb_free(&b);
  /* its input gradient g[y+ky-1, x+kx-1, c] += d[y,x,o] * w[ky,kx,c,o]: the guards keep
   * the kernel's updates (not only its reads) inside g */
  gb_init(&b);
  Tensor *d = uniform(&b, "d", 0, 3, 0, (int[]){H, W, O});
  w = uniform(&b, "w", 0, 1, 3, (int[]){O, 3, 3, C});
  Tensor *g = gb_tensor(&b, "g", TK_OP, 0, 3, 0, (int[]){H, W, C});
  g->init.kind = INIT_UNIFORM;
  s = gb_step(&b, g, 2, (Tensor *[]){d, w}, 6, (int[]){H, W, O, 3, 3, C});
  gb_ax(s, 0, 0, -1, 2, 1, 0, 1, 3), gb_ax(s, 0, 1, -1, 2, 1, 1, 1, 4), gb_it(s, 0, 2, 5);
  gb_it(s, 1, 0, 0), gb_it(s, 1, 1, 1), gb_it(s, 1, 2, 2);
  gb_it(s, 2, 0, 2), gb_it(s, 2, 1, 3), gb_it(s, 2, 2, 4), gb_it(s, 2, 3, 5);
  gb_asgn(&b, &g->fwd, (Buf){g, false}, 0, OP_ADD, false, product(&b, d, w), s);
  cnt = run_pair(&b, "g.forward", false, "padded 2-D conv, input gradient");
  CHECK(cnt.kernels == 1 && cnt.composite == 1 && cnt.direct == 1);
  emit_c_agrees(&b, "g.forward", "padded 2-D conv, input gradient, emit-c");
  gb_free(&b);
  gb_init(&b);
  Tensor *x = uniform(&b, "x", 0, 1, 0, (int[]){40});
  Tensor *k = uniform(&b, "k", 0, 1, 0, (int[]){5});
  Tensor *y = gb_tensor(&b, "y", TK_OP, 0, 1, 0, (int[]){40});
  Tensor *v = gb_tensor(&b, "v", TK_OP, 0, 1, 0, (int[]){40});
  gb_conv1d_graph(&b, x, k, y, x, v, 40, 5);
  cnt = run_pair(&b, "y.forward", false, "padded 1-D conv");
  CHECK(cnt.kernels == 0);
  gb_free(&b);
}

/* A padded convolution's weight gradient g[o,ky,kx,c] += img[p, s*y+ky-1, s*x+kx-1, c] *
 * d[p,y,x,o] (swapped: g[ky,kx,c,o]): the guards bound img by spatial (k) and offset
 * variables, so n is (ky, kx, c) and k (p, y, x), img's packed cells 0 outside; swapped,
 * img is A, m (ky, kx, c) and the guards bound A. */
static void test_weight_grad(int P, int H, int W, int C, int O, int stride, bool swapped, bool init) {
  GB b;
  gb_init(&b);
  int Hi = stride * (H - 1) + 1, Wi = stride * (W - 1) + 1;
  Tensor *img = uniform(&b, "img", 1, 3, 0, (int[]){P, Hi, Wi, C});
  Tensor *d = uniform(&b, "d", 1, 3, 0, (int[]){P, H, W, O});
  Tensor *g = gb_tensor(&b, "g", TK_OP, 0, 1, 3, swapped ? (int[]){3, 3, C, O} : (int[]){O, 3, 3, C});
  if (!init) g->init.kind = INIT_UNIFORM;
  /* iterators: p y x o ky kx c */
  UpdateStep *s = gb_step(&b, g, 2, (Tensor *[]){img, d}, 7, (int[]){P, H, W, O, 3, 3, C});
  static const int plain[4] = {3, 4, 5, 6}, swap[4] = {4, 5, 6, 3};
  for (int ax = 0; ax < 4; ax++) gb_it(s, 0, ax, (swapped ? swap : plain)[ax]);
  gb_it(s, 1, 0, 0), gb_ax(s, 1, 1, -1, 2, stride, 1, 1, 4), gb_ax(s, 1, 2, -1, 2, stride, 2, 1, 5), gb_it(s, 1, 3, 6);
  gb_it(s, 2, 0, 0), gb_it(s, 2, 1, 1), gb_it(s, 2, 2, 2), gb_it(s, 2, 3, 3);
  gb_asgn(&b, &g->fwd, (Buf){g, false}, 0, OP_ADD, init, product(&b, img, d), s);
  char what[96];
  snprintf(what, sizeof what, "weight gradient %dx%dx%dx%d -> %d, stride %d%s%s", P, H, W, C, O, stride, swapped ? ", swapped" : "",
           init ? "" : ", accumulate");
  Count cnt = run_pair(&b, "g.forward", false, what);
  int nr = 2 * sched_host_vec_bytes() / 4;
  CHECK(cnt.kernels == 1 && cnt.nk_composite == 1 && cnt.pack_guards == 2, "%s: %d kernels", what, cnt.kernels);
  CHECK(cnt.runs == (!swapped && C % nr == 0 ? 2 : 0), "%s: %d column runs", what, cnt.runs);
  CHECK(cnt.overwrites == init, "%s: the fill is fused", what);
  if ((P == 2 && C == 5) || C == 64) emit_c_agrees(&b, "g.forward", what); /* C 64: column runs */
  gb_free(&b);
}

/* w[n,k] += g[b,s,n] * x[b,s,k] (a weight gradient summed over batch and sequence):
 * where (b, s) is one index in both operands, k is both variables read as one (whichever
 * is longer picked first); with x's sequence axis one longer than the loop (its rows are
 * S + 1 apart) the pair is no single index: k is one variable, b an outer loop. */
static void test_k_fold(int B, int S, int N, int K, bool padded, bool init) {
  GB b;
  gb_init(&b);
  Tensor *g = uniform(&b, "g", 2, 1, 0, (int[]){B, S, N});
  Tensor *x = uniform(&b, "x", 2, 1, 0, (int[]){B, padded ? S + 1 : S, K});
  Tensor *w = gb_tensor(&b, "w", TK_OP, 0, 1, 1, (int[]){N, K});
  if (!init) w->init.kind = INIT_UNIFORM;
  UpdateStep *st = gb_step(&b, w, 2, (Tensor *[]){g, x}, 4, (int[]){B, S, N, K}); /* b s n k */
  gb_it(st, 0, 0, 2), gb_it(st, 0, 1, 3);
  gb_it(st, 1, 0, 0), gb_it(st, 1, 1, 1), gb_it(st, 1, 2, 2);
  gb_it(st, 2, 0, 0), gb_it(st, 2, 1, 1), gb_it(st, 2, 2, 3);
  gb_asgn(&b, &w->fwd, (Buf){w, false}, 0, OP_ADD, init, product(&b, g, x), st);
  char what[96];
  snprintf(what, sizeof what, "k fold %dx%d, %dx%d%s%s", B, S, N, K, padded ? ", padded" : "", init ? "" : ", accumulate");
  Count cnt = run_pair(&b, "w.forward", false, what);
  CHECK(cnt.kernels == 1 && cnt.linear_k == !padded, "%s: %d kernels, %d linear", what, cnt.kernels, cnt.linear_k);
  CHECK(cnt.overwrites == (init && !padded), "%s: %d overwrites", what, cnt.overwrites);
  CHECK(cnt.parallel == (B * S * N * K >= 1 << 18), "%s: %d parallel", what, cnt.parallel);
  emit_c_agrees(&b, "w.forward", what);
  gb_free(&b);
}

/* g[c,o] += x[y+1,c] * d[y,o]: a guard on k alone; both operands read 0 where it fails. */
static void test_k_guard(int Y, int C, int O) {
  GB b;
  gb_init(&b);
  Tensor *x = uniform(&b, "x", 0, 1, 1, (int[]){Y, C});
  Tensor *d = uniform(&b, "d", 0, 1, 1, (int[]){Y, O});
  Tensor *g = gb_tensor(&b, "g", TK_OP, 0, 1, 1, (int[]){C, O});
  UpdateStep *s = gb_step(&b, g, 2, (Tensor *[]){x, d}, 3, (int[]){C, O, Y}); /* c o y */
  gb_it(s, 0, 0, 0), gb_it(s, 0, 1, 1);
  gb_ax(s, 1, 0, 1, 1, 1, 2), gb_it(s, 1, 1, 0);
  gb_it(s, 2, 0, 2), gb_it(s, 2, 1, 1);
  gb_asgn(&b, &g->fwd, (Buf){g, false}, 0, OP_ADD, true, product(&b, x, d), s);
  Count cnt = run_pair(&b, "g.forward", false, "a guard on k");
  CHECK(cnt.kernels == 1 && cnt.pack_guards == 2, "%d kernels, %d pack guards", cnt.kernels, cnt.pack_guards);
  emit_c_agrees(&b, "g.forward", "a guard on k, emit-c");
  gb_free(&b);
}

/* y[q,m,p] = 2 x[p,m,q]: a retiled transpose whose target rows are prefetched one
 * iteration of m ahead (when whole tiles cover p); the last m iteration prefetches
 * nothing. */
static void test_transpose3(int P, int M, int Q, int prefetches) {
  GB b;
  gb_init(&b);
  Tensor *x = uniform(&b, "x", 0, 1, 2, (int[]){P, M, Q});
  Tensor *y = gb_tensor(&b, "y", TK_OP, 0, 1, 2, (int[]){Q, M, P});
  UpdateStep *s = gb_step(&b, y, 1, (Tensor *[]){x}, 3, (int[]){P, M, Q}); /* p m q */
  gb_it(s, 0, 0, 2), gb_it(s, 0, 1, 1), gb_it(s, 0, 2, 0);
  gb_it(s, 1, 0, 0), gb_it(s, 1, 1, 1), gb_it(s, 1, 2, 2);
  gb_asgn(&b, &y->fwd, (Buf){y, false}, 0, OP_ADD, true, ae_op(&b.a, OP_MUL, ae_buf(&b.a, x, false, 1), ae_const(&b.a, 2), NULL), s);
  char what[64];
  snprintf(what, sizeof what, "transpose %dx%dx%d", P, M, Q);
  Count cnt = run_pair(&b, "y.forward", false, what);
  CHECK(cnt.retiled == 1 && cnt.retiled_p == 1 && cnt.prefetches == prefetches, "%s: %d + %d retiled, %d prefetches", what, cnt.retiled,
        cnt.retiled_p, cnt.prefetches);
  emit_c_agrees(&b, "y.forward", what);
  gb_free(&b);
}

/* y[q,m,p] = 2 x[p,m,q] with a short q: q and m together make the source's contiguous
 * axis, m tiled by `mtile` cells (0: the transpose is not retiled, the group too short). */
static void test_transpose_short(int P, int M, int Q, int mtile) {
  GB b;
  gb_init(&b);
  Tensor *x = uniform(&b, "x", 0, 1, 2, (int[]){P, M, Q});
  Tensor *y = gb_tensor(&b, "y", TK_OP, 0, 1, 2, (int[]){Q, M, P});
  UpdateStep *s = gb_step(&b, y, 1, (Tensor *[]){x}, 3, (int[]){P, M, Q});
  gb_it(s, 0, 0, 2), gb_it(s, 0, 1, 1), gb_it(s, 0, 2, 0);
  gb_it(s, 1, 0, 0), gb_it(s, 1, 1, 1), gb_it(s, 1, 2, 2);
  gb_asgn(&b, &y->fwd, (Buf){y, false}, 0, OP_ADD, true, ae_op(&b.a, OP_MUL, ae_buf(&b.a, x, false, 1), ae_const(&b.a, 2), NULL), s);
  char what[64];
  snprintf(what, sizeof what, "short transpose %dx%dx%d", P, M, Q);
  Count cnt = run_pair(&b, "y.forward", false, what);
  int tile = 0;
  SchedOpts so = {.vec_bytes = sched_host_vec_bytes()};
  IrModule *sm = sched_module(&b.a, b.ir, &so);
  for (int f = 0; f < sm->funcs.len; f++) {
    const PtrVec *body = &VEC_AT(sm->funcs, IrFunc, f)->body;
    for (int i = 0; i < body->len; i++)
      for (const Stmt *l = body->items[i]; l->kind == S_LOOP && l->body.len; l = l->body.items[0])
        if (l->tile > 0 && l->tile < 16) tile = l->tile;
  }
  CHECK(tile == mtile && cnt.retiled_p == (mtile ? 1 : 0), "%s: m tile %d, %d target tiles", what, tile, cnt.retiled_p);
  emit_c_agrees(&b, "y.forward", what);
  gb_free(&b);
}

/* The block size the schedule gives a loop of the first nest of m (Stmt.tblock), or 0. */
static int first_tblock(const IrModule *m) {
  for (int f = 0; f < m->funcs.len; f++) {
    const PtrVec *body = &VEC_AT(m->funcs, IrFunc, f)->body;
    for (int i = 0; i < body->len; i++)
      for (const Stmt *l = body->items[i]; l && l->kind == S_LOOP;) {
        if (l->tblock) return l->tblock;
        const Stmt *in = NULL; /* the loop inside (before a fence, after prefetches) */
        for (int k = 0; k < l->body.len; k++)
          if (((const Stmt *)l->body.items[k])->kind == S_LOOP) in = l->body.items[k];
        l = in;
      }
  }
  return 0;
}

/* y[q,m,p] = x[p,m,q] (a move): block-transposed in blocks of a vector's f32 lanes
 * where p and q are whole blocks and the target has AVX (16 on 64-byte vectors, 8 on
 * 32, none on 16), never in f64 nor when accumulating (accum: y[q,m,p] += x[p,m,q], a
 * permute's gradient); the host's plan agrees with the naive loops. */
static void test_tblock(int P, int M, int Q, bool blocks, bool dbl, bool accum) {
  GB b;
  gb_init(&b);
  Tensor *x = uniform(&b, "x", 0, 1, 2, (int[]){P, M, Q});
  Tensor *y = gb_tensor(&b, "y", TK_OP, 0, 1, 2, (int[]){Q, M, P});
  UpdateStep *s = gb_step(&b, y, 1, (Tensor *[]){x}, 3, (int[]){P, M, Q});
  gb_it(s, 0, 0, 2), gb_it(s, 0, 1, 1), gb_it(s, 0, 2, 0);
  gb_it(s, 1, 0, 0), gb_it(s, 1, 1, 1), gb_it(s, 1, 2, 2);
  gb_asgn(&b, &y->fwd, (Buf){y, false}, 0, OP_ADD, !accum, ae_buf(&b.a, x, false, 1), s);
  char what[64];
  snprintf(what, sizeof what, "block transpose %dx%dx%d%s%s", P, M, Q, dbl ? " f64" : "", accum ? " =+" : "");
  run_pair(&b, "y.forward", dbl, what);
  for (int vb = 16; vb <= 64; vb *= 2) {
    int want = blocks && !dbl && vb > 16 ? vb / 4 : 0;
    int got = first_tblock(sched_module(&b.a, b.ir, &(SchedOpts){.vec_bytes = vb}));
    CHECK(got == want, "%s, %d-byte vectors: tblock %d, want %d", what, vb, got, want);
  }
  emit_c_agrees(&b, "y.forward", what);
  gb_free(&b);
}

/* A routine computing h = relu(bias + a * b) (the kernel's epilogue takes both pointwise
 * stores); with `other`, a nest the epilogue must not take instead of the bias: one
 * reading c at another cell (d[i,j] = bias[j] + c[i,0]: c's column 0 is final only
 * after the first column tile), or one writing the operand a. */
static void test_epilogue(int M, int N, int K, int other) {
  GB b;
  gb_init(&b);
  Tensor *a = uniform(&b, "a", 0, 1, 1, (int[]){M, K});
  Tensor *bb = uniform(&b, "b", 0, 1, 1, (int[]){K, N});
  Tensor *bias = uniform(&b, "bias", 0, 1, 0, (int[]){N});
  Tensor *c = gb_tensor(&b, "c", TK_OP, 0, 1, 1, (int[]){M, N});
  Tensor *d = gb_tensor(&b, "d", TK_OP, 0, 1, 1, (int[]){M, N});
  Tensor *h = gb_tensor(&b, "h", TK_OP, 0, 1, 1, (int[]){M, N});
  UpdateStep *s = gb_step(&b, c, 2, (Tensor *[]){a, bb}, 3, (int[]){M, N, K});
  gb_it(s, 0, 0, 0), gb_it(s, 0, 1, 1), gb_it(s, 1, 0, 0), gb_it(s, 1, 1, 2), gb_it(s, 2, 0, 2), gb_it(s, 2, 1, 1);
  gb_asgn(&b, &c->fwd, (Buf){c, false}, 0, OP_ADD, true, product(&b, a, bb), s);
  UpdateStep *s2 = gb_step(&b, other == 2 ? a : d, 2, (Tensor *[]){bias, c}, 2, (int[]){M, N});
  gb_it(s2, 0, 0, 0), gb_it(s2, 0, 1, 1), gb_it(s2, 1, 0, 1);
  gb_it(s2, 2, 0, 0);
  if (other == 1) gb_ax(s2, 2, 1, 0, 0);
  else gb_it(s2, 2, 1, 1);
  gb_asgn(&b, &d->fwd, (Buf){other == 2 ? a : d, false}, 0, OP_ARG2, false,
          ae_op(&b.a, OP_ADD, ae_buf(&b.a, bias, false, 1), ae_buf(&b.a, c, false, 2), NULL), s2);
  UpdateStep *s3 = gb_step(&b, h, 1, (Tensor *[]){d}, 2, (int[]){M, N});
  gb_it(s3, 0, 0, 0), gb_it(s3, 0, 1, 1), gb_it(s3, 1, 0, 0), gb_it(s3, 1, 1, 1);
  gb_asgn(&b, &h->fwd, (Buf){h, false}, 0, OP_ARG2, false, ae_op(&b.a, OP_RELU, ae_buf(&b.a, d, false, 1), NULL, NULL), s3);
  Routine *rt = gb_routine(&b, "infer");
  Tensor *ts[3] = {c, d, h};
  for (int t = 0; t < 3; t++)
    for (int i = 0; i < ts[t]->fwd.asgns.len; i++) vec_push(&b.a, &rt->code.asgns, ts[t]->fwd.asgns.items[i]);
  char what[64];
  snprintf(what, sizeof what, "epilogue %dx%dx%d%s", M, N, K, other == 1 ? ", c[i,0]" : other == 2 ? ", writes a" : "");
  Count cnt = run_pair(&b, "infer", false, what);
  CHECK(cnt.kernels >= 1 && cnt.epilogues == !other, "%s: %d epilogues", what, cnt.epilogues);
  if (!other) emit_c_agrees(&b, "infer", what);
  gb_free(&b);
}

/* s[i] += x[i,k] for k < n: partial sums from 32 on; 1 x n and the remainder loop. */
static void test_rowsum(int rows, int n, bool dbl) {
  GB b;
  gb_init(&b);
  Tensor *x = uniform(&b, "x", 0, 1, 1, (int[]){rows, n});
  Tensor *sm = gb_tensor(&b, "s", TK_OP, 0, 1, 0, (int[]){rows});
  UpdateStep *s = gb_step(&b, sm, 1, (Tensor *[]){x}, 2, (int[]){rows, n});
  gb_it(s, 0, 0, 0);
  gb_it(s, 1, 0, 0), gb_it(s, 1, 1, 1);
  gb_asgn(&b, &sm->fwd, (Buf){sm, false}, 0, OP_ADD, true, ae_op(&b.a, OP_ID, ae_buf(&b.a, x, false, 1), NULL, NULL), s);
  char what[64];
  snprintf(what, sizeof what, "row sum %dx%d", rows, n);
  Count cnt = run_pair(&b, "s.forward", dbl, what);
  CHECK(cnt.reductions == (n >= 32));
  gb_free(&b);
}

static void test_strict_fp(void) {
  GB b;
  gb_init(&b);
  Tensor *a = uniform(&b, "a", 0, 1, 1, (int[]){64, 64});
  Tensor *bb = uniform(&b, "b", 0, 1, 1, (int[]){64, 64});
  Tensor *c = gb_tensor(&b, "c", TK_OP, 0, 1, 1, (int[]){64, 64});
  UpdateStep *s = gb_step(&b, c, 2, (Tensor *[]){a, bb}, 3, (int[]){64, 64, 64});
  gb_it(s, 0, 0, 0), gb_it(s, 0, 1, 1), gb_it(s, 1, 0, 0), gb_it(s, 1, 1, 2), gb_it(s, 2, 0, 2), gb_it(s, 2, 1, 1);
  gb_asgn(&b, &c->fwd, (Buf){c, false}, 0, OP_ADD, true, product(&b, a, bb), s);
  b.ir = lower_graph(&b.a, &b.d, &b.g, false);
  CHECK(b.ir != NULL);
  if (b.ir) {
    Count def = {0}, strict = {0};
    IrModule *m1 = sched_module(&b.a, b.ir, &(SchedOpts){0});
    IrModule *m2 = sched_module(&b.a, b.ir, &(SchedOpts){.strict_fp = true});
    for (int f = 0; f < m1->funcs.len; f++) count_stmts(&VEC_AT(m1->funcs, IrFunc, f)->body, &def);
    for (int f = 0; f < m2->funcs.len; f++) count_stmts(&VEC_AT(m2->funcs, IrFunc, f)->body, &strict);
    CHECK(def.kernels == 1 && strict.kernels == 0);
    /* the input module is left as lowered */
    Count orig = {0};
    for (int f = 0; f < b.ir->funcs.len; f++) count_stmts(&VEC_AT(b.ir->funcs, IrFunc, f)->body, &orig);
    CHECK(orig.kernels == 0);
  }
  gb_free(&b);
}

/* The C rendering (--emit-c) of b's scheduled module, compiled by cc, agrees with the
 * naive loops on routine. */
static void emit_c_agrees(GB *b, const char *routine, const char *what) {
  char dir[] = "/tmp/test_sched_XXXXXX";
  if (!b->ir || !mkdtemp(dir)) {
    tk_fail("%s: no module or no scratch directory", what);
    return;
  }
  IrModule *sm = sched_module(&b->a, b->ir, &(SchedOpts){.kernel_min_work = 1, .vec_bytes = sched_host_vec_bytes()});
  char *cpath = arena_printf(&b->a, "%s/m.c", dir), *so = arena_printf(&b->a, "%s/m.so", dir);
  FILE *o = fopen(cpath, "w");
  CHECK(o != NULL);
  if (o) {
    emit_c(o, sm, false, false, "tdsl");
    fclose(o);
    CHECK(system(arena_printf(&b->a, "cc -std=c11 -O2 -march=native -shared -fPIC -o %s %s -lm", so, cpath)) == 0);
    char err[256];
    tdsl_model *fast = tdsl_open(so, err, sizeof err);
    gcc_jit_context *jc = NULL;
    gcc_jit_result *jr = NULL;
    tdsl_model *naive = open_ir(b, b->ir, 0, false, &jc, &jr);
    CHECK(fast && naive, "%s", what);
    if (fast && naive) {
      CHECK(tdsl_init(fast, 5) == 0);
      CHECK(tdsl_call(naive, routine) == 0 && tdsl_call(fast, routine) == 0);
      CHECK(agree(naive, fast, what));
    }
    if (fast) tdsl_close(fast);
    if (naive) tdsl_close(naive);
    if (jr) gcc_jit_result_release(jr);
    if (jc) gcc_jit_context_release(jc);
  }
  remove(cpath);
  remove(so);
  remove(dir);
}

/* The C rendering of a kernel and partial sums agrees too. */
static void test_emit_c(void) {
  GB b;
  gb_init(&b);
  int M = 67, N = 65, K = 63;
  Tensor *a = uniform(&b, "a", 0, 1, 1, (int[]){M, K});
  Tensor *bb = uniform(&b, "b", 0, 1, 1, (int[]){K, N});
  Tensor *c = gb_tensor(&b, "c", TK_OP, 0, 1, 1, (int[]){M, N});
  Tensor *r = gb_tensor(&b, "r", TK_OP, 0, 1, 0, (int[]){M});
  UpdateStep *s = gb_step(&b, c, 2, (Tensor *[]){a, bb}, 3, (int[]){M, N, K});
  gb_it(s, 0, 0, 0), gb_it(s, 0, 1, 1), gb_it(s, 1, 0, 0), gb_it(s, 1, 1, 2), gb_it(s, 2, 0, 2), gb_it(s, 2, 1, 1);
  gb_asgn(&b, &c->fwd, (Buf){c, false}, 0, OP_ADD, true, product(&b, a, bb), s);
  UpdateStep *s2 = gb_step(&b, r, 1, (Tensor *[]){c}, 2, (int[]){M, N});
  gb_it(s2, 0, 0, 0), gb_it(s2, 1, 0, 0), gb_it(s2, 1, 1, 1);
  gb_asgn(&b, &r->fwd, (Buf){r, false}, 0, OP_ADD, true, ae_op(&b.a, OP_ID, ae_buf(&b.a, c, false, 1), NULL, NULL), s2);
  b.ir = lower_graph(&b.a, &b.d, &b.g, false);
  CHECK(b.ir != NULL);
  if (b.ir) {
    IrModule *sm = sched_module(&b.a, b.ir, &(SchedOpts){.kernel_min_work = 1, .vec_bytes = sched_host_vec_bytes()});
    Count cnt = {0};
    for (int f = 0; f < sm->funcs.len; f++) count_stmts(&VEC_AT(sm->funcs, IrFunc, f)->body, &cnt);
    CHECK(cnt.kernels == 1 && cnt.reductions == 1);
  }
  emit_c_agrees(&b, "r.forward", "emit-c");
  gb_free(&b);
}

int main(void) {
  static const int sizes[] = {1, 7, 17, 63, 65};
  for (int i = 0; i < 5; i++)
    for (int j = 0; j < 5; j++) test_matmul(sizes[i], sizes[j], sizes[(i + j + 2) % 5], false, false, false, true, false);
  test_matmul(13, 31, 300, false, false, false, true, false); /* two k blocks */
  test_matmul(13, 31, 300, false, false, false, false, false);
  test_matmul(101, 67, 29, true, false, false, true, false);
  test_matmul(67, 101, 29, false, true, false, true, false);
  test_matmul(53, 41, 37, true, true, true, true, false);
  test_matmul(41, 53, 11, false, false, true, false, false);
  test_matmul(23, 29, 31, false, false, false, false, true);
  test_matmul(600, 5, 3, false, false, false, true, false); /* several row blocks */
  test_matmul(5, 1100, 3, false, true, false, true, false); /* several column blocks */
  test_batched();
  test_parallel();
  test_affine(1);
  test_affine(2);
  test_padded_conv();
  static const int wg[][5] = {{2, 7, 5, 5, 3}, {1, 17, 13, 32, 7}, {3, 5, 11, 64, 17}, {2, 9, 7, 65, 2}, {1, 63, 3, 1, 5}, {2, 2, 3, 17, 13}};
  for (int i = 0; i < 6; i++) {
    const int *w = wg[i];
    test_weight_grad(w[0], w[1], w[2], w[3], w[4], 1, false, true);
    test_weight_grad(w[0], w[1], w[2], w[3], w[4], 1 + i % 2, i % 3 == 0, i % 2 == 0);
  }
  test_k_guard(65, 7, 17);
  test_transpose3(64, 5, 96, 1);
  test_epilogue(67, 65, 63, 0);
  test_epilogue(130, 37, 300, 0); /* two k blocks, two row blocks */
  test_epilogue(7, 100, 17, 0);
  test_epilogue(40, 70, 30, 1);
  test_epilogue(40, 33, 30, 2);
  test_transpose3(65, 3, 70, 0); /* p not whole tiles */
  test_transpose_short(64, 5, 16, 2);
  test_transpose_short(33, 4, 31, 2);
  test_transpose_short(40, 3, 4, 0); /* q and m span 12 cells: p may not join them */
  test_k_fold(5, 7, 37, 19, false, true);   /* s longer: b joins above it */
  test_k_fold(9, 4, 37, 40, false, false);  /* b longer: s joins below it */
  test_k_fold(5, 7, 37, 19, true, true);    /* x's rows S + 1 apart: no fold */
  test_k_fold(8, 40, 61, 67, false, false); /* a parallel kernel: its packing functions set the k variables too */
  test_tblock(64, 5, 96, true, false, false);
  test_tblock(64, 5, 96, false, true, false);   /* f64 */
  test_tblock(48, 3, 16, true, false, false);   /* q one 64-byte group, m joins it */
  test_tblock(65, 3, 64, false, false, false);  /* p not whole blocks */
  test_tblock(64, 2048, 64, true, false, false); /* 32 MiB: streamed blocks (and, compiled for the generic target, streamed cells) */
  test_tblock(64, 5, 96, false, false, true);   /* accumulating: cell by cell */
  test_k_guard(300, 3, 40);
  test_rowsum(3, 1, false);
  test_rowsum(5, 31, false);
  test_rowsum(5, 32, false);
  test_rowsum(4, 97, false);
  test_rowsum(2, 1000, true);
  test_strict_fp();
  test_emit_c();
  return tk_exit("test_sched");
}
