/* graph_builder.h: builds Graphs with shapes and projections by hand, for the lowering
 * and backend unit tests (no parser, staging or inference involved), and runs them
 * through lowering + gccjit + the runtime. Included by testsuite/unit/test_*.c. */
#ifndef GRAPH_BUILDER_H
#define GRAPH_BUILDER_H

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctx.h"
#include "ir.h"
#include "jit.h"
#include "tdsl.h"
#include "testkit.h"

typedef struct GB {
  Arena a;
  Diag d;
  Graph g;
  gcc_jit_context *jc;
  gcc_jit_result *jr;
  tdsl_model *m;
  IrModule *ir;
} GB;

static inline void gb_init(GB *b) {
  memset(b, 0, sizeof *b);
  diag_init(&b->d, stderr);
}

/* A tensor with nb batch, no output, ni input axes; dims in memory order
 * (batch, output, input). */
static inline Tensor *gb_tensor(GB *b, const char *name, TensorKind kind, int nb, int no, int ni, const int *dims) {
  Tensor *t = graph_tensor(&b->a, &b->g, kind, (Loc){0});
  t->name = name;
  t->shape.solved = true;
  t->shape.n[KIND_BATCH] = nb;
  t->shape.n[KIND_OUTPUT] = no;
  t->shape.n[KIND_INPUT] = ni;
  for (int k = 0, ax = 0; k < 3; k++) {
    t->shape.dims[k] = ANEWN(&b->a, DimDecl, t->shape.n[k] + 1);
    for (int i = 0; i < t->shape.n[k]; i++) t->shape.dims[k][i].d = dims[ax++];
  }
  if (name) graph_name(&b->a, &b->g, name, t);
  return t;
}

static inline void gb_values(GB *b, Tensor *t, int n, const double *v) {
  t->init.kind = INIT_VALUES;
  t->init.values = ANEWN(&b->a, double, n);
  memcpy(t->init.values, v, sizeof(double) * (size_t)n);
  t->init.nvalues = n;
}

/* The step of an operation: lhs = f(rhs...), with niters iterators. Axis indices are
 * filled by gb_ax; all start as the fixed index 0. */
static inline UpdateStep *gb_step(GB *b, Tensor *lhs, int nrhs, Tensor **rhs, int niters, const int *iter_size) {
  UpdateStep *s = graph_step(&b->a, &b->g, LOGIC_EINSUM, lhs, nrhs, rhs, (Loc){0});
  Projections *p = ANEW(&b->a, Projections);
  p->niters = niters;
  p->iter_size = ANEWN(&b->a, int, niters + 1);
  memcpy(p->iter_size, iter_size, sizeof(int) * (size_t)niters);
  p->nslots = 1 + nrhs;
  for (int sl = 0; sl < p->nslots; sl++) {
    Tensor *t = sl ? rhs[sl - 1] : lhs;
    p->rank[sl] = t->shape.n[0] + t->shape.n[1] + t->shape.n[2];
    p->idx[sl] = ANEWN(&b->a, AxisIndex, p->rank[sl] + 1);
  }
  s->proj = p;
  if (!lhs->step) lhs->step = s;
  return s;
}

/* Axis `axis` of slot `slot`: offset + sum of nterms (coef, iter) pairs. */
static inline void gb_ax(UpdateStep *s, int slot, int axis, int offset, int nterms, ...) {
  AxisIndex *ai = &s->proj->idx[slot][axis];
  ai->offset = offset;
  ai->nterms = nterms;
  va_list ap;
  va_start(ap, nterms);
  for (int i = 0; i < nterms; i++) {
    ai->coef[i] = va_arg(ap, int);
    ai->iter[i] = va_arg(ap, int);
  }
  va_end(ap);
}

/* Axis = iterator `it` (the common case). */
static inline void gb_it(UpdateStep *s, int slot, int axis, int it) { gb_ax(s, slot, axis, 0, 1, 1, it); }

/* An assignment appended to code (the right-hand side from ae_buf, ae_const, ae_op). */
static inline Asgn *gb_asgn(GB *b, Code *code, Buf lhs, int lhs_slot, PrimOp accum, bool init, AExpr *rhs, UpdateStep *s) {
  Asgn *as = asgn_new(&b->a, lhs.t, lhs.grad, lhs_slot, accum, init, rhs, s, (Loc){0});
  vec_push(&b->a, &code->asgns, as);
  return as;
}

static inline Routine *gb_routine(GB *b, const char *name) {
  Routine *r = ANEW(&b->a, Routine);
  r->name = name;
  vec_push(&b->a, &b->g.routines, r);
  return r;
}

static inline IndexSym *gb_sym(GB *b, const char *name, int range) {
  IndexSym *s = ANEW(&b->a, IndexSym);
  s->id = b->g.syms.len;
  s->name = name;
  s->range = range;
  vec_push(&b->a, &b->g.syms, s);
  return s;
}

static inline void *gb_resolve(void *h, const char *name) {
  if (!strncmp(name, "tdsl_fn_", 8) || !strcmp(name, "tdsl_model_meta"))
    return gcc_jit_result_get_code((gcc_jit_result *)h, name);
  return gcc_jit_result_get_global((gcc_jit_result *)h, name);
}

/* Lowers, compiles in memory and opens the model; runs init with seed 0. */
static inline bool gb_open(GB *b, int opt, bool dbl, bool check_bounds) {
  b->ir = lower_graph(&b->a, &b->d, &b->g, dbl);
  if (!b->ir) return false;
  JitOpts o = {.opt_level = opt, .check_bounds = check_bounds, .native = opt >= 2};
  b->jr = jit_compile_mem(&b->a, b->ir, &o, &b->jc);
  if (!b->jr) return false;
  char err[256];
  b->m = tdsl_open_resolved(gb_resolve, b->jr, err, sizeof err);
  if (!b->m) {
    fprintf(stderr, "open: %s\n", err);
    return false;
  }
  return tdsl_init(b->m, 0) == 0;
}

static inline void gb_close(GB *b) {
  if (b->m) tdsl_close(b->m);
  if (b->jr) gcc_jit_result_release(b->jr);
  if (b->jc) gcc_jit_context_release(b->jc);
  b->m = NULL;
  b->jr = NULL;
  b->jc = NULL;
}

static inline void gb_free(GB *b) {
  gb_close(b);
  arena_free(&b->a);
}

/* Reads tensor `name` and compares with want (tolerance for single precision). */
static inline bool gb_expect(GB *b, const char *name, int n, const double *want) {
  double got[4096];
  if (n > 4096 || tdsl_read_f64(b->m, name, got, n)) {
    fprintf(stderr, "read %s: %s\n", name, tdsl_error(b->m));
    failures++;
    return false;
  }
  bool ok = true;
  for (int i = 0; i < n; i++) {
    bool same = (isnan(want[i]) && isnan(got[i])) || got[i] == want[i] ||
                fabs(got[i] - want[i]) <= 1e-5 + 1e-5 * fabs(want[i]);
    if (!same) {
      fprintf(stderr, "%s[%d] = %.9g, want %.9g\n", name, i, got[i], want[i]);
      ok = false;
    }
  }
  if (!ok) failures++;
  return ok;
}

static inline void gb_call(GB *b, const char *name) {
  if (tdsl_call(b->m, name)) {
    fprintf(stderr, "call %s: %s\n", name, tdsl_error(b->m));
    failures++;
  }
}

/* ---- graphs shared by the backend tests (gccjit and cuda emulation) ---- */

/* c[i,j] = sum_k a[i,k] b[k,j] (a: m x k, b: k x n, c: m x n): the step and c's forward
 * assignment; the caller adds backward assignments through the returned step. */
static inline UpdateStep *gb_matmul(GB *b, Tensor *a, Tensor *bb, Tensor *c, int m, int n, int k) {
  UpdateStep *s = gb_step(b, c, 2, (Tensor *[]){a, bb}, 3, (int[]){m, n, k}); /* i, j, k */
  gb_it(s, 0, 0, 0);
  gb_it(s, 0, 1, 1);
  gb_it(s, 1, 0, 0);
  gb_it(s, 1, 1, 2);
  gb_it(s, 2, 0, 2);
  gb_it(s, 2, 1, 1);
  gb_asgn(b, &c->fwd, (Buf){c, false}, 0, OP_ADD, true,
          ae_op(&b->a, OP_MUL, ae_buf(&b->a, a, false, 1), ae_buf(&b->a, bb, false, 2), NULL), s);
  return s;
}

/* y[i] = x[i] + 1/5 over x = {1e8, 0.1} (the graph's precision decides): exact only in
 * double, where y = {1e8 + 0.2, 0.1 + 0.2}. */
static inline Tensor *gb_double_sum(GB *b) {
  Tensor *x = gb_tensor(b, "x", TK_CONST, 0, 1, 0, (int[]){2});
  Tensor *y = gb_tensor(b, "y", TK_OP, 0, 1, 0, (int[]){2});
  gb_values(b, x, 2, (double[]){1e8, 0.1});
  UpdateStep *s = gb_step(b, y, 1, (Tensor *[]){x}, 1, (int[]){2});
  gb_it(s, 0, 0, 0);
  gb_it(s, 1, 0, 0);
  gb_asgn(b, &y->fwd, (Buf){y, false}, 0, OP_ARG2, false,
          ae_op(&b->a, OP_ADD, ae_buf(&b->a, x, false, 1), ae_op(&b->a, OP_DIV, ae_const(&b->a, 1), ae_const(&b->a, 5), NULL), NULL),
          s);
  return y;
}

/* A 1-D padded convolution step: out[o] over rhs[0][o + k - pad] (and rhs[1][k] when
 * nrhs == 2), iterators o < n and k < kernel. */
static inline UpdateStep *gb_conv1d_step(GB *b, Tensor *out, int nrhs, Tensor **rhs, int n, int kernel, int pad) {
  UpdateStep *s = gb_step(b, out, nrhs, rhs, 2, (int[]){n, kernel});
  gb_it(s, 0, 0, 0);
  gb_ax(s, 1, 0, -pad, 2, 1, 0, 1, 1);
  if (nrhs == 2) gb_it(s, 2, 0, 1);
  return s;
}

/* y = x conv w (sum) and z = v conv window (max), both padded: the caller initializes
 * x, w and v (v may be y). */
static inline void gb_conv1d_graph(GB *b, Tensor *x, Tensor *w, Tensor *y, Tensor *v, Tensor *z, int n, int kernel) {
  int pad = (kernel - 1) / 2;
  UpdateStep *s = gb_conv1d_step(b, y, 2, (Tensor *[]){x, w}, n, kernel, pad);
  gb_asgn(b, &y->fwd, (Buf){y, false}, 0, OP_ADD, true, ae_op(&b->a, OP_MUL, ae_buf(&b->a, x, false, 1), ae_buf(&b->a, w, false, 2), NULL), s);
  UpdateStep *s2 = gb_conv1d_step(b, z, 1, (Tensor *[]){v}, n, kernel, pad);
  gb_asgn(b, &z->fwd, (Buf){z, false}, 0, OP_MAX, true, ae_buf(&b->a, v, false, 1), s2);
}

/* y[o] = x[n + off, o] + n for x = range of shape 3|2 and the index symbol n (range 3):
 * off > 0 reads past x once n >= 3 - off (what --check-bounds must catch). */
static inline Tensor *gb_symbol_graph_at(GB *b, int off) {
  IndexSym *n = gb_sym(b, "n", 3);
  Tensor *x = gb_tensor(b, "x", TK_CONST, 1, 1, 0, (int[]){3, 2});
  Tensor *y = gb_tensor(b, "y", TK_OP, 0, 1, 0, (int[]){2});
  x->init.kind = INIT_RANGE;
  UpdateStep *s = gb_step(b, y, 1, (Tensor *[]){x}, 1, (int[]){2});
  gb_it(s, 0, 0, 0);
  gb_ax(s, 1, 0, off, 0);
  s->proj->idx[1][0].sym = n;
  gb_it(s, 1, 1, 0);
  AExpr *sym = ANEW(&b->a, AExpr);
  sym->kind = AE_SYM;
  sym->sym = n;
  gb_asgn(b, &y->fwd, (Buf){y, false}, 0, OP_ARG2, false, ae_op(&b->a, OP_ADD, ae_buf(&b->a, x, false, 1), sym, NULL), s);
  return y;
}
static inline Tensor *gb_symbol_graph(GB *b) { return gb_symbol_graph_at(b, 0); }

#endif
