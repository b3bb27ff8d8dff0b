/* jit_stmt.c: the statement and expression renderer of the gccjit backend: loops,
 * guards, stores, fills, calls, expressions, bounds checks and the op helpers.
 *
 * Primitive ops that branch (relu, max, comparisons, ...) become small internal
 * helper functions, one per op and element type; gcc inlines and if-converts them at
 * -O2/-O3, and they keep the exact op_eval semantics (NaN handling included). */
#include <string.h>

#include "jit_emit.h"

static gcc_jit_rvalue *dbl(J *j, gcc_jit_type *t, double v) {
  return gcc_jit_context_new_rvalue_from_double(j->c, t, v);
}
static gcc_jit_rvalue *lng(J *j, long v) { return gcc_jit_context_new_rvalue_from_long(j->c, j->t_long, v); }
static gcc_jit_rvalue *cmp(J *j, enum gcc_jit_comparison op, gcc_jit_rvalue *a, gcc_jit_rvalue *b) {
  return gcc_jit_context_new_comparison(j->c, NULL, op, a, b);
}
static gcc_jit_rvalue *bin(J *j, enum gcc_jit_binary_op op, gcc_jit_type *t, gcc_jit_rvalue *a, gcc_jit_rvalue *b) {
  return gcc_jit_context_new_binary_op(j->c, NULL, op, t, a, b);
}
static gcc_jit_rvalue *call1(J *j, gcc_jit_function *f, gcc_jit_rvalue *a) {
  return gcc_jit_context_new_call(j->c, NULL, f, 1, &a);
}
static gcc_jit_function *builtin(J *j, const char *name, bool f32) {
  char buf[64];
  snprintf(buf, sizeof buf, "__builtin_%s%s", name, f32 ? "f" : "");
  return gcc_jit_context_get_builtin_function(j->c, buf);
}
gcc_jit_block *js_new_block(J *j, gcc_jit_function *fn) {
  char name[32];
  snprintf(name, sizeof name, "b%d", j->nblocks++);
  return gcc_jit_function_new_block(fn, name);
}

/* ---- helpers for branching ops ---- */

typedef struct H {
  J *j;
  gcc_jit_function *fn;
  gcc_jit_block *b;
  gcc_jit_type *t;
  gcc_jit_rvalue *p[3];
} H;

/* if (cond) return v; continue in a fresh block. */
static void h_ret_if(H *h, gcc_jit_rvalue *cond, gcc_jit_rvalue *v) {
  gcc_jit_block *yes = js_new_block(h->j, h->fn), *no = js_new_block(h->j, h->fn);
  gcc_jit_block_end_with_conditional(h->b, NULL, cond, yes, no);
  gcc_jit_block_end_with_return(yes, NULL, v);
  h->b = no;
}

/* The helpers that are a chain of `if (x CMP y) return v;` ending in `return otherwise`,
 * over the parameters a, b, c and the constants 0 and 1, as op_eval (src/ops.c) states
 * them. MAX and MIN: OCaml's Float.max/min; when neither comparison holds an operand is
 * NaN, and a + b is NaN too. */
typedef enum { HA, HB, HC, H0, H1, HSUM } HVal;
typedef struct RetIf {
  enum gcc_jit_comparison cmp;
  HVal x, y, v;
} RetIf;
typedef struct RetIfChain {
  int n; /* 0: not a guard chain */
  RetIf g[2];
  HVal otherwise;
} RetIfChain;

#define LT_ GCC_JIT_COMPARISON_LT
#define LE_ GCC_JIT_COMPARISON_LE
#define GT_ GCC_JIT_COMPARISON_GT
#define GE_ GCC_JIT_COMPARISON_GE
#define EQ_ GCC_JIT_COMPARISON_EQ
#define NE_ GCC_JIT_COMPARISON_NE
static const RetIfChain ret_if_chains[OP__COUNT] = {
    [OP_RELU] = {1, {{GE_, HA, H0, HA}}, H0},
    [OP_SAT01] = {2, {{LE_, HA, H0, H0}, {GE_, HA, H1, H1}}, HA},
    [OP_NOT] = {1, {{EQ_, HA, H0, H1}}, H0},
    [OP_RELU_GATE] = {1, {{GT_, HA, H0, HB}}, H0},
    [OP_SAT01_GATE] = {2, {{LE_, HA, H0, H0}, {LT_, HA, H1, HB}}, H0},
    [OP_LT] = {1, {{LT_, HA, HB, H1}}, H0},
    [OP_EQ] = {1, {{EQ_, HA, HB, H1}}, H0},
    [OP_NE] = {1, {{NE_, HA, HB, H1}}, H0},
    [OP_OR] = {2, {{NE_, HA, H0, H1}, {NE_, HB, H0, H1}}, H0},
    [OP_AND] = {2, {{EQ_, HA, H0, H0}, {EQ_, HB, H0, H0}}, H1},
    [OP_MAX] = {2, {{GT_, HA, HB, HA}, {LE_, HA, HB, HB}}, HSUM},
    [OP_MIN] = {2, {{LT_, HA, HB, HA}, {GE_, HA, HB, HB}}, HSUM},
    [OP_WHERE] = {1, {{NE_, HA, H0, HB}}, HC},
};
#undef LT_
#undef LE_
#undef GT_
#undef GE_
#undef EQ_
#undef NE_

static gcc_jit_rvalue *hval(H *h, HVal v) {
  switch (v) {
  case HA: case HB: case HC: return h->p[v - HA];
  case H0: return dbl(h->j, h->t, 0.0);
  case H1: return dbl(h->j, h->t, 1.0);
  case HSUM: return bin(h->j, GCC_JIT_BINARY_OP_PLUS, h->t, h->p[0], h->p[1]);
  }
  return h->p[0];
}

static void build_ret_ifs(H *h, const RetIfChain *gc) {
  for (int i = 0; i < gc->n; i++)
    h_ret_if(h, cmp(h->j, gc->g[i].cmp, hval(h, gc->g[i].x), hval(h, gc->g[i].y)), hval(h, gc->g[i].v));
  gcc_jit_block_end_with_return(h->b, NULL, hval(h, gc->otherwise));
}

static gcc_jit_function *helper(J *j, PrimOp op, int el) {
  if (j->helpers[el][op]) return j->helpers[el][op];
  gcc_jit_type *t = j->t_el[el];
  int ar = op_info[op].arity;
  gcc_jit_param *ps[3];
  const char *pn[3] = {"a", "b", "c"};
  for (int i = 0; i < ar; i++) ps[i] = gcc_jit_context_new_param(j->c, NULL, t, pn[i]);
  char name[64];
  snprintf(name, sizeof name, "tdsl_op_%s_%s", op_info[op].name, el ? "f64" : "f32");
  H h = {.j = j, .t = t};
  h.fn = gcc_jit_context_new_function(j->c, NULL, GCC_JIT_FUNCTION_ALWAYS_INLINE, t, name, ar, ps, 0);
  h.b = js_new_block(j, h.fn);
  for (int i = 0; i < ar; i++) h.p[i] = gcc_jit_param_as_rvalue(ps[i]);
  if (ret_if_chains[op].n) build_ret_ifs(&h, &ret_if_chains[op]);
  else gcc_jit_block_end_with_return(h.b, NULL, h.p[0]);
  return j->helpers[el][op] = h.fn;
}

/* ---- exp and tanh of a float, vectorizable ----
 * libm's expf and tanhf are calls gcc cannot vectorize (libgccjit declares no SIMD
 * variants), and a softmax spent most of its time in them. These compute in double and
 * round once: y = n ln2 + r with n = round(y / ln2) (the 1.5 * 2^52 shift trick, whose
 * low bits are n), |r| <= ln2 / 2, e^r (or e^r - 1, for tanh near 0) by its Taylor series
 * to degree 12 (error < 2^-52 of the result, so the float is correctly rounded but for
 * results within about 2^-29 of a float midpoint; glibc's expf differs from the correctly
 * rounded value at about 1 input in 13 000), 2^n written into a double's exponent. No
 * branch on a float comparison (gcc will not if-convert one under -ftrapping-math, and
 * the loop would stay scalar): the out-of-range magnitudes are clamped by a select on the
 * bits, and a NaN passes through the arithmetic and comes out NaN. ir_c_exp_f32 /
 * ir_c_tanh_f32 (src/ir_c.c) are the same operations in C for --emit-c. Double precision
 * keeps libm. */

typedef struct FB {
  J *j;
  gcc_jit_function *fn;
  gcc_jit_block *b;
  gcc_jit_type *f, *d, *u32, *u64;
} FB;

static gcc_jit_rvalue *fb_u32(FB *g, unsigned long v) { return gcc_jit_context_new_rvalue_from_long(g->j->c, g->u32, (long)v); }
static gcc_jit_rvalue *fb_u64(FB *g, unsigned long v) { return gcc_jit_context_new_rvalue_from_long(g->j->c, g->u64, (long)v); }

/* A local of type t holding v (assigned in the current block). */
static gcc_jit_rvalue *fb_let(FB *g, gcc_jit_type *t, const char *name, gcc_jit_rvalue *v) {
  gcc_jit_lvalue *l = gcc_jit_function_new_local(g->fn, NULL, t, name);
  gcc_jit_block_add_assignment(g->b, NULL, l, v);
  return gcc_jit_lvalue_as_rvalue(l);
}

/* if (cond) *l = v, as a block of its own (gcc if-converts it: cond compares integers). */
static void fb_set_if(FB *g, gcc_jit_rvalue *cond, gcc_jit_lvalue *l, gcc_jit_rvalue *v) {
  gcc_jit_block *yes = js_new_block(g->j, g->fn), *go = js_new_block(g->j, g->fn);
  gcc_jit_block_end_with_conditional(g->b, NULL, cond, yes, go);
  gcc_jit_block_add_assignment(yes, NULL, l, v);
  gcc_jit_block_end_with_jump(yes, NULL, go);
  g->b = go;
}

/* The bits of the float parameter x with its magnitude clamped to `limit` (bits of a
 * positive float) when it is larger, infinity included, NaN not; the sign kept (a
 * clamped value that is a constant, as |x| would be, lets gcc fold the whole function
 * on that branch, and the loop no longer if-converts). Continues in a fresh block. */
static gcc_jit_rvalue *fb_clamped_bits(FB *g, gcc_jit_rvalue *x, unsigned long limit) {
  J *j = g->j;
  gcc_jit_lvalue *lb = gcc_jit_function_new_local(g->fn, NULL, g->u32, "bits");
  gcc_jit_block_add_assignment(g->b, NULL, lb, gcc_jit_context_new_bitcast(j->c, NULL, x, g->u32));
  gcc_jit_rvalue *bits = gcc_jit_lvalue_as_rvalue(lb);
  gcc_jit_rvalue *mag = bin(j, GCC_JIT_BINARY_OP_BITWISE_AND, g->u32, bits, fb_u32(g, 0x7fffffff));
  /* limit < |x| <= inf as one unsigned comparison */
  gcc_jit_rvalue *big = cmp(j, GCC_JIT_COMPARISON_LT, bin(j, GCC_JIT_BINARY_OP_MINUS, g->u32, mag, fb_u32(g, limit + 1)),
                            fb_u32(g, 0x7f800000 - limit));
  fb_set_if(g, big, lb, bin(j, GCC_JIT_BINARY_OP_BITWISE_OR, g->u32, bin(j, GCC_JIT_BINARY_OP_BITWISE_AND, g->u32, bits, fb_u32(g, 0x80000000u)), fb_u32(g, limit)));
  return bits;
}

/* e^y = scale * (poly) for a double y with |y| <= 104 * 2: *scale = 2^n and the result
 * e^r, or with minus_one e^r - 1 (then e^y - 1 = scale * poly + (scale - 1)). */
static gcc_jit_rvalue *fb_exp_parts(FB *g, gcc_jit_rvalue *y, bool minus_one, gcc_jit_rvalue **scale) {
  J *j = g->j;
  gcc_jit_type *d = g->d;
  gcc_jit_rvalue *kd = fb_let(g, d, "kd", bin(j, GCC_JIT_BINARY_OP_PLUS, d, bin(j, GCC_JIT_BINARY_OP_MULT, d, y, dbl(j, d, 0x1.71547652b82fep0)), dbl(j, d, 0x1.8p52)));
  gcc_jit_rvalue *ki = fb_let(g, g->u64, "ki", gcc_jit_context_new_bitcast(j->c, NULL, kd, g->u64));
  gcc_jit_rvalue *n = fb_let(g, d, "n", bin(j, GCC_JIT_BINARY_OP_MINUS, d, kd, dbl(j, d, 0x1.8p52)));
  gcc_jit_rvalue *hi = bin(j, GCC_JIT_BINARY_OP_MULT, d, n, dbl(j, d, 0x1.62e42fefa39efp-1));
  gcc_jit_rvalue *lo = bin(j, GCC_JIT_BINARY_OP_MULT, d, n, dbl(j, d, 0x1.abc9e3b39803fp-56));
  gcc_jit_rvalue *r = fb_let(g, d, "r", bin(j, GCC_JIT_BINARY_OP_MINUS, d, bin(j, GCC_JIT_BINARY_OP_MINUS, d, y, hi), lo));
  /* Horner from 1/12! down to 1/1! (and 1/0! unless minus_one, which multiplies by r) */
  gcc_jit_lvalue *p = gcc_jit_function_new_local(g->fn, NULL, d, "p");
  double fact = 479001600.0;
  gcc_jit_block_add_assignment(g->b, NULL, p, dbl(j, d, 1.0 / fact));
  for (int k = 11; k >= 0; k--) {
    fact /= k + 1;
    gcc_jit_rvalue *pr = bin(j, GCC_JIT_BINARY_OP_MULT, d, gcc_jit_lvalue_as_rvalue(p), r);
    gcc_jit_block_add_assignment(g->b, NULL, p, k == 0 && minus_one ? pr : bin(j, GCC_JIT_BINARY_OP_PLUS, d, pr, dbl(j, d, 1.0 / fact)));
  }
  gcc_jit_rvalue *e = bin(j, GCC_JIT_BINARY_OP_PLUS, g->u64, bin(j, GCC_JIT_BINARY_OP_LSHIFT, g->u64, ki, fb_u64(g, 52)),
                          fb_u64(g, 0x3ff0000000000000L));
  *scale = fb_let(g, d, "s", gcc_jit_context_new_bitcast(j->c, NULL, e, d));
  return gcc_jit_lvalue_as_rvalue(p);
}

static FB fb_begin(J *j, PrimOp op, const char *name, gcc_jit_param **px) {
  FB g = {.j = j, .f = j->t_el[ELEM_F32], .d = j->t_el[ELEM_F64]};
  g.u32 = gcc_jit_context_get_int_type(j->c, 4, 0);
  g.u64 = gcc_jit_context_get_int_type(j->c, 8, 0);
  *px = gcc_jit_context_new_param(j->c, NULL, g.f, "x");
  g.fn = j->helpers[ELEM_F32][op] = gcc_jit_context_new_function(j->c, NULL, GCC_JIT_FUNCTION_ALWAYS_INLINE, g.f, name, 1, px, 0);
  g.b = js_new_block(j, g.fn);
  return g;
}

/* exp: |x| > 104 becomes +-104 (exp is inf or 0 in float there, as exp(+-104) is). */
static gcc_jit_function *exp_f32(J *j) {
  if (j->helpers[ELEM_F32][OP_EXP]) return j->helpers[ELEM_F32][OP_EXP];
  gcc_jit_param *px;
  FB g = fb_begin(j, OP_EXP, "tdsl_exp_f32", &px);
  gcc_jit_rvalue *bits = fb_clamped_bits(&g, gcc_jit_param_as_rvalue(px), 0x42d00000 /* 104 */);
  gcc_jit_rvalue *y = fb_let(&g, g.d, "y", gcc_jit_context_new_cast(j->c, NULL, gcc_jit_context_new_bitcast(j->c, NULL, bits, g.f), g.d));
  gcc_jit_rvalue *s, *p = fb_exp_parts(&g, y, false, &s);
  gcc_jit_block_end_with_return(g.b, NULL, gcc_jit_context_new_cast(j->c, NULL, bin(j, GCC_JIT_BINARY_OP_MULT, g.d, p, s), g.f));
  return g.fn;
}

/* tanh |x| = m / (m + 2), m = e^(2|x|) - 1 (no cancellation near 0), the sign put back
 * on the rounded result; |x| > 10 becomes 10 (tanh is 1 in float from 9.01 on). */
static gcc_jit_function *tanh_f32(J *j) {
  if (j->helpers[ELEM_F32][OP_TANH]) return j->helpers[ELEM_F32][OP_TANH];
  gcc_jit_param *px;
  FB g = fb_begin(j, OP_TANH, "tdsl_tanh_f32", &px);
  gcc_jit_rvalue *x = gcc_jit_param_as_rvalue(px);
  gcc_jit_rvalue *sign = fb_let(&g, g.u32, "sign", bin(j, GCC_JIT_BINARY_OP_BITWISE_AND, g.u32, gcc_jit_context_new_bitcast(j->c, NULL, x, g.u32), fb_u32(&g, 0x80000000u)));
  gcc_jit_rvalue *bits = fb_clamped_bits(&g, x, 0x41200000 /* 10 */);
  gcc_jit_rvalue *a = call1(j, builtin(j, "fabs", false),
                            gcc_jit_context_new_cast(j->c, NULL, gcc_jit_context_new_bitcast(j->c, NULL, bits, g.f), g.d));
  gcc_jit_rvalue *y = fb_let(&g, g.d, "y", bin(j, GCC_JIT_BINARY_OP_PLUS, g.d, a, a));
  gcc_jit_rvalue *s, *q = fb_exp_parts(&g, y, true, &s);
  gcc_jit_rvalue *m = fb_let(&g, g.d, "m", bin(j, GCC_JIT_BINARY_OP_PLUS, g.d, bin(j, GCC_JIT_BINARY_OP_MULT, g.d, s, q),
                                             bin(j, GCC_JIT_BINARY_OP_MINUS, g.d, s, dbl(j, g.d, 1.0))));
  gcc_jit_rvalue *t = gcc_jit_context_new_cast(j->c, NULL, bin(j, GCC_JIT_BINARY_OP_DIVIDE, g.d, m, bin(j, GCC_JIT_BINARY_OP_PLUS, g.d, m, dbl(j, g.d, 2.0))), g.f);
  gcc_jit_rvalue *tb = bin(j, GCC_JIT_BINARY_OP_BITWISE_OR, g.u32, gcc_jit_context_new_bitcast(j->c, NULL, t, g.u32), sign);
  gcc_jit_block_end_with_return(g.b, NULL, gcc_jit_context_new_bitcast(j->c, NULL, tb, g.f));
  return g.fn;
}

/* log x = k ln2 + log z for the double d = x = 2^k z, z in [sqrt(2)/2, sqrt(2)) (k and z
 * from d's bits: denormal floats are normal doubles), log z = 2 atanh(s), s = (z - 1) /
 * (z + 1), |s| <= 0.1716, by its odd series to s^23 (error < 2^-60 of the result). Inputs
 * that are not positive finite floats (zeros, negatives, infinities, NaN) go through the
 * arithmetic too and take their result from their bits: -inf at +-0, +inf at +inf, the
 * NaN quieted, the default NaN below 0 (what x86's logf gives). That result is chosen by
 * a mask, not a branch: with an `if`, gcc sank the arithmetic into the branch that needs
 * it, which it then would not if-convert (a float operation made conditional), and the
 * loop stayed scalar. */
static gcc_jit_function *log_f32(J *j) {
  if (j->helpers[ELEM_F32][OP_LOG]) return j->helpers[ELEM_F32][OP_LOG];
  gcc_jit_param *px;
  FB g = fb_begin(j, OP_LOG, "tdsl_log_f32", &px);
  gcc_jit_type *d = g.d, *i64 = gcc_jit_context_get_int_type(j->c, 8, 1);
  gcc_jit_rvalue *x = gcc_jit_param_as_rvalue(px);
  gcc_jit_rvalue *bits = fb_let(&g, g.u32, "bits", gcc_jit_context_new_bitcast(j->c, NULL, x, g.u32));
  gcc_jit_rvalue *ix = fb_let(&g, g.u64, "ix", gcc_jit_context_new_bitcast(j->c, NULL, gcc_jit_context_new_cast(j->c, NULL, x, d), g.u64));
  gcc_jit_rvalue *tmp = fb_let(&g, g.u64, "tmp", bin(j, GCC_JIT_BINARY_OP_MINUS, g.u64, ix, fb_u64(&g, 0x3fe6a09e667f3bcdL)));
  gcc_jit_rvalue *k = fb_let(&g, d, "k", gcc_jit_context_new_cast(j->c, NULL,
                                   bin(j, GCC_JIT_BINARY_OP_RSHIFT, i64, gcc_jit_context_new_bitcast(j->c, NULL, tmp, i64),
                                       gcc_jit_context_new_rvalue_from_int(j->c, i64, 52)), d));
  gcc_jit_rvalue *iz = bin(j, GCC_JIT_BINARY_OP_MINUS, g.u64, ix, bin(j, GCC_JIT_BINARY_OP_BITWISE_AND, g.u64, tmp, fb_u64(&g, 0xfff0000000000000UL)));
  gcc_jit_rvalue *f = fb_let(&g, d, "f", bin(j, GCC_JIT_BINARY_OP_MINUS, d, gcc_jit_context_new_bitcast(j->c, NULL, iz, d), dbl(j, d, 1.0)));
  gcc_jit_rvalue *sv = fb_let(&g, d, "s", bin(j, GCC_JIT_BINARY_OP_DIVIDE, d, f, bin(j, GCC_JIT_BINARY_OP_PLUS, d, f, dbl(j, d, 2.0))));
  gcc_jit_rvalue *s2 = fb_let(&g, d, "s2", bin(j, GCC_JIT_BINARY_OP_MULT, d, sv, sv));
  gcc_jit_lvalue *p = gcc_jit_function_new_local(g.fn, NULL, d, "p");
  gcc_jit_block_add_assignment(g.b, NULL, p, dbl(j, d, 1.0 / 23));
  for (int n = 21; n >= 1; n -= 2)
    gcc_jit_block_add_assignment(g.b, NULL, p, bin(j, GCC_JIT_BINARY_OP_PLUS, d, bin(j, GCC_JIT_BINARY_OP_MULT, d, gcc_jit_lvalue_as_rvalue(p), s2), dbl(j, d, 1.0 / n)));
  gcc_jit_rvalue *lz = bin(j, GCC_JIT_BINARY_OP_MULT, d, bin(j, GCC_JIT_BINARY_OP_PLUS, d, sv, sv), gcc_jit_lvalue_as_rvalue(p));
  gcc_jit_rvalue *r = bin(j, GCC_JIT_BINARY_OP_PLUS, d, bin(j, GCC_JIT_BINARY_OP_MULT, d, k, dbl(j, d, 0x1.62e42fefa39efp-1)),
                          bin(j, GCC_JIT_BINARY_OP_PLUS, d, bin(j, GCC_JIT_BINARY_OP_MULT, d, k, dbl(j, d, 0x1.abc9e3b39803fp-56)), lz));
  gcc_jit_rvalue *out = fb_let(&g, g.u32, "out", gcc_jit_context_new_bitcast(j->c, NULL, gcc_jit_context_new_cast(j->c, NULL, r, g.f), g.u32));
  gcc_jit_rvalue *mag = fb_let(&g, g.u32, "mag", bin(j, GCC_JIT_BINARY_OP_BITWISE_AND, g.u32, bits, fb_u32(&g, 0x7fffffff)));
  gcc_jit_lvalue *sb = gcc_jit_function_new_local(g.fn, NULL, g.u32, "sb");
  gcc_jit_block_add_assignment(g.b, NULL, sb, fb_u32(&g, 0xffc00000u)); /* below 0 */
  fb_set_if(&g, cmp(j, GCC_JIT_COMPARISON_GT, mag, fb_u32(&g, 0x7f800000)), sb, bin(j, GCC_JIT_BINARY_OP_BITWISE_OR, g.u32, bits, fb_u32(&g, 0x00400000)));
  fb_set_if(&g, cmp(j, GCC_JIT_COMPARISON_EQ, bits, fb_u32(&g, 0x7f800000)), sb, fb_u32(&g, 0x7f800000));
  fb_set_if(&g, cmp(j, GCC_JIT_COMPARISON_EQ, mag, fb_u32(&g, 0)), sb, fb_u32(&g, 0xff800000u));
  /* all ones when x is not in [smallest denormal, largest float] (one unsigned comparison) */
  gcc_jit_rvalue *special = gcc_jit_context_new_cast(
      j->c, NULL, cmp(j, GCC_JIT_COMPARISON_GE, bin(j, GCC_JIT_BINARY_OP_MINUS, g.u32, bits, fb_u32(&g, 1)), fb_u32(&g, 0x7f7fffff)), g.u32);
  gcc_jit_rvalue *mask = fb_let(&g, g.u32, "mask", bin(j, GCC_JIT_BINARY_OP_MINUS, g.u32, fb_u32(&g, 0), special));
  gcc_jit_rvalue *res = bin(j, GCC_JIT_BINARY_OP_BITWISE_OR, g.u32,
                            bin(j, GCC_JIT_BINARY_OP_BITWISE_AND, g.u32, out, gcc_jit_context_new_unary_op(j->c, NULL, GCC_JIT_UNARY_OP_BITWISE_NEGATE, g.u32, mask)),
                            bin(j, GCC_JIT_BINARY_OP_BITWISE_AND, g.u32, gcc_jit_lvalue_as_rvalue(sb), mask));
  gcc_jit_block_end_with_return(g.b, NULL, gcc_jit_context_new_bitcast(j->c, NULL, res, g.f));
  return g.fn;
}

/* ---- expressions ---- */

static gcc_jit_rvalue *op_rvalue(J *j, PrimOp op, int el, gcc_jit_rvalue *a, gcc_jit_rvalue *b, gcc_jit_rvalue *c) {
  gcc_jit_type *t = j->t_el[el];
  bool f32 = el == 0;
  switch (op) {
  case OP_ID: case OP_ARG1: return a;
  case OP_ARG2: return b;
  case OP_ADD: return bin(j, GCC_JIT_BINARY_OP_PLUS, t, a, b);
  case OP_SUB: return bin(j, GCC_JIT_BINARY_OP_MINUS, t, a, b);
  case OP_MUL: return bin(j, GCC_JIT_BINARY_OP_MULT, t, a, b);
  case OP_DIV: return bin(j, GCC_JIT_BINARY_OP_DIVIDE, t, a, b);
  case OP_NEG: return gcc_jit_context_new_unary_op(j->c, NULL, GCC_JIT_UNARY_OP_MINUS, t, a);
  case OP_RECIP: return bin(j, GCC_JIT_BINARY_OP_DIVIDE, t, dbl(j, t, 1.0), a);
  case OP_RECIP_SQRT: return bin(j, GCC_JIT_BINARY_OP_DIVIDE, t, dbl(j, t, 1.0), call1(j, builtin(j, "sqrt", f32), a));
  case OP_FMA: return bin(j, GCC_JIT_BINARY_OP_PLUS, t, bin(j, GCC_JIT_BINARY_OP_MULT, t, a, b), c);
  case OP_EXP: return call1(j, f32 ? exp_f32(j) : builtin(j, "exp", f32), a);
  case OP_LOG: return call1(j, f32 ? log_f32(j) : builtin(j, "log", f32), a);
  case OP_EXP2: return call1(j, builtin(j, "exp2", f32), a);
  case OP_LOG2: return call1(j, builtin(j, "log2", f32), a);
  case OP_SIN: return call1(j, builtin(j, "sin", f32), a);
  case OP_COS: return call1(j, builtin(j, "cos", f32), a);
  case OP_SQRT: return call1(j, builtin(j, "sqrt", f32), a);
  case OP_TANH: return call1(j, f32 ? tanh_f32(j) : builtin(j, "tanh", f32), a);
  case OP_ERF: return call1(j, builtin(j, "erf", f32), a);
  case OP_MOD: {
    gcc_jit_rvalue *args[2] = {a, b};
    return gcc_jit_context_new_call(j->c, NULL, builtin(j, "fmod", f32), 2, args);
  }
  case OP_POW: { /* libm's pow, as op_eval and the init runtime (src/ops.c says why) */
    /* Imported by name, not __builtin_pow: GCC 12's vectorizer turns a builtin pow (x,
     * 0.5) into a vector sqrt whatever the flags (vect_recog_pow_pattern), which is NaN
     * at -inf and -0 at -0 where pow gives +inf and +0, so a **. 0.5 depended on -O and
     * on whether the loop vectorized. */
    gcc_jit_function **fn = &j->helpers[el][OP_POW];
    if (!*fn) {
      gcc_jit_type *t = j->t_el[el];
      gcc_jit_param *ps[2] = {gcc_jit_context_new_param(j->c, NULL, t, "x"), gcc_jit_context_new_param(j->c, NULL, t, "y")};
      *fn = gcc_jit_context_new_function(j->c, NULL, GCC_JIT_FUNCTION_IMPORTED, t, f32 ? "powf" : "pow", 2, ps, 0);
    }
    gcc_jit_rvalue *args[2] = {a, b};
    return gcc_jit_context_new_call(j->c, NULL, *fn, 2, args);
  }
  default: {
    gcc_jit_rvalue *args[3] = {a, b, c};
    return gcc_jit_context_new_call(j->c, NULL, helper(j, op, el), op_info[op].arity, args);
  }
  }
}

/* The product of dynamic dimensions number p as a long. */
static gcc_jit_rvalue *prod_rvalue(J *j, int p) {
  const IrProd *x = ir_prod_at(j->m, p);
  gcc_jit_rvalue *r = NULL;
  for (int i = 0; x && i < x->n; i++) {
    gcc_jit_rvalue *d = gcc_jit_context_new_cast(j->c, NULL, jm_dim(j, x->dims[i]), j->t_long);
    r = r ? bin(j, GCC_JIT_BINARY_OP_MULT, j->t_long, r, d) : d;
  }
  return r ? r : lng(j, 1);
}

gcc_jit_rvalue *js_ext(J *j, long ext, int dext) {
  if (!dext) return lng(j, ext);
  gcc_jit_rvalue *p = prod_rvalue(j, dext);
  return ext == 1 ? p : bin(j, GCC_JIT_BINARY_OP_MULT, j->t_long, lng(j, ext), p);
}

static gcc_jit_rvalue *aff_rvalue(J *j, const Aff *f) {
  gcc_jit_rvalue *r = NULL;
  for (int i = 0; i < f->n; i++) {
    const Term *t = &f->t[i];
    gcc_jit_rvalue *v = t->var == AFF_ONE ? NULL
                        : t->var >= 0      ? gcc_jit_lvalue_as_rvalue(j->vars[t->var])
                                           : gcc_jit_context_new_cast(j->c, NULL, jm_sym(j, -1 - t->var), j->t_long);
    if (t->dyn) v = v ? bin(j, GCC_JIT_BINARY_OP_MULT, j->t_long, prod_rvalue(j, t->dyn), v) : prod_rvalue(j, t->dyn);
    if (t->coef != 1) v = bin(j, GCC_JIT_BINARY_OP_MULT, j->t_long, lng(j, t->coef), v);
    r = r ? bin(j, GCC_JIT_BINARY_OP_PLUS, j->t_long, r, v) : v;
  }
  if (!r) return lng(j, f->off);
  if (f->off) r = bin(j, GCC_JIT_BINARY_OP_PLUS, j->t_long, r, lng(j, f->off));
  return r;
}

static IrBuf *jbuf(J *j, int b) { return VEC_AT(j->m->bufs, IrBuf, b); }

static gcc_jit_lvalue *access_lvalue(J *j, const Access *acc) {
  return gcc_jit_context_new_array_access(j->c, NULL, gcc_jit_lvalue_as_rvalue(jm_buf(j, acc->buf)), aff_rvalue(j, &acc->flat));
}

static gcc_jit_rvalue *expr_rvalue(J *j, const IrExpr *e, int el) {
  gcc_jit_type *t = j->t_el[el];
  switch (e->kind) {
  case X_CONST: return dbl(j, t, e->value);
  case X_SYM: return gcc_jit_context_new_cast(j->c, NULL, jm_sym(j, e->sym), t);
  case X_LOAD: {
    gcc_jit_rvalue *v = gcc_jit_lvalue_as_rvalue(access_lvalue(j, &e->acc));
    return (int)jbuf(j, e->acc.buf)->elem == el ? v : gcc_jit_context_new_cast(j->c, NULL, v, t);
  }
  case X_OP: {
    gcc_jit_rvalue *a[3] = {NULL, NULL, NULL};
    for (int i = 0; i < op_info[e->op].arity; i++) a[i] = expr_rvalue(j, e->a[i], el);
    return op_rvalue(j, e->op, el, a[0], a[1], a[2]);
  }
  }
  return NULL;
}

/* ---- bounds checks ---- */

/* s with every '%' doubled: names and source text inside a printf format. */
static const char *fmt_escape(Arena *a, const char *s) {
  if (!s || !strchr(s, '%')) return s ? s : "?";
  char *r = arena_alloc(a, 2 * strlen(s) + 1), *q = r;
  for (; *s; s++) {
    if (*s == '%') *q++ = '%';
    *q++ = *s;
  }
  *q = 0;
  return r;
}

/* A failed check records its message, sets the fault word and leaves the function;
 * each caller leaves too (emit of S_CALL), so the routine stops at the first fault. */
static void check_access(J *j, const Access *acc, const char *what) {
  IrBuf *b = jbuf(j, acc->buf);
  for (int ax = 0; ax < acc->rank; ax++) {
    gcc_jit_rvalue *idx = aff_rvalue(j, &acc->axis[ax]);
    bool dyn = DIM_IS_DYN(b->dims[ax]);
    gcc_jit_rvalue *ext = dyn ? gcc_jit_context_new_cast(j->c, NULL, jm_dim(j, DIM_DYN_ID(b->dims[ax])), j->t_long)
                              : lng(j, b->dims[ax]);
    gcc_jit_rvalue *bad = gcc_jit_context_new_binary_op(
        j->c, NULL, GCC_JIT_BINARY_OP_LOGICAL_OR, j->t_bool, cmp(j, GCC_JIT_COMPARISON_LT, idx, lng(j, 0)),
        cmp(j, GCC_JIT_COMPARISON_GE, idx, ext));
    gcc_jit_block *trap = js_new_block(j, j->fn), *ok = js_new_block(j, j->fn);
    gcc_jit_block_end_with_conditional(j->blk, NULL, bad, trap, ok);
    char *msg = dyn ? arena_printf(j->a, "index %%ld out of range [0, %%ld) on axis %d of tensor %s in %s", ax,
                                   fmt_escape(j->a, b->name), fmt_escape(j->a, what))
                    : arena_printf(j->a, "index %%ld out of range [0, %d) on axis %d of tensor %s in %s", b->dims[ax], ax,
                                   fmt_escape(j->a, b->name), fmt_escape(j->a, what));
    gcc_jit_rvalue *args[5] = {jm_fault_msg(j),
                               gcc_jit_context_new_rvalue_from_long(j->c, gcc_jit_context_get_type(j->c, GCC_JIT_TYPE_SIZE_T),
                                                                    INST_FAULT_MSG_LEN),
                               gcc_jit_context_new_string_literal(j->c, msg), idx, ext};
    gcc_jit_block_add_eval(trap, NULL, gcc_jit_context_new_call(j->c, NULL, j->f_snprintf, dyn ? 5 : 4, args));
    gcc_jit_block_add_assignment(trap, NULL, jm_fault(j), gcc_jit_context_one(j->c, j->t_int));
    gcc_jit_block_end_with_void_return(trap, NULL);
    j->blk = ok;
  }
}

static void check_expr(J *j, const IrExpr *e, const char *what) {
  if (e->kind == X_LOAD) check_access(j, &e->acc, what);
  if (e->kind == X_OP)
    for (int i = 0; i < op_info[e->op].arity; i++) check_expr(j, e->a[i], what);
}

/* ---- statements ---- */



/* One step of a streamed loop (Stmt.stream = L cells): the store's value at var, var + 1,
 * ..., var + L - 1, written at once with a non-temporal store of L cells (16, 32 or 64
 * bytes: (v)movntps/(v)movntpd in an asm statement: libgccjit 12 has no builtin for it) on
 * x86-64; elsewhere as L plain stores. */
static void emit_stream_step(J *j, gcc_jit_lvalue *var, const Stmt *lp) {
  const Stmt *st = lp->body.items[0];
  int L = lp->stream, el = jbuf(j, st->dst.buf)->elem;
  gcc_jit_type *t = j->t_el[el];
  gcc_jit_rvalue *lane[16]; /* at most 64 bytes of f32 (stream_stores: a vector of at most 64) */
  for (int l = 0; l < L; l++) { /* the value with the loop variable at var + l */
    gcc_jit_lvalue *at = gcc_jit_function_new_local(j->fn, NULL, j->t_long, arena_printf(j->a, "s%d_%d", j->nblocks, l));
    gcc_jit_block_add_assignment(j->blk, NULL, at, bin(j, GCC_JIT_BINARY_OP_PLUS, j->t_long, gcc_jit_lvalue_as_rvalue(var), lng(j, l)));
    j->vars[lp->var] = at;
    gcc_jit_lvalue *v = gcc_jit_function_new_local(j->fn, NULL, t, arena_printf(j->a, "v%d_%d", j->nblocks, l));
    gcc_jit_block_add_assignment(j->blk, NULL, v, expr_rvalue(j, st->val, el));
    lane[l] = gcc_jit_lvalue_as_rvalue(v);
  }
  j->vars[lp->var] = var;
  gcc_jit_lvalue *dst = access_lvalue(j, &st->dst); /* the first cell, 16-byte aligned */
#if defined(__x86_64__)
  /* Operands through locals: libgccjit 12 crashes on an asm operand that is an
   * expression over an array member of a struct (the instance's buffers). */
  gcc_jit_type *vt = gcc_jit_type_get_vector(t, (size_t)L);
  gcc_jit_lvalue *addr = gcc_jit_function_new_local(j->fn, NULL, gcc_jit_type_get_pointer(t), arena_printf(j->a, "sa%d", j->nblocks));
  gcc_jit_lvalue *vec = gcc_jit_function_new_local(j->fn, NULL, vt, arena_printf(j->a, "sv%d", j->nblocks));
  gcc_jit_block_add_assignment(j->blk, NULL, addr, gcc_jit_lvalue_get_address(dst, NULL));
  gcc_jit_block_add_assignment(j->blk, NULL, vec, gcc_jit_context_new_rvalue_from_vector(j->c, NULL, vt, (size_t)L, lane));
  /* the address as a register operand and a memory clobber: an "=m" output crashed
   * libgccjit 12 too */
  /* 16 bytes: the SSE form, any x86-64; wider: the VEX/EVEX form ("v": any of the 32
   * registers AVX-512 has), which only a target with such vectors schedules */
  bool wide = L * (el == ELEM_F64 ? 8 : 4) > 16;
  if (L * (el == ELEM_F64 ? 8 : 4) > j->vec_bytes) { /* compiled for a narrower target: plain stores */
    gcc_jit_rvalue *first = gcc_jit_lvalue_get_address(dst, NULL);
    for (int l = 0; l < L; l++)
      gcc_jit_block_add_assignment(j->blk, NULL, gcc_jit_context_new_array_access(j->c, NULL, first, lng(j, l)), lane[l]);
    return;
  }
  const char *op = el == ELEM_F64 ? (wide ? "vmovntpd %1, (%0)" : "movntpd %1, (%0)") : (wide ? "vmovntps %1, (%0)" : "movntps %1, (%0)");
  gcc_jit_extended_asm *x = gcc_jit_block_add_extended_asm(j->blk, NULL, op);
  gcc_jit_extended_asm_set_volatile_flag(x, 1);
  gcc_jit_extended_asm_add_input_operand(x, NULL, "r", gcc_jit_lvalue_as_rvalue(addr));
  gcc_jit_extended_asm_add_input_operand(x, NULL, wide ? "v" : "x", gcc_jit_lvalue_as_rvalue(vec));
  gcc_jit_extended_asm_add_clobber(x, "memory");
#else
  gcc_jit_rvalue *first = gcc_jit_lvalue_get_address(dst, NULL);
  for (int l = 0; l < L; l++)
    gcc_jit_block_add_assignment(j->blk, NULL, gcc_jit_context_new_array_access(j->c, NULL, first, lng(j, l)), lane[l]);
#endif
}

/* Block transposes (Stmt.tblock) are x86 asm; elsewhere their loops run cell by cell. */
#if defined(__x86_64__)
#define TBLOCK_ASM 1
#else
#define TBLOCK_ASM 0
#endif

/* out = one AVX shuffle `ins` of a and b (AT&T: "ins [$imm, ]b, a, out"), in an asm
 * statement: libgccjit 12 has vector types but no shuffle. Not volatile: gcc schedules
 * and allocates around it like any computation of out. */
static gcc_jit_rvalue *tb_shuffle(J *j, const char *ins, int imm, const char *cons, gcc_jit_type *vt, gcc_jit_rvalue *x,
                                  gcc_jit_rvalue *y) {
  gcc_jit_lvalue *out = gcc_jit_function_new_local(j->fn, NULL, vt, arena_printf(j->a, "tb%d", j->nblocks++));
  const char *text = imm >= 0 ? arena_printf(j->a, "%s $%d, %%2, %%1, %%0", ins, imm) : arena_printf(j->a, "%s %%2, %%1, %%0", ins);
  gcc_jit_extended_asm *x_ = gcc_jit_block_add_extended_asm(j->blk, NULL, text);
  gcc_jit_extended_asm_add_output_operand(x_, NULL, cons[0] == 'v' ? "=v" : "=x", out);
  gcc_jit_extended_asm_add_input_operand(x_, NULL, cons, x);
  gcc_jit_extended_asm_add_input_operand(x_, NULL, cons, y);
  return gcc_jit_lvalue_as_rvalue(out);
}

/* One block of a block transpose (Stmt.tblock = B on loop q, its body loop p; the
 * variables hold the block's first q and p): B vector loads along q (source rows p ..
 * p + B - 1), the B x B transpose in registers (unpack pairs, shufps quads within each
 * 128-bit lane, then 128-bit lanes: vperm2f128 for 8 x 8 on AVX2, two rounds of
 * vshuff32x4 for 16 x 16 on AVX-512), B vector stores along p (target rows q .. q + B -
 * 1), non-temporal where p streams. Loads and plain stores are through a vector type
 * aligned like a float, so gcc emits unaligned moves (the source rows need not be
 * aligned). */
static void emit_tblock_step(J *j, const Stmt *q) {
  const Stmt *p = q->body.items[q->body.len - 1], *st = p->body.items[0];
  const IrExpr *addend, *ld = ir_tblock_load(st, &addend);
  int B = q->tblock;
  const char *cons = B == 16 ? "v" : "x"; /* 8 x 8: VEX-only vperm2f128, registers 0-15 */
  gcc_jit_type *t = j->t_el[ELEM_F32], *vt = gcc_jit_type_get_vector(t, (size_t)B);
  gcc_jit_type *pu = gcc_jit_type_get_pointer(gcc_jit_type_get_aligned(vt, sizeof(float)));
  gcc_jit_lvalue *qv = j->vars[q->var], *pv = j->vars[p->var];
  gcc_jit_rvalue *r[16], *u[16], *o_[16];
  for (int i = 0; i < B; i++) { /* source row p + i, cells q .. q + B - 1 */
    gcc_jit_lvalue *at = gcc_jit_function_new_local(j->fn, NULL, j->t_long, arena_printf(j->a, "tp%d", j->nblocks++));
    gcc_jit_block_add_assignment(j->blk, NULL, at, bin(j, GCC_JIT_BINARY_OP_PLUS, j->t_long, gcc_jit_lvalue_as_rvalue(pv), lng(j, i)));
    j->vars[p->var] = at;
    gcc_jit_rvalue *addr = gcc_jit_context_new_cast(j->c, NULL, gcc_jit_lvalue_get_address(access_lvalue(j, &ld->acc), NULL), pu);
    gcc_jit_lvalue *v = gcc_jit_function_new_local(j->fn, NULL, vt, arena_printf(j->a, "tr%d", j->nblocks++));
    gcc_jit_block_add_assignment(j->blk, NULL, v, gcc_jit_lvalue_as_rvalue(gcc_jit_rvalue_dereference(addr, NULL)));
    r[i] = gcc_jit_lvalue_as_rvalue(v);
  }
  j->vars[p->var] = pv;
  /* within each 128-bit lane: u[4g + c] holds column c of rows 4g .. 4g + 3 */
  for (int g = 0; g < B / 4; g++) {
    gcc_jit_rvalue *lo01 = tb_shuffle(j, "vunpcklps", -1, cons, vt, r[4 * g], r[4 * g + 1]);
    gcc_jit_rvalue *hi01 = tb_shuffle(j, "vunpckhps", -1, cons, vt, r[4 * g], r[4 * g + 1]);
    gcc_jit_rvalue *lo23 = tb_shuffle(j, "vunpcklps", -1, cons, vt, r[4 * g + 2], r[4 * g + 3]);
    gcc_jit_rvalue *hi23 = tb_shuffle(j, "vunpckhps", -1, cons, vt, r[4 * g + 2], r[4 * g + 3]);
    u[4 * g] = tb_shuffle(j, "vshufps", 0x44, cons, vt, lo01, lo23);
    u[4 * g + 1] = tb_shuffle(j, "vshufps", 0xEE, cons, vt, lo01, lo23);
    u[4 * g + 2] = tb_shuffle(j, "vshufps", 0x44, cons, vt, hi01, hi23);
    u[4 * g + 3] = tb_shuffle(j, "vshufps", 0xEE, cons, vt, hi01, hi23);
  }
  /* output row 4L + c: lane L of u[c], u[4 + c], ... */
  for (int c = 0; c < 4; c++) {
    if (B == 8) {
      o_[c] = tb_shuffle(j, "vperm2f128", 0x20, cons, vt, u[c], u[4 + c]);
      o_[4 + c] = tb_shuffle(j, "vperm2f128", 0x31, cons, vt, u[c], u[4 + c]);
      continue;
    }
    gcc_jit_rvalue *x0 = tb_shuffle(j, "vshuff32x4", 0x44, cons, vt, u[c], u[4 + c]);
    gcc_jit_rvalue *x1 = tb_shuffle(j, "vshuff32x4", 0xEE, cons, vt, u[c], u[4 + c]);
    gcc_jit_rvalue *x2 = tb_shuffle(j, "vshuff32x4", 0x44, cons, vt, u[8 + c], u[12 + c]);
    gcc_jit_rvalue *x3 = tb_shuffle(j, "vshuff32x4", 0xEE, cons, vt, u[8 + c], u[12 + c]);
    o_[c] = tb_shuffle(j, "vshuff32x4", 0x88, cons, vt, x0, x2);
    o_[4 + c] = tb_shuffle(j, "vshuff32x4", 0xDD, cons, vt, x0, x2);
    o_[8 + c] = tb_shuffle(j, "vshuff32x4", 0x88, cons, vt, x1, x3);
    o_[12 + c] = tb_shuffle(j, "vshuff32x4", 0xDD, cons, vt, x1, x3);
  }
  if (addend) { /* constant + cell, in the scalar store's order */
    gcc_jit_rvalue *c[16];
    for (int i = 0; i < B; i++) c[i] = dbl(j, t, addend->value);
    gcc_jit_rvalue *cv = gcc_jit_context_new_rvalue_from_vector(j->c, NULL, vt, (size_t)B, c);
    for (int k = 0; k < B; k++) o_[k] = bin(j, GCC_JIT_BINARY_OP_PLUS, vt, cv, o_[k]);
  }
  for (int k = 0; k < B; k++) { /* target row q + k, cells p .. p + B - 1 */
    gcc_jit_lvalue *at = gcc_jit_function_new_local(j->fn, NULL, j->t_long, arena_printf(j->a, "tq%d", j->nblocks++));
    gcc_jit_block_add_assignment(j->blk, NULL, at, bin(j, GCC_JIT_BINARY_OP_PLUS, j->t_long, gcc_jit_lvalue_as_rvalue(qv), lng(j, k)));
    j->vars[q->var] = at;
    PtrVec pre = {.items = q->body.items, .len = q->body.len - 1}; /* the prefetches of row q + k */
    js_emit_stmts(j, &pre);
    gcc_jit_rvalue *dst = gcc_jit_lvalue_get_address(access_lvalue(j, &st->dst), NULL);
    if (p->stream) { /* aligned (Stmt.stream): as emit_stream_step, through locals */
      gcc_jit_lvalue *addr = gcc_jit_function_new_local(j->fn, NULL, gcc_jit_type_get_pointer(t), arena_printf(j->a, "ta%d", j->nblocks++));
      gcc_jit_lvalue *vec = gcc_jit_function_new_local(j->fn, NULL, vt, arena_printf(j->a, "tv%d", j->nblocks++));
      gcc_jit_block_add_assignment(j->blk, NULL, addr, dst);
      gcc_jit_block_add_assignment(j->blk, NULL, vec, o_[k]);
      gcc_jit_extended_asm *x = gcc_jit_block_add_extended_asm(j->blk, NULL, "vmovntps %1, (%0)");
      gcc_jit_extended_asm_set_volatile_flag(x, 1);
      gcc_jit_extended_asm_add_input_operand(x, NULL, "r", gcc_jit_lvalue_as_rvalue(addr));
      gcc_jit_extended_asm_add_input_operand(x, NULL, "v", gcc_jit_lvalue_as_rvalue(vec));
      gcc_jit_extended_asm_add_clobber(x, "memory");
    } else
      gcc_jit_block_add_assignment(j->blk, NULL, gcc_jit_rvalue_dereference(gcc_jit_context_new_cast(j->c, NULL, dst, pu), NULL), o_[k]);
  }
  j->vars[q->var] = qv;
}

/* S_FENCE: sfence on x86-64 (streamed stores are weakly ordered); nothing elsewhere,
 * where streamed loops store plainly. */
static void emit_fence(J *j) {
#if defined(__x86_64__)
  gcc_jit_extended_asm *x = gcc_jit_block_add_extended_asm(j->blk, NULL, "sfence");
  gcc_jit_extended_asm_set_volatile_flag(x, 1);
  gcc_jit_extended_asm_add_clobber(x, "memory");
#else
  (void)j;
#endif
}

/* for (var = start; var < end; var += step) in do-while form (start < end): the
 * statements of body, a streamed step of loop stream (step: its stream), or a fill of
 * buffer fill_buf. A tiled loop (tile_var) starts at tile*tile_var and ends at
 * min(start + tile, ext). */
static void emit_loop(J *j, gcc_jit_lvalue *var, long ext, int dext, const PtrVec *body, int fill_buf, double fill_v,
                      gcc_jit_lvalue *tile_var, int tile, const Stmt *stream, const Stmt *tq, bool tq_inner) {
  if (ext <= 0) return;
  gcc_jit_rvalue *end = js_ext(j, ext, dext);
  gcc_jit_block *skip = NULL; /* a dynamic extent may be 0 at run time */
  if (dext) {
    gcc_jit_block *go = js_new_block(j, j->fn);
    skip = js_new_block(j, j->fn);
    gcc_jit_block_end_with_conditional(j->blk, NULL, cmp(j, GCC_JIT_COMPARISON_GT, end, lng(j, 0)), go, skip);
    j->blk = go;
  }
  if (tile_var) {
    gcc_jit_rvalue *start = bin(j, GCC_JIT_BINARY_OP_MULT, j->t_long, lng(j, tile), gcc_jit_lvalue_as_rvalue(tile_var));
    gcc_jit_block_add_assignment(j->blk, NULL, var, start);
    gcc_jit_lvalue *e = gcc_jit_function_new_local(j->fn, NULL, j->t_long, arena_printf(j->a, "end%d", j->nblocks));
    gcc_jit_block_add_assignment(j->blk, NULL, e, bin(j, GCC_JIT_BINARY_OP_PLUS, j->t_long, start, lng(j, tile)));
    gcc_jit_block *clamp = js_new_block(j, j->fn), *go = js_new_block(j, j->fn);
    gcc_jit_block_end_with_conditional(j->blk, NULL, cmp(j, GCC_JIT_COMPARISON_GT, gcc_jit_lvalue_as_rvalue(e), end), clamp, go);
    gcc_jit_block_add_assignment(clamp, NULL, e, end);
    gcc_jit_block_end_with_jump(clamp, NULL, go);
    j->blk = go;
    end = gcc_jit_lvalue_as_rvalue(e);
  } else gcc_jit_block_add_assignment(j->blk, NULL, var, lng(j, 0));
  gcc_jit_block *b = js_new_block(j, j->fn), *after = js_new_block(j, j->fn);
  gcc_jit_block_end_with_jump(j->blk, NULL, b);
  j->blk = b;
  if (tq && tq_inner) emit_tblock_step(j, tq);
  else if (tq) { /* the block's p loop, by blocks */
    const Stmt *p = tq->body.items[tq->body.len - 1];
    emit_loop(j, j->vars[p->var], p->ext, p->dext, NULL, 0, 0, p->tile_var >= 0 ? j->vars[p->tile_var] : NULL, p->tile, NULL, tq, true);
  } else if (stream) emit_stream_step(j, var, stream);
  else if (body) js_emit_stmts(j, body);
  else {
    IrBuf *fb = jbuf(j, fill_buf);
    gcc_jit_lvalue *dst = gcc_jit_context_new_array_access(j->c, NULL, gcc_jit_lvalue_as_rvalue(jm_buf(j, fill_buf)),
                                                           gcc_jit_lvalue_as_rvalue(var));
    gcc_jit_block_add_assignment(j->blk, NULL, dst, dbl(j, j->t_el[fb->elem], fill_v));
  }
  gcc_jit_block_add_assignment_op(j->blk, NULL, var, GCC_JIT_BINARY_OP_PLUS, lng(j, tq ? tq->tblock : stream ? stream->stream : 1));
  gcc_jit_block_end_with_conditional(j->blk, NULL, cmp(j, GCC_JIT_COMPARISON_LT, gcc_jit_lvalue_as_rvalue(var), end), b,
                                     after);
  j->blk = after;
  if (skip) {
    gcc_jit_block_end_with_jump(after, NULL, skip);
    j->blk = skip;
  }
}

static void emit_store(J *j, const Stmt *s) {
  if (j->o->check_bounds) {
    check_access(j, &s->dst, s->what);
    check_expr(j, s->val, s->what);
  }
  int el = jbuf(j, s->dst.buf)->elem;
  gcc_jit_lvalue *dst = access_lvalue(j, &s->dst);
  gcc_jit_rvalue *v = expr_rvalue(j, s->val, el);
  if (s->accum != OP_ARG2) v = op_rvalue(j, s->accum, el, gcc_jit_lvalue_as_rvalue(dst), v, NULL);
  gcc_jit_block_add_assignment(j->blk, NULL, dst, v);
}

static void emit_call(J *j, int callee) {
  gcc_jit_block_add_eval(j->blk, NULL, jm_call(j, callee));
  if (j->o->check_bounds) { /* the callee faulted: stop here too */
    gcc_jit_block *out = js_new_block(j, j->fn), *go = js_new_block(j, j->fn);
    gcc_jit_block_end_with_conditional(
        j->blk, NULL, cmp(j, GCC_JIT_COMPARISON_NE, gcc_jit_lvalue_as_rvalue(jm_fault(j)), gcc_jit_context_zero(j->c, j->t_int)), out,
        go);
    gcc_jit_block_end_with_void_return(out, NULL);
    j->blk = go;
  }
}

void js_emit_stmts(J *j, const PtrVec *body) {
  for (int i = 0; i < body->len; i++) {
    const Stmt *s = body->items[i];
    switch (s->kind) {
    case S_LOOP:
      if (s->parallel) {
        js_parallel_loop(j, s);
        break;
      }
      if (s->accs > 1) {
        js_reduce_loop(j, s);
        break;
      }
      emit_loop(j, j->vars[s->var], s->ext, s->dext, &s->body, 0, 0, s->tile_var >= 0 ? j->vars[s->tile_var] : NULL, s->tile,
                s->stream ? s : NULL, s->tblock && TBLOCK_ASM && s->tblock * 4 <= j->vec_bytes ? s : NULL, false);
      break;
    case S_IF: {
      gcc_jit_rvalue *cond = NULL;
      for (int k = 0; k < s->nguards; k++) {
        gcc_jit_rvalue *v = aff_rvalue(j, &s->guards[k].aff);
        gcc_jit_rvalue *c = gcc_jit_context_new_binary_op(
            j->c, NULL, GCC_JIT_BINARY_OP_LOGICAL_AND, j->t_bool, cmp(j, GCC_JIT_COMPARISON_GE, v, lng(j, 0)),
            cmp(j, GCC_JIT_COMPARISON_LT, v, js_ext(j, s->guards[k].ext, s->guards[k].dext)));
        cond = cond ? gcc_jit_context_new_binary_op(j->c, NULL, GCC_JIT_BINARY_OP_LOGICAL_AND, j->t_bool, cond, c) : c;
      }
      gcc_jit_block *then = js_new_block(j, j->fn), *after = js_new_block(j, j->fn);
      gcc_jit_block_end_with_conditional(j->blk, NULL, cond, then, after);
      j->blk = then;
      js_emit_stmts(j, &s->body);
      gcc_jit_block_end_with_jump(j->blk, NULL, after);
      j->blk = after;
      break;
    }
    case S_STORE: emit_store(j, s); break;
    case S_FILL: {
      gcc_jit_lvalue *k = gcc_jit_function_new_local(j->fn, NULL, j->t_long, arena_printf(j->a, "f%d", j->nblocks));
      emit_loop(j, k, jbuf(j, s->buf)->size, jbuf(j, s->buf)->dsize, NULL, s->buf, s->value, NULL, 0, NULL, NULL, false);
      break;
    }
    case S_CALL:
      for (int k = 0; k < s->ncalls; k++) emit_call(j, s->callee + k);
      break;
    case S_COMMENT: gcc_jit_block_add_comment(j->blk, NULL, s->text); break;
    case S_KERNEL: js_kernel(j, s); break;
    case S_PREFETCH: js_prefetch(j, s); break;
    case S_FENCE: emit_fence(j); break;
    }
  }
}

gcc_jit_rvalue *js_aff(J *j, const Aff *f) { return aff_rvalue(j, f); }
gcc_jit_rvalue *js_expr(J *j, const IrExpr *e, int el) { return expr_rvalue(j, e, el); }
void js_check_access(J *j, const Access *acc, const char *what) { check_access(j, acc, what); }
void js_check_expr(J *j, const IrExpr *e, const char *what) { check_expr(j, e, what); }

