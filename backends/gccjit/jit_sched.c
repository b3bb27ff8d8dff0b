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
  long full = lp->ext / U * U;
  Loop l = loop_begin(j, base, num(j, 0), num(j, full), U);
  for (int u = 0; u < U; u++) {
    set(j, var, add(j, lv(base), num(j, u)));
    partial(j, st, sum[u], el);
  }
  loop_end(j, &l);
  l = loop_begin(j, var, num(j, full), num(j, lp->ext), 1);
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
} K;

/* An operand's cell at role-variable values: base(other variables) + coefficients. */
static gcc_jit_lvalue *cell(J *j, const Kernel *k, const Access *acc, gcc_jit_rvalue *const val[3]) {
  Aff rest = aff_drop(j->a, &acc->flat, k->var, 3);
  gcc_jit_rvalue *idx = js_aff(j, &rest);
  for (int d = 0; d < 3; d++) {
    long c = aff_coef(&acc->flat, k->var[d]);
    if (c) idx = add(j, idx, mul(j, c, val[d]));
  }
  return at(j, jm_buf(j, acc->buf), idx);
}

/* Packs A (a_side) into ap[ir*kb + kk*mr + e] = A(ic + ir + e, pc + kk), or B into
 * bp[jr*kb + kk*nr + e] = B(pc + kk, jc + jr + e); rows/columns past the block are 0. */
static void pack(J *j, K *x, const Access *acc, bool a_side) {
  const Kernel *k = x->k;
  int tile = a_side ? k->mr : k->nr;
  gcc_jit_lvalue *o = a_side ? x->ir : x->jr, *blk = a_side ? x->mb : x->nb, *p = a_side ? x->ap : x->bp;
  gcc_jit_lvalue *o0 = a_side ? x->ic : x->jc;
  Loop l1 = loop_begin(j, o, num(j, 0), lv(blk), tile);
  Loop l2 = loop_begin(j, x->kk, num(j, 0), lv(x->kb), 1);
  Loop l3 = loop_begin(j, x->e, num(j, 0), num(j, tile), 1);
  gcc_jit_rvalue *pi = add(j, add(j, gcc_jit_context_new_binary_op(j->c, NULL, GCC_JIT_BINARY_OP_MULT, j->t_long, lv(o), lv(x->kb)),
                                  mul(j, tile, lv(x->kk))), lv(x->e));
  gcc_jit_lvalue *dst = at(j, p, pi);
  gcc_jit_rvalue *off = add(j, lv(o), lv(x->e));
  gcc_jit_block *in = js_new_block(j, j->fn), *pad = js_new_block(j, j->fn), *next = js_new_block(j, j->fn);
  gcc_jit_block_end_with_conditional(j->blk, NULL, less(j, off, lv(blk)), in, pad);
  gcc_jit_rvalue *row = add(j, lv(o0), off), *kv = add(j, lv(x->pc), lv(x->kk));
  gcc_jit_rvalue *val[3] = {a_side ? row : NULL, a_side ? NULL : row, kv};
  j->blk = in;
  set(j, dst, lv(cell(j, k, acc, val)));
  gcc_jit_block_end_with_jump(in, NULL, next);
  gcc_jit_block_add_assignment(pad, NULL, dst, gcc_jit_context_zero(j->c, x->t));
  gcc_jit_block_end_with_jump(pad, NULL, next);
  j->blk = next;
  loop_end(j, &l3);
  loop_end(j, &l2);
  loop_end(j, &l1);
}

static gcc_jit_lvalue *vec_at(J *j, K *x, gcc_jit_lvalue *arr, gcc_jit_rvalue *i) {
  gcc_jit_rvalue *p = gcc_jit_lvalue_get_address(at(j, arr, i), NULL);
  return gcc_jit_rvalue_dereference(gcc_jit_context_new_cast(j->c, NULL, p, x->vptr), NULL);
}

/* The register tile: acc[r][v] += broadcast(ap[ir*kb + kk*mr + r]) * bp[jr*kb + kk*nr + v*vw ...]
 * over kk < kb, then stored to ct. */
static void micro(J *j, K *x) {
  const Kernel *k = x->k;
  int nv = k->nr / k->vw;
  gcc_jit_rvalue **zero = ANEWN(j->a, gcc_jit_rvalue *, k->vw), **bc = ANEWN(j->a, gcc_jit_rvalue *, k->vw);
  for (int i = 0; i < k->vw; i++) zero[i] = gcc_jit_context_zero(j->c, x->t), bc[i] = lv(x->a);
  gcc_jit_rvalue *vzero = gcc_jit_context_new_rvalue_from_vector(j->c, NULL, x->vec, (size_t)k->vw, zero);
  for (int i = 0; i < k->mr * nv; i++) set(j, x->acc[i], vzero);
  gcc_jit_rvalue *abase = gcc_jit_context_new_binary_op(j->c, NULL, GCC_JIT_BINARY_OP_MULT, j->t_long, lv(x->ir), lv(x->kb));
  gcc_jit_rvalue *bbase = gcc_jit_context_new_binary_op(j->c, NULL, GCC_JIT_BINARY_OP_MULT, j->t_long, lv(x->jr), lv(x->kb));
  Loop l = loop_begin(j, x->kk, num(j, 0), lv(x->kb), 1);
  for (int v = 0; v < nv; v++)
    set(j, x->bv[v], lv(vec_at(j, x, x->bp, add(j, add(j, bbase, mul(j, k->nr, lv(x->kk))), num(j, v * k->vw)))));
  for (int r = 0; r < k->mr; r++) {
    set(j, x->a, lv(at(j, x->ap, add(j, add(j, abase, mul(j, k->mr, lv(x->kk))), num(j, r)))));
    gcc_jit_rvalue *av = gcc_jit_context_new_rvalue_from_vector(j->c, NULL, x->vec, (size_t)k->vw, bc);
    for (int v = 0; v < nv; v++)
      gcc_jit_block_add_assignment_op(j->blk, NULL, x->acc[r * nv + v], GCC_JIT_BINARY_OP_PLUS,
                                      gcc_jit_context_new_binary_op(j->c, NULL, GCC_JIT_BINARY_OP_MULT, x->vec, av, lv(x->bv[v])));
  }
  loop_end(j, &l);
  for (int r = 0; r < k->mr; r++)
    for (int v = 0; v < nv; v++) set(j, vec_at(j, x, x->ct, num(j, r * k->nr + v * k->vw)), lv(x->acc[r * nv + v]));
}

/* dst(ic + ir + r, jc + jr + c) += ct[r*nr + c] (first: = init + ct[...]) for the rows
 * and columns in range. */
static void update_cells(J *j, K *x, const Access *dst, bool first) {
  const Kernel *k = x->k;
  Loop l1 = loop_begin(j, x->r, num(j, 0), lv(x->mrr), 1);
  Loop l2 = loop_begin(j, x->c, num(j, 0), lv(x->nrr), 1);
  gcc_jit_rvalue *val[3] = {add(j, add(j, lv(x->ic), lv(x->ir)), lv(x->r)), add(j, add(j, lv(x->jc), lv(x->jr)), lv(x->c)), NULL};
  gcc_jit_rvalue *t = lv(at(j, x->ct, add(j, mul(j, k->nr, lv(x->r)), lv(x->c))));
  if (first)
    set(j, cell(j, k, dst, val),
        gcc_jit_context_new_binary_op(j->c, NULL, GCC_JIT_BINARY_OP_PLUS, x->t,
                                      gcc_jit_context_new_rvalue_from_double(j->c, x->t, k->init), t));
  else gcc_jit_block_add_assignment_op(j->blk, NULL, cell(j, k, dst, val), GCC_JIT_BINARY_OP_PLUS, t);
  loop_end(j, &l2);
  loop_end(j, &l1);
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
  gcc_jit_block *first = js_new_block(j, j->fn), *rest = js_new_block(j, j->fn), *after = js_new_block(j, j->fn);
  gcc_jit_block_end_with_conditional(j->blk, NULL, gcc_jit_context_new_comparison(j->c, NULL, GCC_JIT_COMPARISON_EQ, lv(x->pc), num(j, 0)),
                                     first, rest);
  j->blk = first;
  update_cells(j, x, dst, true);
  gcc_jit_block_end_with_jump(j->blk, NULL, after);
  j->blk = rest;
  update_cells(j, x, dst, false);
  gcc_jit_block_end_with_jump(j->blk, NULL, after);
  j->blk = after;
}

static gcc_jit_lvalue *scratch(J *j, gcc_jit_type *t, long n, const char *name) {
  gcc_jit_lvalue *s = local(j, gcc_jit_context_new_array_type(j->c, NULL, t, (int)n), name);
  gcc_jit_lvalue_set_alignment(s, 64);
  return s;
}

/* BLIS loop order: column blocks (nc), k blocks (kc; pack B), row blocks (mc; pack A),
 * then register tiles nr x mr; rows [row_lo, row_hi). */
static void kernel_rows(J *j, const Kernel *k, gcc_jit_rvalue *row_lo, gcc_jit_rvalue *row_hi) {
  const Stmt *st = k->store;
  const Access *A = &st->val->a[k->a_arg]->acc, *B = &st->val->a[1 - k->a_arg]->acc;
  int el = VEC_AT(j->m->bufs, IrBuf, st->dst.buf)->elem, nv = k->nr / k->vw;
  K x = {.k = k, .t = j->t_el[el]};
  x.vec = gcc_jit_type_get_vector(x.t, (size_t)k->vw);
  x.vptr = gcc_jit_type_get_pointer(x.vec);
  x.ap = scratch(j, x.t, (long)k->mc * k->kc, "Ap");
  x.bp = scratch(j, x.t, (long)k->kc * k->nc, "Bp");
  x.ct = scratch(j, x.t, (long)k->mr * k->nr, "ct");
  gcc_jit_lvalue **lvs[] = {&x.jc, &x.pc, &x.ic, &x.jr, &x.ir, &x.kk, &x.e, &x.r, &x.c, &x.nb, &x.kb, &x.mb, &x.mrr, &x.nrr};
  for (size_t i = 0; i < sizeof lvs / sizeof *lvs; i++) *lvs[i] = local(j, j->t_long, "k");
  x.acc = ANEWN(j->a, gcc_jit_lvalue *, k->mr * nv);
  for (int i = 0; i < k->mr * nv; i++) x.acc[i] = local(j, x.vec, "acc");
  x.bv = ANEWN(j->a, gcc_jit_lvalue *, nv);
  for (int v = 0; v < nv; v++) x.bv[v] = local(j, x.vec, "bv");
  x.a = local(j, x.t, "a");
  gcc_jit_rvalue *neg;
  Loop ljc = loop_begin(j, x.jc, num(j, 0), num(j, k->ext[1]), k->nc);
  neg = gcc_jit_context_new_unary_op(j->c, NULL, GCC_JIT_UNARY_OP_MINUS, j->t_long, lv(x.jc));
  set_min(j, x.nb, add(j, num(j, k->ext[1]), neg), k->nc);
  Loop lpc = loop_begin(j, x.pc, num(j, 0), num(j, k->ext[2]), k->kc);
  neg = gcc_jit_context_new_unary_op(j->c, NULL, GCC_JIT_UNARY_OP_MINUS, j->t_long, lv(x.pc));
  set_min(j, x.kb, add(j, num(j, k->ext[2]), neg), k->kc);
  pack(j, &x, B, false);
  Loop lic = loop_begin(j, x.ic, row_lo, row_hi, k->mc);
  neg = gcc_jit_context_new_unary_op(j->c, NULL, GCC_JIT_UNARY_OP_MINUS, j->t_long, lv(x.ic));
  set_min(j, x.mb, add(j, row_hi, neg), k->mc);
  pack(j, &x, A, true);
  Loop ljr = loop_begin(j, x.jr, num(j, 0), lv(x.nb), k->nr);
  Loop lir = loop_begin(j, x.ir, num(j, 0), lv(x.mb), k->mr);
  micro(j, &x);
  update(j, &x, &st->dst);
  loop_end(j, &lir);
  loop_end(j, &ljr);
  loop_end(j, &lic);
  loop_end(j, &lpc);
  loop_end(j, &ljc);
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

static void call_parallel(J *j, gcc_jit_function *f, long n) {
  gcc_jit_type *vp = gcc_jit_context_get_type(j->c, GCC_JIT_TYPE_VOID_PTR);
  gcc_jit_type *fargs[3] = {vp, j->t_long, j->t_long};
  gcc_jit_type *fnp = gcc_jit_context_new_function_ptr_type(j->c, NULL, j->t_void, 3, fargs, 0);
  gcc_jit_type *hargs[4] = {vp, fnp, vp, j->t_long};
  gcc_jit_type *hookt = gcc_jit_context_new_function_ptr_type(j->c, NULL, j->t_void, 4, hargs, 0);
  gcc_jit_rvalue *fp = gcc_jit_context_new_cast(j->c, NULL, gcc_jit_function_get_address(f, NULL), fnp);
  gcc_jit_rvalue *hook = gcc_jit_context_new_bitcast(j->c, NULL, header_slot(j, 2), hookt);
  gcc_jit_rvalue *self = gcc_jit_context_new_cast(j->c, NULL, j->self, vp);
  gcc_jit_block *pool = js_new_block(j, j->fn), *serial = js_new_block(j, j->fn), *after = js_new_block(j, j->fn);
  gcc_jit_block_end_with_conditional(j->blk, NULL,
                                     gcc_jit_context_new_comparison(j->c, NULL, GCC_JIT_COMPARISON_NE, hook,
                                                                    gcc_jit_context_null(j->c, hookt)),
                                     pool, serial);
  gcc_jit_rvalue *ha[4] = {header_slot(j, 3), fp, self, num(j, n)};
  gcc_jit_block_add_eval(pool, NULL, gcc_jit_context_new_call_through_ptr(j->c, NULL, hook, 4, ha));
  gcc_jit_block_end_with_jump(pool, NULL, after);
  gcc_jit_rvalue *sa[3] = {self, num(j, 0), num(j, n)};
  gcc_jit_block_add_eval(serial, NULL, gcc_jit_context_new_call(j->c, NULL, f, 3, sa));
  gcc_jit_block_end_with_jump(serial, NULL, after);
  j->blk = after;
}

static int max_var(const Stmt *s) {
  int m = s->kind == S_LOOP ? s->var : -1;
  if (s->kind == S_KERNEL)
    for (int d = 0; d < 3; d++) m = s->kern->var[d] > m ? s->kern->var[d] : m;
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
  gcc_jit_rvalue *lo, *hi;
} Outlined;

/* Starts `static void tdsl_par_N(void *arg, long lo, long hi)` with fresh loop
 * variables 0..nvars-1; outline_end returns to the function being built. */
static Outlined outline_begin(J *j, int nvars) {
  Outlined o = {.saved_fn = j->fn, .saved_self = j->self, .saved_blk = j->blk, .saved_vars = j->vars};
  gcc_jit_param *ps[3] = {gcc_jit_context_new_param(j->c, NULL, gcc_jit_context_get_type(j->c, GCC_JIT_TYPE_VOID_PTR), "arg"),
                          gcc_jit_context_new_param(j->c, NULL, j->t_long, "lo"),
                          gcc_jit_context_new_param(j->c, NULL, j->t_long, "hi")};
  o.fn = gcc_jit_context_new_function(j->c, NULL, GCC_JIT_FUNCTION_INTERNAL, j->t_void,
                                     arena_printf(j->a, "tdsl_par_%d", j->nblocks++), 3, ps, 0);
  /* arg is the instance (call_parallel) */
  j->self = gcc_jit_context_new_cast(j->c, NULL, gcc_jit_param_as_rvalue(ps[0]), j->inst.ptr);
  o.lo = gcc_jit_param_as_rvalue(ps[1]);
  o.hi = gcc_jit_param_as_rvalue(ps[2]);
  j->fn = o.fn;
  j->blk = js_new_block(j, o.fn);
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
  Outlined o = outline_begin(j, max_var(lp) + 1);
  Loop l = loop_begin(j, j->vars[lp->var], o.lo, o.hi, 1);
  js_emit_stmts(j, &lp->body);
  loop_end(j, &l);
  outline_end(j, &o);
  call_parallel(j, o.fn, lp->ext);
}

/* l = v when v is above (up) or below (!up) l */
static void clip(J *j, gcc_jit_lvalue *l, gcc_jit_rvalue *v, bool up) {
  gcc_jit_block *set = js_new_block(j, j->fn), *go = js_new_block(j, j->fn);
  gcc_jit_rvalue *c = up ? less(j, lv(l), v) : less(j, v, lv(l));
  gcc_jit_block_end_with_conditional(j->blk, NULL, c, set, go);
  gcc_jit_block_add_assignment(set, NULL, l, v);
  gcc_jit_block_end_with_jump(set, NULL, go);
  j->blk = go;
}

void js_kernel(J *j, const Stmt *s) {
  const Kernel *k = s->kern;
  if (!k->parallel) {
    /* rows where the padding guards hold: 0 <= i + rest < ext */
    gcc_jit_lvalue *lo = local(j, j->t_long, "rowlo"), *hi = local(j, j->t_long, "rowhi");
    set(j, lo, num(j, 0));
    set(j, hi, num(j, k->ext[0]));
    for (int g = 0; g < k->nrow_guards; g++) {
      Aff rest = aff_drop(j->a, &k->row_guards[g].aff, k->var, 1);
      gcc_jit_rvalue *r = js_aff(j, &rest);
      clip(j, lo, gcc_jit_context_new_unary_op(j->c, NULL, GCC_JIT_UNARY_OP_MINUS, j->t_long, r), true);
      clip(j, hi, add(j, num(j, k->row_guards[g].ext), gcc_jit_context_new_unary_op(j->c, NULL, GCC_JIT_UNARY_OP_MINUS, j->t_long, r)), false);
    }
    kernel_rows(j, k, lv(lo), lv(hi));
    return;
  }
  /* rows split in whole register tiles: [lo*mr, min(hi*mr, m)) */
  Outlined o = outline_begin(j, max_var(s) + 1);
  gcc_jit_lvalue *hi = local(j, j->t_long, "rowhi");
  set_min(j, hi, mul(j, k->mr, o.hi), k->ext[0]);
  kernel_rows(j, k, mul(j, k->mr, o.lo), lv(hi));
  outline_end(j, &o);
  call_parallel(j, o.fn, (k->ext[0] + k->mr - 1) / k->mr);
}
