/* jit_sched.c: gccjit rendering of what the schedule pass (src/schedule.h) adds to the
 * loop IR: reductions in partial sums and contraction kernels (S_KERNEL, ir.h). The
 * same algorithms as the C rendering (emit_c_sched.c). */
#include "jit_emit.h"

static gcc_jit_rvalue *lv(gcc_jit_lvalue *l) { return gcc_jit_lvalue_as_rvalue(l); }
static gcc_jit_rvalue *num(J *j, long v) { return gcc_jit_context_new_rvalue_from_long(j->c, j->t_long, v); }
static gcc_jit_rvalue *add(J *j, gcc_jit_rvalue *a, gcc_jit_rvalue *b) {
  return gcc_jit_context_new_binary_op(j->c, NULL, GCC_JIT_BINARY_OP_PLUS, j->t_long, a, b);
}
static gcc_jit_rvalue *mul(J *j, long c, gcc_jit_rvalue *a) {
  return c == 1 ? a : gcc_jit_context_new_binary_op(j->c, NULL, GCC_JIT_BINARY_OP_MULT, j->t_long, num(j, c), a);
}
static gcc_jit_rvalue *less(J *j, gcc_jit_rvalue *a, gcc_jit_rvalue *b) {
  return gcc_jit_context_new_comparison(j->c, NULL, GCC_JIT_COMPARISON_LT, a, b);
}
static gcc_jit_lvalue *local(J *j, gcc_jit_type *t, const char *base) {
  return gcc_jit_function_new_local(j->fn, NULL, t, arena_printf(j->a, "%s%d", base, j->nblocks++));
}
static void set(J *j, gcc_jit_lvalue *l, gcc_jit_rvalue *v) { gcc_jit_block_add_assignment(j->blk, NULL, l, v); }
static gcc_jit_lvalue *at(J *j, gcc_jit_lvalue *arr, gcc_jit_rvalue *i) {
  return gcc_jit_context_new_array_access(j->c, NULL, lv(arr), i);
}

/* for (v = start; v < end; v += step) { ... }: loop_begin leaves j->blk in the body,
 * loop_end closes it and continues after the loop. */
typedef struct Loop {
  gcc_jit_lvalue *v;
  long step;
  gcc_jit_block *test, *after;
} Loop;

static Loop loop_begin(J *j, gcc_jit_lvalue *v, gcc_jit_rvalue *start, gcc_jit_rvalue *end, long step) {
  Loop l = {.v = v, .step = step, .test = js_new_block(j, j->fn), .after = js_new_block(j, j->fn)};
  set(j, v, start);
  gcc_jit_block_end_with_jump(j->blk, NULL, l.test);
  gcc_jit_block *body = js_new_block(j, j->fn);
  gcc_jit_block_end_with_conditional(l.test, NULL, less(j, lv(v), end), body, l.after);
  j->blk = body;
  return l;
}

static void loop_end(J *j, Loop *l) {
  gcc_jit_block_add_assignment_op(j->blk, NULL, l->v, GCC_JIT_BINARY_OP_PLUS, num(j, l->step));
  gcc_jit_block_end_with_jump(j->blk, NULL, l->test);
  j->blk = l->after;
}

/* l = min(v, cap) */
static void set_min(J *j, gcc_jit_lvalue *l, gcc_jit_rvalue *v, long cap) {
  set(j, l, v);
  gcc_jit_block *clamp = js_new_block(j, j->fn), *go = js_new_block(j, j->fn);
  gcc_jit_block_end_with_conditional(j->blk, NULL, less(j, num(j, cap), lv(l)), clamp, go);
  gcc_jit_block_add_assignment(clamp, NULL, l, num(j, cap));
  gcc_jit_block_end_with_jump(clamp, NULL, go);
  j->blk = go;
}

/* ---- reductions ---- */

static gcc_jit_rvalue *tree(J *j, gcc_jit_type *t, gcc_jit_lvalue **s, int n) {
  if (n == 1) return lv(s[0]);
  return gcc_jit_context_new_binary_op(j->c, NULL, GCC_JIT_BINARY_OP_PLUS, t, tree(j, t, s, n / 2),
                                       tree(j, t, s + n / 2, n - n / 2));
}

static void partial(J *j, const Stmt *st, gcc_jit_lvalue *sum, int el) {
  if (j->o->check_bounds) js_check_expr(j, st->val, st->what);
  gcc_jit_block_add_assignment_op(j->blk, NULL, sum, GCC_JIT_BINARY_OP_PLUS, js_expr(j, st->val, el));
}

/* sum_u over the iterations base + u of the unrolled loop, a remainder loop into sum_0,
 * then the target += the sums combined pairwise. */
void js_reduce_loop(J *j, const Stmt *lp) {
  const Stmt *st = lp->body.items[0];
  int el = VEC_AT(j->m->bufs, IrBuf, st->dst.buf)->elem, U = lp->accs;
  gcc_jit_type *t = j->t_el[el];
  gcc_jit_lvalue **sum = ANEWN(j->a, gcc_jit_lvalue *, U);
  for (int u = 0; u < U; u++) {
    sum[u] = local(j, t, "sum");
    set(j, sum[u], gcc_jit_context_zero(j->c, t));
  }
  gcc_jit_lvalue *base = local(j, j->t_long, "base"), *var = j->vars[lp->var];
  gcc_jit_rvalue *ext = js_ext(j, lp->ext, lp->dext), *full = num(j, lp->ext / U * U);
  if (lp->dext) { /* the whole rounds of U, at run time */
    gcc_jit_lvalue *f = local(j, j->t_long, "full");
    set(j, f, mul(j, U, gcc_jit_context_new_binary_op(j->c, NULL, GCC_JIT_BINARY_OP_DIVIDE, j->t_long, ext, num(j, U))));
    full = lv(f);
  }
  Loop l = loop_begin(j, base, num(j, 0), full, U);
  for (int u = 0; u < U; u++) {
    set(j, var, add(j, lv(base), num(j, u)));
    partial(j, st, sum[u], el);
  }
  loop_end(j, &l);
  l = loop_begin(j, var, full, ext, 1);
  partial(j, st, sum[0], el);
  loop_end(j, &l);
  if (j->o->check_bounds) js_check_access(j, &st->dst, st->what);
  gcc_jit_lvalue *dst = gcc_jit_context_new_array_access(j->c, NULL, lv(jm_buf(j, st->dst.buf)), js_aff(j, &st->dst.flat));
  gcc_jit_block_add_assignment_op(j->blk, NULL, dst, GCC_JIT_BINARY_OP_PLUS, tree(j, t, sum, U));
}

/* ---- contraction kernels ---- */

typedef struct K {
  const Kernel *k;
  gcc_jit_type *t, *vec, *vptr;
  gcc_jit_lvalue *ap, *bp, *ct;             /* packed A, packed B, the tile as memory */
  gcc_jit_lvalue *jc, *pc, *ic, *jr, *ir, *kk, *e, *r, *c;
  gcc_jit_lvalue *nb, *kb, *mb, *mrr, *nrr; /* block sizes of the current step */
  gcc_jit_lvalue **acc, **bv, *a;
  gcc_jit_lvalue **arow, *zrow;             /* direct A: the tile's row pointers, a zero row */
} K;

static gcc_jit_rvalue *binop(J *j, enum gcc_jit_binary_op op, gcc_jit_rvalue *a, long c) {
  return gcc_jit_context_new_binary_op(j->c, NULL, op, j->t_long, a, num(j, c));
}

/* The variables vars (j->vars) = the digits of x in mixed radix over ext (KDim). */
static void set_digits(J *j, const int *vars, const long *ext, int n, gcc_jit_rvalue *x) {
  if (n == 1) {
    set(j, j->vars[vars[0]], x);
    return;
  }
  gcc_jit_lvalue *v = local(j, j->t_long, "digits");
  set(j, v, x);
  long stride = 1;
  for (int t = n - 1; t >= 0; t--) {
    gcc_jit_rvalue *q = stride == 1 ? lv(v) : binop(j, GCC_JIT_BINARY_OP_DIVIDE, lv(v), stride);
    set(j, j->vars[vars[t]], t ? binop(j, GCC_JIT_BINARY_OP_MODULO, q, ext[t]) : q);
    stride *= ext[t];
  }
}

/* The k variables at k number x: its digits, or with a linear k (KDim.linear) the
 * fastest variable x and the others 0. */
static void set_ks(J *j, const Kernel *k, gcc_jit_rvalue *x) {
  if (!k->kd.linear) {
    set_digits(j, k->kd.var, k->kd.ext, k->kd.n, x);
    return;
  }
  for (int t = 0; t < k->kd.n - 1; t++) set(j, j->vars[k->kd.var[t]], num(j, 0));
  set(j, j->vars[k->kd.var[k->kd.n - 1]], x);
}

/* The M variables = the digits of row number row (Kernel.mvar). */
static void set_rows(J *j, const Kernel *k, gcc_jit_rvalue *row) { set_digits(j, k->mvar, k->mext, k->nm, row); }

/* Every guard 0 <= aff < ext holds at the current variables (NULL: there are none). */
static gcc_jit_rvalue *guards_ok(J *j, const Guard *gs, int n) {
  gcc_jit_rvalue *ok = NULL;
  gcc_jit_type *b = gcc_jit_context_get_type(j->c, GCC_JIT_TYPE_BOOL);
  for (int g = 0; g < n; g++) {
    gcc_jit_rvalue *v = js_aff(j, &gs[g].aff);
    gcc_jit_rvalue *in = gcc_jit_context_new_binary_op(
        j->c, NULL, GCC_JIT_BINARY_OP_LOGICAL_AND, b, gcc_jit_context_new_comparison(j->c, NULL, GCC_JIT_COMPARISON_GE, v, num(j, 0)),
        less(j, js_aff(j, &gs[g].aff), num(j, gs[g].ext)));
    ok = ok ? gcc_jit_context_new_binary_op(j->c, NULL, GCC_JIT_BINARY_OP_LOGICAL_AND, b, ok, in) : in;
  }
  return ok;
}

static gcc_jit_rvalue *rows_ok(J *j, const Kernel *k) { return guards_ok(j, k->row_guards, k->nrow_guards); }

/* a && b, either may be NULL (true) */
static gcc_jit_rvalue *both(J *j, gcc_jit_rvalue *a, gcc_jit_rvalue *b) {
  if (!a || !b) return a ? a : b;
  return gcc_jit_context_new_binary_op(j->c, NULL, GCC_JIT_BINARY_OP_LOGICAL_AND, gcc_jit_context_get_type(j->c, GCC_JIT_TYPE_BOOL), a, b);
}

/* An operand's cell at role values: val[0] a row number, val[1] a column (n) and val[2]
 * a k number (NULL: left as they are), plus `plus` (NULL: 0) in its flat index. */
static gcc_jit_lvalue *cell_at(J *j, const Kernel *k, const Access *acc, gcc_jit_rvalue *const val[3], gcc_jit_rvalue *plus) {
  if (val[0]) set_rows(j, k, val[0]);
  if (val[1]) set_digits(j, k->nd.var, k->nd.ext, k->nd.n, val[1]);
  if (val[2]) set_ks(j, k, val[2]);
  gcc_jit_rvalue *i = js_aff(j, &acc->flat);
  return at(j, jm_buf(j, acc->buf), plus ? add(j, i, plus) : i);
}

static gcc_jit_lvalue *cell(J *j, const Kernel *k, const Access *acc, gcc_jit_rvalue *const val[3]) {
  return cell_at(j, k, acc, val, NULL);
}

/* if (cond) { then } else { other }: branch leaves j->blk in `then`; branch_else moves
 * to `other`, branch_end joins. */
typedef struct Branch {
  gcc_jit_block *other, *after;
} Branch;

static Branch branch(J *j, gcc_jit_rvalue *cond) {
  gcc_jit_block *then = js_new_block(j, j->fn);
  Branch b = {js_new_block(j, j->fn), js_new_block(j, j->fn)};
  gcc_jit_block_end_with_conditional(j->blk, NULL, cond, then, b.other);
  j->blk = then;
  return b;
}

static void branch_else(J *j, Branch *b) {
  gcc_jit_block_end_with_jump(j->blk, NULL, b->after);
  j->blk = b->other;
}

static void branch_end(J *j, Branch *b) {
  gcc_jit_block_end_with_jump(j->blk, NULL, b->after);
  j->blk = b->after;
}

/* A long local holding v: a value hoisted out of a loop. */
static gcc_jit_rvalue *hoist_long(J *j, gcc_jit_rvalue *v) {
  gcc_jit_lvalue *l = local(j, j->t_long, "base");
  set(j, l, v);
  return lv(l);
}

/* The packed panels' cell of tile row (or column) `tile`, step kk, lane e:
 * tile*kb + kk*width + e (a tile of `width` lanes holds kb steps contiguously). */
static gcc_jit_rvalue *panel_at(J *j, K *x, gcc_jit_lvalue *tile, int width) {
  gcc_jit_rvalue *base = gcc_jit_context_new_binary_op(j->c, NULL, GCC_JIT_BINARY_OP_MULT, j->t_long, lv(tile), lv(x->kb));
  return add(j, add(j, base, mul(j, width, lv(x->kk))), lv(x->e));
}

/* panel[pi] = the operand's cell at the current variables where ok holds (NULL:
 * always), else 0. */
static void pack_cell(J *j, K *x, gcc_jit_lvalue *panel, gcc_jit_rvalue *pi, const Access *acc, gcc_jit_rvalue *ok) {
  Branch g = ok ? branch(j, ok) : (Branch){0};
  gcc_jit_rvalue *val[3] = {NULL, NULL, NULL};
  set(j, at(j, panel, pi), lv(cell(j, x->k, acc, val)));
  if (ok) {
    branch_else(j, &g);
    set(j, at(j, panel, pi), gcc_jit_context_zero(j->c, x->t));
    branch_end(j, &g);
  }
}

static gcc_jit_lvalue *vec_at(J *j, K *x, gcc_jit_lvalue *arr, gcc_jit_rvalue *i) {
  gcc_jit_rvalue *p = gcc_jit_lvalue_get_address(at(j, arr, i), NULL);
  return gcc_jit_rvalue_dereference(gcc_jit_context_new_cast(j->c, NULL, p, x->vptr), NULL);
}

/* B's packed cell of panel jr, step kk, lane e: in the staging panel pan[kk*nr + e]
 * when there is one, else bp (panel_at). */
static gcc_jit_lvalue *b_slot(J *j, K *x, gcc_jit_lvalue *pan) {
  if (pan) return at(j, pan, add(j, mul(j, x->k->nr, lv(x->kk)), lv(x->e)));
  return at(j, x->bp, panel_at(j, x, x->jr, x->k->nr));
}

/* One step of a panel with column runs (Kernel.b_runs; the n digits are the panel's):
 * B's guards once, then nr lanes at +e (panels are always whole: nr divides the fastest
 * n extent and nc). */
static void pack_b_run(J *j, K *x, const Access *acc, gcc_jit_lvalue *pan) {
  const Kernel *k = x->k;
  gcc_jit_rvalue *ok = guards_ok(j, k->b_guards, k->nb_guards);
  Branch b = branch(j, ok ? ok : gcc_jit_context_one(j->c, gcc_jit_context_get_type(j->c, GCC_JIT_TYPE_BOOL)));
  gcc_jit_rvalue *base = hoist_long(j, js_aff(j, &acc->flat));
  Loop l3 = loop_begin(j, x->e, num(j, 0), num(j, k->nr), 1);
  set(j, b_slot(j, x, pan), lv(at(j, jm_buf(j, acc->buf), add(j, base, lv(x->e)))));
  loop_end(j, &l3);
  branch_else(j, &b);
  l3 = loop_begin(j, x->e, num(j, 0), num(j, k->nr), 1);
  set(j, b_slot(j, x, pan), gcc_jit_context_zero(j->c, x->t));
  loop_end(j, &l3);
  branch_end(j, &b);
}

/* One step of a panel, lane by lane: columns past the block and cells outside B's
 * guards are 0. */
static void pack_b_lanes(J *j, K *x, const Access *acc, gcc_jit_lvalue *pan) {
  const Kernel *k = x->k;
  Loop l3 = loop_begin(j, x->e, num(j, 0), num(j, k->nr), 1);
  gcc_jit_rvalue *pi = pan ? add(j, mul(j, k->nr, lv(x->kk)), lv(x->e)) : panel_at(j, x, x->jr, k->nr);
  gcc_jit_lvalue *to = pan ? pan : x->bp;
  gcc_jit_rvalue *off = add(j, lv(x->jr), lv(x->e));
  Branch in = branch(j, less(j, off, lv(x->nb)));
  set_digits(j, k->nd.var, k->nd.ext, k->nd.n, add(j, lv(x->jc), off));
  pack_cell(j, x, to, pi, acc, guards_ok(j, k->b_guards, k->nb_guards));
  branch_else(j, &in);
  set(j, at(j, to, pi), gcc_jit_context_zero(j->c, x->t));
  branch_end(j, &in);
  loop_end(j, &l3);
}

/* Packs the panels from column jr_lo to jr_hi of B's block into
 * bp[jr*kb + kk*nr + e] = B(pc + kk, jc + jr + e); columns past the block and cells
 * outside B's guards are 0; the k digits are set once per step. With a staging panel
 * `pan` (a local array), each panel goes there first and is then copied to bp in
 * vectors: bp is then a pointer gcc cannot tell from the operands' (a parallel kernel's
 * shared block), and packing through it directly stayed scalar, reloading everything
 * after each store. */
static void pack_b(J *j, K *x, const Access *acc, gcc_jit_rvalue *jr_lo, gcc_jit_rvalue *jr_hi, gcc_jit_lvalue *pan) {
  const Kernel *k = x->k;
  Loop l1 = loop_begin(j, x->jr, jr_lo, jr_hi, k->nr);
  if (k->b_runs) set_digits(j, k->nd.var, k->nd.ext, k->nd.n, add(j, lv(x->jc), lv(x->jr)));
  Loop l2 = loop_begin(j, x->kk, num(j, 0), lv(x->kb), 1);
  set_ks(j, k, add(j, lv(x->pc), lv(x->kk)));
  if (k->b_runs) pack_b_run(j, x, acc, pan);
  else pack_b_lanes(j, x, acc, pan);
  loop_end(j, &l2);
  if (pan) { /* bp[jr*kb + i] = pan[i], vw lanes at a time (kb*nr is a multiple of vw) */
    gcc_jit_rvalue *n = gcc_jit_context_new_binary_op(j->c, NULL, GCC_JIT_BINARY_OP_MULT, j->t_long, lv(x->kb), num(j, k->nr));
    gcc_jit_rvalue *base = gcc_jit_context_new_binary_op(j->c, NULL, GCC_JIT_BINARY_OP_MULT, j->t_long, lv(x->jr), lv(x->kb));
    Loop lc = loop_begin(j, x->e, num(j, 0), n, k->vw);
    set(j, vec_at(j, x, x->bp, add(j, base, lv(x->e))), lv(vec_at(j, x, pan, lv(x->e))));
    loop_end(j, &lc);
  }
  loop_end(j, &l1);
}

/* ap[ir*kb + kk*mr + e] over kk: A(row, pc + kk) with the M variables set, or 0 (zero,
 * or outside A's guards). */
static void pack_a_row(J *j, K *x, const Access *acc, bool zero) {
  const Kernel *k = x->k;
  Loop l = loop_begin(j, x->kk, num(j, 0), lv(x->kb), 1);
  gcc_jit_rvalue *pi = panel_at(j, x, x->ir, k->mr);
  if (zero) set(j, at(j, x->ap, pi), gcc_jit_context_zero(j->c, x->t));
  else {
    set_ks(j, k, add(j, lv(x->pc), lv(x->kk)));
    pack_cell(j, x, x->ap, pi, acc, guards_ok(j, k->a_guards, k->na_guards));
  }
  loop_end(j, &l);
}

/* Packs A row by row (the row's M variables and guards once, then its k run); rows past
 * the block or outside the row guards are 0. */
/* One row variable: A in k-major order, the tile's rows innermost (each k step writes
 * one contiguous run of the panel; a row guard is cheap to test per cell). */
static void pack_a_kmajor(J *j, K *x, const Access *acc) {
  const Kernel *k = x->k;
  Loop l1 = loop_begin(j, x->ir, num(j, 0), lv(x->mb), k->mr);
  Loop l2 = loop_begin(j, x->kk, num(j, 0), lv(x->kb), 1);
  set_ks(j, k, add(j, lv(x->pc), lv(x->kk)));
  Loop l3 = loop_begin(j, x->e, num(j, 0), num(j, k->mr), 1);
  gcc_jit_rvalue *pi = panel_at(j, x, x->ir, k->mr);
  gcc_jit_rvalue *off = add(j, lv(x->ir), lv(x->e));
  Branch in = branch(j, less(j, off, lv(x->mb)));
  set_rows(j, k, add(j, lv(x->ic), off));
  pack_cell(j, x, x->ap, pi, acc, both(j, rows_ok(j, k), guards_ok(j, k->a_guards, k->na_guards)));
  branch_else(j, &in);
  set(j, at(j, x->ap, pi), gcc_jit_context_zero(j->c, x->t));
  branch_end(j, &in);
  loop_end(j, &l3);
  loop_end(j, &l2);
  loop_end(j, &l1);
}

static void pack_a(J *j, K *x, const Access *acc) {
  const Kernel *k = x->k;
  if (k->nm == 1) {
    pack_a_kmajor(j, x, acc);
    return;
  }
  Loop l1 = loop_begin(j, x->ir, num(j, 0), lv(x->mb), k->mr);
  Loop l2 = loop_begin(j, x->e, num(j, 0), num(j, k->mr), 1);
  gcc_jit_rvalue *off = add(j, lv(x->ir), lv(x->e));
  Branch in = branch(j, less(j, off, lv(x->mb)));
  set_rows(j, k, add(j, lv(x->ic), off));
  gcc_jit_rvalue *ok = rows_ok(j, k);
  Branch g = branch(j, ok ? ok : gcc_jit_context_one(j->c, gcc_jit_context_get_type(j->c, GCC_JIT_TYPE_BOOL)));
  pack_a_row(j, x, acc, false);
  branch_else(j, &g);
  pack_a_row(j, x, acc, true);
  branch_end(j, &g);
  branch_else(j, &in);
  pack_a_row(j, x, acc, true);
  branch_end(j, &in);
  loop_end(j, &l2);
  loop_end(j, &l1);
}

/* Direct A: arow[r] = &A(row ic + ir + r, pc), or the zero row past the block and
 * outside the row guards. */
static void a_rows(J *j, K *x, const Access *acc) {
  const Kernel *k = x->k;
  for (int r = 0; r < k->mr; r++) {
    gcc_jit_rvalue *off = add(j, lv(x->ir), num(j, r));
    set(j, x->arow[r], gcc_jit_lvalue_get_address(at(j, x->zrow, num(j, 0)), NULL));
    Branch in = branch(j, less(j, off, lv(x->mb)));
    set_rows(j, k, add(j, lv(x->ic), off));
    gcc_jit_rvalue *ok = rows_ok(j, k);
    Branch g = ok ? branch(j, ok) : (Branch){0};
    gcc_jit_rvalue *val[3] = {NULL, NULL, lv(x->pc)};
    set(j, x->arow[r], gcc_jit_lvalue_get_address(cell(j, k, acc, val), NULL));
    if (ok) {
      branch_else(j, &g);
      branch_end(j, &g);
    }
    branch_else(j, &in);
    branch_end(j, &in);
  }
}

/* The register tile: acc[r][v] += broadcast(ap[abase + kk*mr + r]) * bp[bbase + kk*nr + v*vw ...]
 * over kk < kb, then stored to ct. */
static void micro_body(J *j, K *x, gcc_jit_rvalue *abase, gcc_jit_rvalue *bbase) {
  const Kernel *k = x->k;
  int nv = k->nr / k->vw;
  gcc_jit_rvalue **zero = ANEWN(j->a, gcc_jit_rvalue *, k->vw), **bc = ANEWN(j->a, gcc_jit_rvalue *, k->vw);
  for (int i = 0; i < k->vw; i++) zero[i] = gcc_jit_context_zero(j->c, x->t), bc[i] = lv(x->a);
  gcc_jit_rvalue *vzero = gcc_jit_context_new_rvalue_from_vector(j->c, NULL, x->vec, (size_t)k->vw, zero);
  for (int i = 0; i < k->mr * nv; i++) set(j, x->acc[i], vzero);
  Loop l = loop_begin(j, x->kk, num(j, 0), lv(x->kb), 1);
  for (int v = 0; v < nv; v++)
    set(j, x->bv[v], lv(vec_at(j, x, x->bp, add(j, add(j, bbase, mul(j, k->nr, lv(x->kk))), num(j, v * k->vw)))));
  for (int r = 0; r < k->mr; r++) {
    if (k->direct_a) set(j, x->a, lv(gcc_jit_context_new_array_access(j->c, NULL, lv(x->arow[r]), lv(x->kk))));
    else set(j, x->a, lv(at(j, x->ap, add(j, add(j, abase, mul(j, k->mr, lv(x->kk))), num(j, r)))));
    gcc_jit_rvalue *av = gcc_jit_context_new_rvalue_from_vector(j->c, NULL, x->vec, (size_t)k->vw, bc);
    for (int v = 0; v < nv; v++)
      gcc_jit_block_add_assignment_op(j->blk, NULL, x->acc[r * nv + v], GCC_JIT_BINARY_OP_PLUS,
                                      gcc_jit_context_new_binary_op(j->c, NULL, GCC_JIT_BINARY_OP_MULT, x->vec, av, lv(x->bv[v])));
  }
  loop_end(j, &l);
  for (int r = 0; r < k->mr; r++)
    for (int v = 0; v < nv; v++) set(j, vec_at(j, x, x->ct, num(j, r * k->nr + v * k->vw)), lv(x->acc[r * nv + v]));
}

/* The register tile in a function of its own (packed A): gcc allocates the registers
 * of the kernel's function as a whole, and packing code around the tile loop (a
 * vectorized, masked pack of A) had it keep a B vector on the stack, read by every FMA
 * (a weight gradient's kernel 1.5x slower than the same product laid out as a plain
 * matmul). The function takes the panels and the tile, and owns its accumulators. */
static void micro(J *j, K *x) {
  const Kernel *k = x->k;
  gcc_jit_rvalue *abase = gcc_jit_context_new_binary_op(j->c, NULL, GCC_JIT_BINARY_OP_MULT, j->t_long, lv(x->ir), lv(x->kb));
  gcc_jit_rvalue *bbase = gcc_jit_context_new_binary_op(j->c, NULL, GCC_JIT_BINARY_OP_MULT, j->t_long, lv(x->jr), lv(x->kb));
  if (k->direct_a) {
    micro_body(j, x, abase, bbase);
    return;
  }
  gcc_jit_type *tp = gcc_jit_type_get_pointer(x->t);
  gcc_jit_param *ps[4] = {gcc_jit_context_new_param(j->c, NULL, tp, "ap"), gcc_jit_context_new_param(j->c, NULL, tp, "bp"),
                          gcc_jit_context_new_param(j->c, NULL, tp, "ct"), gcc_jit_context_new_param(j->c, NULL, j->t_long, "kb")};
  gcc_jit_function *fn = gcc_jit_context_new_function(j->c, NULL, GCC_JIT_FUNCTION_INTERNAL, j->t_void,
                                                      arena_printf(j->a, "tdsl_tile_%d", j->nblocks++), 4, ps, 0);
  gcc_jit_rvalue *args[4] = {gcc_jit_lvalue_get_address(at(j, x->ap, abase), NULL), gcc_jit_lvalue_get_address(at(j, x->bp, bbase), NULL),
                             gcc_jit_lvalue_get_address(at(j, x->ct, num(j, 0)), NULL), lv(x->kb)};
  gcc_jit_block_add_eval(j->blk, NULL, gcc_jit_context_new_call(j->c, NULL, fn, 4, args));
  gcc_jit_function *saved_fn = j->fn;
  gcc_jit_block *saved_blk = j->blk;
  j->fn = fn;
  j->blk = js_new_block(j, fn);
  K y = *x;
  y.ap = gcc_jit_param_as_lvalue(ps[0]), y.bp = gcc_jit_param_as_lvalue(ps[1]), y.ct = gcc_jit_param_as_lvalue(ps[2]);
  y.kb = gcc_jit_param_as_lvalue(ps[3]);
  y.kk = local(j, j->t_long, "kk");
  int nv = k->nr / k->vw;
  y.acc = ANEWN(j->a, gcc_jit_lvalue *, k->mr * nv);
  for (int i = 0; i < k->mr * nv; i++) y.acc[i] = local(j, x->vec, "acc");
  y.bv = ANEWN(j->a, gcc_jit_lvalue *, nv);
  for (int v = 0; v < nv; v++) y.bv[v] = local(j, x->vec, "bv");
  y.a = local(j, x->t, "a");
  micro_body(j, &y, num(j, 0), num(j, 0));
  gcc_jit_block_end_with_void_return(j->blk, NULL);
  j->fn = saved_fn;
  j->blk = saved_blk;
}

/* dst(row ic + ir + r, jc + jr + c) += ct[r*nr + c] (first: = init + ct[...]) for the
 * rows and columns in range, skipping rows outside the row guards. */
static void update_cells(J *j, K *x, const Access *dst, bool first) {
  const Kernel *k = x->k;
  Loop l1 = loop_begin(j, x->r, num(j, 0), lv(x->mrr), 1);
  set_rows(j, k, add(j, add(j, lv(x->ic), lv(x->ir)), lv(x->r)));
  gcc_jit_rvalue *ok = rows_ok(j, k);
  Branch g = ok ? branch(j, ok) : (Branch){0};
  /* column runs (Kernel.c_runs): the n digits once per tile row, the cells at +c */
  if (k->c_runs) set_digits(j, k->nd.var, k->nd.ext, k->nd.n, add(j, lv(x->jc), lv(x->jr)));
  Loop l2 = loop_begin(j, x->c, num(j, 0), lv(x->nrr), 1);
  gcc_jit_rvalue *val[3] = {NULL, k->c_runs ? NULL : add(j, add(j, lv(x->jc), lv(x->jr)), lv(x->c)), NULL};
  gcc_jit_rvalue *t = lv(at(j, x->ct, add(j, mul(j, k->nr, lv(x->r)), lv(x->c))));
  gcc_jit_lvalue *d = cell_at(j, k, dst, val, k->c_runs ? lv(x->c) : NULL);
  if (first)
    set(j, d,
        gcc_jit_context_new_binary_op(j->c, NULL, GCC_JIT_BINARY_OP_PLUS, x->t,
                                      gcc_jit_context_new_rvalue_from_double(j->c, x->t, k->init), t));
  else gcc_jit_block_add_assignment_op(j->blk, NULL, d, GCC_JIT_BINARY_OP_PLUS, t);
  loop_end(j, &l2);
  if (ok) {
    branch_else(j, &g);
    branch_end(j, &g);
  }
  loop_end(j, &l1);
}

/* The epilogue (Kernel.epilogue) on the row block's final cells of columns [c_lo, c_hi)
 * (those this call computed), after the last k block (its cells are still in L2; run
 * per register tile, its stores had evicted the packed panels: 8% slower than a pass of
 * its own). */
static void epilogue(J *j, K *x, gcc_jit_rvalue *c_lo, gcc_jit_rvalue *c_hi) {
  const Kernel *k = x->k;
  Branch b = branch(j, gcc_jit_context_new_comparison(j->c, NULL, GCC_JIT_COMPARISON_EQ, add(j, lv(x->pc), lv(x->kb)), num(j, k->ext[2])));
  Loop l1 = loop_begin(j, x->r, num(j, 0), lv(x->mb), 1);
  set_rows(j, k, add(j, lv(x->ic), lv(x->r)));
  Loop l2 = loop_begin(j, x->c, c_lo, c_hi, 1);
  set(j, j->vars[k->var[1]], add(j, lv(x->jc), lv(x->c)));
  js_emit_stmts(j, &k->epilogue);
  loop_end(j, &l2);
  loop_end(j, &l1);
  branch_else(j, &b);
  branch_end(j, &b);
}

/* The tile into dst; an overwriting kernel (Kernel.overwrite) stores in its first k block. */
static void update(J *j, K *x, const Access *dst) {
  const Kernel *k = x->k;
  set_min(j, x->mrr, add(j, lv(x->mb), gcc_jit_context_new_unary_op(j->c, NULL, GCC_JIT_UNARY_OP_MINUS, j->t_long, lv(x->ir))), k->mr);
  set_min(j, x->nrr, add(j, lv(x->nb), gcc_jit_context_new_unary_op(j->c, NULL, GCC_JIT_UNARY_OP_MINUS, j->t_long, lv(x->jr))), k->nr);
  if (!k->overwrite) {
    update_cells(j, x, dst, false);
    return;
  }
  Branch b = branch(j, gcc_jit_context_new_comparison(j->c, NULL, GCC_JIT_COMPARISON_EQ, lv(x->pc), num(j, 0)));
  update_cells(j, x, dst, true);
  branch_else(j, &b);
  update_cells(j, x, dst, false);
  branch_end(j, &b);
}

static gcc_jit_lvalue *scratch(J *j, gcc_jit_type *t, long n, const char *name) {
  gcc_jit_lvalue *s = local(j, gcc_jit_context_new_array_type(j->c, NULL, t, (int)n), name);
  gcc_jit_lvalue_set_alignment(s, 64);
  return s;
}

/* The locals of the kernel's inner loops in the function being built (the block's jc,
 * pc, nb, kb and bp are the caller's business). */
static K kernel_locals(J *j, const Kernel *k) {
  int el = VEC_AT(j->m->bufs, IrBuf, k->store->dst.buf)->elem, nv = k->nr / k->vw;
  K x = {.k = k, .t = j->t_el[el]};
  x.vec = gcc_jit_type_get_vector(x.t, (size_t)k->vw);
  x.vptr = gcc_jit_type_get_pointer(x.vec);
  x.ap = k->direct_a ? NULL : scratch(j, x.t, (long)k->mc * k->kc, "Ap");
  x.ct = scratch(j, x.t, (long)k->mr * k->nr, "ct");
  gcc_jit_lvalue **lvs[] = {&x.ic, &x.jr, &x.ir, &x.kk, &x.e, &x.r, &x.c, &x.mb, &x.mrr, &x.nrr};
  for (size_t i = 0; i < sizeof lvs / sizeof *lvs; i++) *lvs[i] = local(j, j->t_long, "k");
  x.acc = ANEWN(j->a, gcc_jit_lvalue *, k->mr * nv);
  for (int i = 0; i < k->mr * nv; i++) x.acc[i] = local(j, x.vec, "acc");
  x.bv = ANEWN(j->a, gcc_jit_lvalue *, nv);
  for (int v = 0; v < nv; v++) x.bv[v] = local(j, x.vec, "bv");
  x.a = local(j, x.t, "a");
  if (k->direct_a) {
    x.zrow = scratch(j, x.t, k->kc, "zrow");
    x.arow = ANEWN(j->a, gcc_jit_lvalue *, k->mr);
    for (int r = 0; r < k->mr; r++) x.arow[r] = local(j, gcc_jit_type_get_pointer(x.t), "arow");
    Loop lz = loop_begin(j, x.kk, num(j, 0), num(j, k->kc), 1);
    set(j, at(j, x.zrow, lv(x.kk)), gcc_jit_context_zero(j->c, x.t));
    loop_end(j, &lz);
  }
  return x;
}

static gcc_jit_rvalue *neg(J *j, gcc_jit_lvalue *v) {
  return gcc_jit_context_new_unary_op(j->c, NULL, GCC_JIT_UNARY_OP_MINUS, j->t_long, lv(v));
}

/* Rows [row_lo, row_hi) times the panels from column jr_lo to jr_hi of the packed B
 * block: row blocks (mc; pack A), then register tiles nr x mr. */
static void kernel_block(J *j, K *x, gcc_jit_rvalue *row_lo, gcc_jit_rvalue *row_hi, gcc_jit_rvalue *jr_lo, gcc_jit_rvalue *jr_hi) {
  const Kernel *k = x->k;
  const Access *A = &k->store->val->a[k->a_arg]->acc;
  Loop lic = loop_begin(j, x->ic, row_lo, row_hi, k->mc);
  set_min(j, x->mb, add(j, row_hi, neg(j, x->ic)), k->mc);
  if (!k->direct_a) pack_a(j, x, A);
  Loop ljr = loop_begin(j, x->jr, jr_lo, jr_hi, k->nr);
  Loop lir = loop_begin(j, x->ir, num(j, 0), lv(x->mb), k->mr);
  if (k->direct_a) a_rows(j, x, A);
  micro(j, x);
  update(j, x, &k->store->dst);
  loop_end(j, &lir);
  loop_end(j, &ljr);
  if (k->epilogue.len) epilogue(j, x, jr_lo, jr_hi);
  loop_end(j, &lic);
}

/* BLIS loop order: column blocks (nc), k blocks (kc; pack B), then kernel_block over
 * the rows; body(j, x, arg) does one block, given jc, pc, nb, kb and bp. */
static void kernel_blocks(J *j, K *x, void (*body)(J *, K *, void *), void *arg) {
  const Kernel *k = x->k;
  x->bp = scratch(j, x->t, (long)k->kc * k->nc, "Bp");
  gcc_jit_lvalue **lvs[] = {&x->jc, &x->pc, &x->nb, &x->kb};
  for (size_t i = 0; i < sizeof lvs / sizeof *lvs; i++) *lvs[i] = local(j, j->t_long, "k");
  Loop ljc = loop_begin(j, x->jc, num(j, 0), num(j, k->ext[1]), k->nc);
  set_min(j, x->nb, add(j, num(j, k->ext[1]), neg(j, x->jc)), k->nc);
  Loop lpc = loop_begin(j, x->pc, num(j, 0), num(j, k->ext[2]), k->kc);
  set_min(j, x->kb, add(j, num(j, k->ext[2]), neg(j, x->pc)), k->kc);
  body(j, x, arg);
  loop_end(j, &lpc);
  loop_end(j, &ljc);
}

static void serial_block(J *j, K *x, void *arg) {
  pack_b(j, x, &x->k->store->val->a[1 - x->k->a_arg]->acc, num(j, 0), lv(x->nb), NULL);
  kernel_block(j, x, num(j, 0), num(j, x->k->ext[0]), num(j, 0), lv(x->nb));
}

/* ---- parallel loops ---- */

/* The runtime's thread pool, in the instance header (set by tdsl_open; NULL: serial):
 *   slot 2: void (*)(void *rt, void (*fn)(void *, long, long), void *arg, long n)
 *   slot 3: void *rt
 * fn gets the instance as its arg. */
static gcc_jit_rvalue *header_slot(J *j, int k) {
  gcc_jit_rvalue *hdr = gcc_jit_lvalue_as_rvalue(gcc_jit_rvalue_dereference_field(j->self, NULL, j->inst.header));
  return gcc_jit_lvalue_as_rvalue(gcc_jit_context_new_array_access(j->c, NULL, hdr, gcc_jit_context_new_rvalue_from_int(j->c, j->t_int, k)));
}

/* Runs f(arg, lo, hi) over [0, n) through the pool hook (serially when there is none). */
static void call_parallel(J *j, gcc_jit_function *f, gcc_jit_rvalue *arg, gcc_jit_rvalue *n) {
  gcc_jit_type *vp = gcc_jit_context_get_type(j->c, GCC_JIT_TYPE_VOID_PTR);
  gcc_jit_type *fargs[3] = {vp, j->t_long, j->t_long};
  gcc_jit_type *fnp = gcc_jit_context_new_function_ptr_type(j->c, NULL, j->t_void, 3, fargs, 0);
  gcc_jit_type *hargs[4] = {vp, fnp, vp, j->t_long};
  gcc_jit_type *hookt = gcc_jit_context_new_function_ptr_type(j->c, NULL, j->t_void, 4, hargs, 0);
  gcc_jit_rvalue *fp = gcc_jit_context_new_cast(j->c, NULL, gcc_jit_function_get_address(f, NULL), fnp);
  gcc_jit_rvalue *hook = gcc_jit_context_new_bitcast(j->c, NULL, header_slot(j, 2), hookt);
  arg = gcc_jit_context_new_cast(j->c, NULL, arg, vp);
  gcc_jit_block *pool = js_new_block(j, j->fn), *serial = js_new_block(j, j->fn), *after = js_new_block(j, j->fn);
  gcc_jit_block_end_with_conditional(j->blk, NULL,
                                     gcc_jit_context_new_comparison(j->c, NULL, GCC_JIT_COMPARISON_NE, hook,
                                                                    gcc_jit_context_null(j->c, hookt)),
                                     pool, serial);
  gcc_jit_rvalue *ha[4] = {header_slot(j, 3), fp, arg, n};
  gcc_jit_block_add_eval(pool, NULL, gcc_jit_context_new_call_through_ptr(j->c, NULL, hook, 4, ha));
  gcc_jit_block_end_with_jump(pool, NULL, after);
  gcc_jit_rvalue *sa[3] = {arg, num(j, 0), n};
  gcc_jit_block_add_eval(serial, NULL, gcc_jit_context_new_call(j->c, NULL, f, 3, sa));
  gcc_jit_block_end_with_jump(serial, NULL, after);
  j->blk = after;
}

static int max_var(const Stmt *s) {
  int m = s->kind == S_LOOP ? s->var : -1;
  if (s->kind == S_KERNEL) { /* every variable of the operands and the row guards */
    const Stmt *st = s->kern->store;
    const Aff *fs[3] = {&st->dst.flat, &st->val->a[0]->acc.flat, &st->val->a[1]->acc.flat};
    for (int a = 0; a < 3; a++)
      for (int i = 0; i < fs[a]->n; i++) m = fs[a]->t[i].var > m ? fs[a]->t[i].var : m;
    for (int g = 0; g < s->kern->nrow_guards; g++)
      for (int i = 0; i < s->kern->row_guards[g].aff.n; i++)
        m = s->kern->row_guards[g].aff.t[i].var > m ? s->kern->row_guards[g].aff.t[i].var : m;
  }
  for (int i = 0; i < s->body.len; i++) {
    int v = max_var(s->body.items[i]);
    m = v > m ? v : m;
  }
  if (s->kind == S_STORE || s->kind == S_KERNEL) {
    const Stmt *st = s->kind == S_KERNEL ? s->kern->store : s;
    for (int i = 0; i < st->dst.flat.n; i++) m = st->dst.flat.t[i].var > m ? st->dst.flat.t[i].var : m;
  }
  return m;
}

typedef struct Outlined {
  gcc_jit_function *fn, *saved_fn;
  gcc_jit_rvalue *saved_self;
  gcc_jit_block *saved_blk;
  gcc_jit_lvalue **saved_vars;
  gcc_jit_rvalue *arg, *lo, *hi;
} Outlined;

/* Starts `static void tdsl_par_N(void *arg, long lo, long hi)` with fresh loop
 * variables 0..nvars-1, the instance being arg (argt NULL) or the first field of the
 * struct *arg of type argt (o.arg: arg as an argt *); outline_end returns to the
 * function being built. */
static Outlined outline_begin(J *j, int nvars, gcc_jit_struct *argt) {
  Outlined o = {.saved_fn = j->fn, .saved_self = j->self, .saved_blk = j->blk, .saved_vars = j->vars};
  gcc_jit_param *ps[3] = {gcc_jit_context_new_param(j->c, NULL, gcc_jit_context_get_type(j->c, GCC_JIT_TYPE_VOID_PTR), "arg"),
                          gcc_jit_context_new_param(j->c, NULL, j->t_long, "lo"),
                          gcc_jit_context_new_param(j->c, NULL, j->t_long, "hi")};
  o.fn = gcc_jit_context_new_function(j->c, NULL, GCC_JIT_FUNCTION_INTERNAL, j->t_void,
                                     arena_printf(j->a, "tdsl_par_%d", j->nblocks++), 3, ps, 0);
  if (argt) {
    o.arg = gcc_jit_context_new_cast(j->c, NULL, gcc_jit_param_as_rvalue(ps[0]), gcc_jit_type_get_pointer(gcc_jit_struct_as_type(argt)));
  } else j->self = gcc_jit_context_new_cast(j->c, NULL, gcc_jit_param_as_rvalue(ps[0]), j->inst.ptr);
  o.lo = gcc_jit_param_as_rvalue(ps[1]);
  o.hi = gcc_jit_param_as_rvalue(ps[2]);
  j->fn = o.fn;
  j->blk = js_new_block(j, o.fn);
  if (argt) { /* a local: a store through a pointer from the struct cannot change it */
    gcc_jit_lvalue *self = local(j, j->inst.ptr, "self");
    gcc_jit_rvalue *inst = lv(gcc_jit_rvalue_dereference_field(o.arg, NULL, gcc_jit_struct_get_field(argt, 0)));
    set(j, self, gcc_jit_context_new_cast(j->c, NULL, inst, j->inst.ptr));
    j->self = lv(self);
  }
  j->vars = ANEWN(j->a, gcc_jit_lvalue *, nvars + 1);
  for (int v = 0; v < nvars; v++) j->vars[v] = local(j, j->t_long, "i");
  return o;
}

static void outline_end(J *j, Outlined *o) {
  gcc_jit_block_end_with_void_return(j->blk, NULL);
  j->fn = o->saved_fn;
  j->self = o->saved_self;
  j->blk = o->saved_blk;
  j->vars = o->saved_vars;
}

/* A parallel loop: its body over [lo, hi) outlined, the range split by the pool. */
void js_parallel_loop(J *j, const Stmt *lp) {
  Outlined o = outline_begin(j, max_var(lp) + 1, NULL);
  Loop l = loop_begin(j, j->vars[lp->var], o.lo, o.hi, 1);
  js_emit_stmts(j, &lp->body);
  loop_end(j, &l);
  outline_end(j, &o);
  call_parallel(j, o.fn, j->self, js_ext(j, lp->ext, lp->dext));
}

/* ---- parallel kernels ---- */

/* A parallel kernel packs each block of B once, split among the threads by panels, and
 * then splits the product by row tiles (or, with fewer row tiles than panels, by
 * panels): two pool loops per block, both outlined, which share the block through
 * a struct on the caller's stack: the instance, the packed block, jc, pc, nb, kb. */
enum { KA_INST, KA_BP, KA_JC, KA_PC, KA_NB, KA_KB, KA__COUNT };

typedef struct KPar {
  const Stmt *s;
  gcc_jit_struct *argt;
  gcc_jit_lvalue *args; /* the caller's struct */
} KPar;

static gcc_jit_field *ka_field(KPar *p, int f) { return gcc_jit_struct_get_field(p->argt, f); }

/* In an outlined function: the block's variables from the struct. */
static void block_from_args(J *j, K *x, KPar *p, gcc_jit_rvalue *arg) {
  gcc_jit_lvalue **lvs[] = {[KA_JC] = &x->jc, [KA_PC] = &x->pc, [KA_NB] = &x->nb, [KA_KB] = &x->kb};
  x->bp = local(j, gcc_jit_type_get_pointer(x->t), "bp");
  set(j, x->bp, lv(gcc_jit_rvalue_dereference_field(arg, NULL, ka_field(p, KA_BP))));
  for (int f = KA_JC; f < KA__COUNT; f++) {
    *lvs[f] = local(j, j->t_long, "k");
    set(j, *lvs[f], lv(gcc_jit_rvalue_dereference_field(arg, NULL, ka_field(p, f))));
  }
}

/* ceil(v / d) */
static gcc_jit_rvalue *tiles(J *j, gcc_jit_rvalue *v, long d) { return binop(j, GCC_JIT_BINARY_OP_DIVIDE, add(j, v, num(j, d - 1)), d); }

/* hi * step, at most cap */
static gcc_jit_rvalue *range_end(J *j, gcc_jit_rvalue *hi, long step, gcc_jit_rvalue *cap) {
  gcc_jit_lvalue *r = local(j, j->t_long, "end");
  set(j, r, mul(j, step, hi));
  gcc_jit_block *clamp = js_new_block(j, j->fn), *go = js_new_block(j, j->fn);
  gcc_jit_block_end_with_conditional(j->blk, NULL, less(j, cap, lv(r)), clamp, go);
  gcc_jit_block_add_assignment(clamp, NULL, r, cap);
  gcc_jit_block_end_with_jump(clamp, NULL, go);
  j->blk = go;
  return lv(r);
}

static void parallel_block(J *j, K *x, void *arg) {
  KPar *p = arg;
  const Kernel *k = x->k;
  gcc_jit_rvalue *vals[KA__COUNT] = {gcc_jit_context_new_cast(j->c, NULL, j->self, gcc_jit_context_get_type(j->c, GCC_JIT_TYPE_VOID_PTR)),
                                     gcc_jit_lvalue_get_address(at(j, x->bp, num(j, 0)), NULL),
                                     lv(x->jc), lv(x->pc), lv(x->nb), lv(x->kb)};
  for (int f = 0; f < KA__COUNT; f++) set(j, gcc_jit_lvalue_access_field(p->args, NULL, ka_field(p, f)), vals[f]);
  gcc_jit_rvalue *argp = gcc_jit_lvalue_get_address(p->args, NULL);
  /* pack: panels [lo, hi) */
  Outlined o = outline_begin(j, max_var(p->s) + 1, p->argt);
  K y = {.k = k, .t = x->t, .vptr = gcc_jit_type_get_pointer(gcc_jit_type_get_vector(x->t, (size_t)k->vw))};
  y.jr = local(j, j->t_long, "k"), y.kk = local(j, j->t_long, "k"), y.e = local(j, j->t_long, "k");
  block_from_args(j, &y, p, o.arg);
  pack_b(j, &y, &k->store->val->a[1 - k->a_arg]->acc, mul(j, k->nr, o.lo), range_end(j, o.hi, k->nr, lv(y.nb)),
         scratch(j, x->t, (long)k->kc * k->nr, "pan"));
  outline_end(j, &o);
  call_parallel(j, o.fn, argp, tiles(j, lv(x->nb), k->nr));
  /* the product: row tiles or panels [lo, hi) */
  o = outline_begin(j, max_var(p->s) + 1, p->argt);
  y = kernel_locals(j, k);
  block_from_args(j, &y, p, o.arg);
  if (k->split_cols) kernel_block(j, &y, num(j, 0), num(j, k->ext[0]), mul(j, k->nr, o.lo), range_end(j, o.hi, k->nr, lv(y.nb)));
  else kernel_block(j, &y, mul(j, k->mr, o.lo), range_end(j, o.hi, k->mr, num(j, k->ext[0])), num(j, 0), lv(y.nb));
  outline_end(j, &o);
  call_parallel(j, o.fn, argp, k->split_cols ? tiles(j, lv(x->nb), k->nr) : num(j, (k->ext[0] + k->mr - 1) / k->mr));
}

void js_kernel(J *j, const Stmt *s) {
  const Kernel *k = s->kern;
  if (!k->parallel) {
    K x = kernel_locals(j, k);
    kernel_blocks(j, &x, serial_block, NULL);
    return;
  }
  K x = {.k = k, .t = j->t_el[VEC_AT(j->m->bufs, IrBuf, k->store->dst.buf)->elem]};
  gcc_jit_type *vp = gcc_jit_context_get_type(j->c, GCC_JIT_TYPE_VOID_PTR);
  gcc_jit_type *ft[KA__COUNT] = {vp, gcc_jit_type_get_pointer(x.t), j->t_long, j->t_long, j->t_long, j->t_long};
  static const char *const names[KA__COUNT] = {"inst", "bp", "jc", "pc", "nb", "kb"};
  gcc_jit_field *fs[KA__COUNT];
  for (int f = 0; f < KA__COUNT; f++) fs[f] = gcc_jit_context_new_field(j->c, NULL, ft[f], names[f]);
  KPar p = {.s = s, .argt = gcc_jit_context_new_struct_type(j->c, NULL, arena_printf(j->a, "tdsl_kargs%d", j->nblocks++), KA__COUNT, fs)};
  p.args = local(j, gcc_jit_struct_as_type(p.argt), "kargs");
  kernel_blocks(j, &x, parallel_block, &p);
}

/* ---- prefetches ---- */

void js_prefetch(J *j, const Stmt *s) {
  gcc_jit_function *pf = gcc_jit_context_get_builtin_function(j->c, "__builtin_prefetch");
  int esize = VEC_AT(j->m->bufs, IrBuf, s->dst.buf)->elem == ELEM_F64 ? 8 : 4;
  gcc_jit_type *vp = gcc_jit_type_get_const(gcc_jit_context_get_type(j->c, GCC_JIT_TYPE_VOID));
  vp = gcc_jit_type_get_pointer(vp);
  for (long c = 0; c < s->ext; c += 64 / esize) {
    gcc_jit_lvalue *cellv = at(j, jm_buf(j, s->dst.buf), add(j, js_aff(j, &s->dst.flat), num(j, c)));
    gcc_jit_rvalue *args[3] = {gcc_jit_context_new_cast(j->c, NULL, gcc_jit_lvalue_get_address(cellv, NULL), vp),
                               gcc_jit_context_new_rvalue_from_int(j->c, j->t_int, 1),
                               gcc_jit_context_new_rvalue_from_int(j->c, j->t_int, 3)};
    gcc_jit_block_add_eval(j->blk, NULL, gcc_jit_context_new_call(j->c, NULL, pf, 3, args));
  }
}
