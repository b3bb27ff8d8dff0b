/* ir_c.c: C rendering of loop-IR expressions and statements (see ir_c.h). The text is
 * both C11 and CUDA C++: every constant carries its type, every helper result is cast.
 * An S_LOOP with partial sums (accs > 1) renders as the plain loop it stands for. */
#include "ir_c.h"

/* As jit_stmt.c's exp_f32, tanh_f32 and log_f32 build them, operation for operation (the Horner
 * constants are the same doubles: 1 / k! rounded once). */
const char ir_c_own_math[] =
    "/* e^y = *s * (e^r, or e^r - 1 with m1): backends/gccjit/jit_stmt.c fb_exp_parts */\n"
    "static inline double tdsl_exp_parts(double y, int m1, double *s) {\n"
    "  double kd = y * 0x1.71547652b82fep0 + 0x1.8p52;\n"
    "  unsigned long long ki;\n"
    "  memcpy(&ki, &kd, 8);\n"
    "  double n = kd - 0x1.8p52;\n"
    "  double r = y - n * 0x1.62e42fefa39efp-1 - n * 0x1.abc9e3b39803fp-56, p = 1.0 / 479001600.0;\n"
    "  p = p * r + 1.0 / 39916800.0;\n"
    "  p = p * r + 1.0 / 3628800.0;\n"
    "  p = p * r + 1.0 / 362880.0;\n"
    "  p = p * r + 1.0 / 40320.0;\n"
    "  p = p * r + 1.0 / 5040.0;\n"
    "  p = p * r + 1.0 / 720.0;\n"
    "  p = p * r + 1.0 / 120.0;\n"
    "  p = p * r + 1.0 / 24.0;\n"
    "  p = p * r + 1.0 / 6.0;\n"
    "  p = p * r + 1.0 / 2.0;\n"
    "  p = p * r + 1.0 / 1.0;\n"
    "  p = m1 ? p * r : p * r + 1.0;\n"
    "  ki = (ki << 52) + 0x3ff0000000000000ull;\n"
    "  memcpy(s, &ki, 8);\n"
    "  return p;\n"
    "}\n"
    "/* the bits of x, its magnitude clamped to limit's when larger (inf too, NaN not) */\n"
    "static inline unsigned int tdsl_clamped_bits(float x, unsigned int limit) {\n"
    "  unsigned int bits;\n"
    "  memcpy(&bits, &x, 4);\n"
    "  if ((bits & 0x7fffffffu) - (limit + 1) < 0x7f800000u - limit) bits = (bits & 0x80000000u) | limit;\n"
    "  return bits;\n"
    "}\n"
    "static __attribute__((unused)) inline float tdsl_exp_f32(float x) {\n"
    "  unsigned int bits = tdsl_clamped_bits(x, 0x42d00000u);\n"
    "  float xc;\n"
    "  memcpy(&xc, &bits, 4);\n"
    "  double s, p = tdsl_exp_parts((double)xc, 0, &s);\n"
    "  return (float)(p * s);\n"
    "}\n"
    "static __attribute__((unused)) inline float tdsl_tanh_f32(float x) {\n"
    "  unsigned int sign, bits = tdsl_clamped_bits(x, 0x41200000u);\n"
    "  memcpy(&sign, &x, 4);\n"
    "  sign &= 0x80000000u;\n"
    "  float xc;\n"
    "  memcpy(&xc, &bits, 4);\n"
    "  double a = fabs((double)xc), s, q = tdsl_exp_parts(a + a, 1, &s), m = s * q + (s - 1.0);\n"
    "  float t = (float)(m / (m + 2.0));\n"
    "  memcpy(&bits, &t, 4);\n"
    "  bits |= sign;\n"
    "  memcpy(&t, &bits, 4);\n"
    "  return t;\n"
    "}\n"
    "/* backends/gccjit/jit_stmt.c log_f32 */\n"
    "static __attribute__((unused)) inline float tdsl_log_f32(float x) {\n"
    "  unsigned int bits, mag, sb = 0xffc00000u, out, mask;\n"
    "  memcpy(&bits, &x, 4);\n"
    "  double d = (double)x;\n"
    "  unsigned long long ix, tmp, iz;\n"
    "  memcpy(&ix, &d, 8);\n"
    "  tmp = ix - 0x3fe6a09e667f3bcdull;\n"
    "  long long ti;\n"
    "  memcpy(&ti, &tmp, 8);\n"
    "  double k = (double)(ti >> 52), z;\n"
    "  iz = ix - (tmp & 0xfff0000000000000ull);\n"
    "  memcpy(&z, &iz, 8);\n"
    "  double f = z - 1.0, s = f / (f + 2.0), s2 = s * s, p = 1.0 / 23;\n"
    "  p = p * s2 + 1.0 / 21;\n"
    "  p = p * s2 + 1.0 / 19;\n"
    "  p = p * s2 + 1.0 / 17;\n"
    "  p = p * s2 + 1.0 / 15;\n"
    "  p = p * s2 + 1.0 / 13;\n"
    "  p = p * s2 + 1.0 / 11;\n"
    "  p = p * s2 + 1.0 / 9;\n"
    "  p = p * s2 + 1.0 / 7;\n"
    "  p = p * s2 + 1.0 / 5;\n"
    "  p = p * s2 + 1.0 / 3;\n"
    "  p = p * s2 + 1.0 / 1;\n"
    "  float r = (float)(k * 0x1.62e42fefa39efp-1 + (k * 0x1.abc9e3b39803fp-56 + (s + s) * p));\n"
    "  memcpy(&out, &r, 4);\n"
    "  mag = bits & 0x7fffffffu;\n"
    "  if (mag > 0x7f800000u) sb = bits | 0x00400000u;\n"
    "  if (bits == 0x7f800000u) sb = 0x7f800000u;\n"
    "  if (mag == 0) sb = 0xff800000u;\n"
    "  mask = 0u - (unsigned int)(bits - 1u >= 0x7f7fffffu);\n"
    "  out = (out & ~mask) | (sb & mask);\n"
    "  memcpy(&r, &out, 4);\n"
    "  return r;\n"
    "}\n";

const char cr_helpers[] =
    "#define H1(n, T, body) TDSL_DEV T tdsl_op_##n(T a) { body }\n"
    "#define H2(n, T, body) TDSL_DEV T tdsl_op_##n(T a, T b) { body }\n"
    "#define H3(n, T, body) TDSL_DEV T tdsl_op_##n(T a, T b, T c) { body }\n"
    "#define HELPERS(S, T, F) \\\n"
    "  H1(relu_##S, T, return a >= 0 ? a : (T)0;) \\\n"
    "  H1(sat01_##S, T, return a <= 0 ? (T)0 : a >= 1 ? (T)1 : a;) \\\n"
    "  H1(not_##S, T, return a == 0 ? (T)1 : (T)0;) \\\n"
    "  H2(relu_gate_##S, T, return a > 0 ? b : (T)0;) \\\n"
    "  H2(sat01_gate_##S, T, return a > 0 && a < 1 ? b : (T)0;) \\\n"
    "  H2(lt_##S, T, return a < b ? (T)1 : (T)0;) H2(eq_##S, T, return a == b ? (T)1 : (T)0;) \\\n"
    "  H2(ne_##S, T, return a != b ? (T)1 : (T)0;) \\\n"
    "  H2(or__##S, T, return a != 0 || b != 0 ? (T)1 : (T)0;) \\\n"
    "  H2(and__##S, T, return a != 0 && b != 0 ? (T)1 : (T)0;) \\\n"
    "  H2(max_##S, T, return a > b ? a : a <= b ? b : a + b;) \\\n"
    "  H2(min_##S, T, return a < b ? a : a >= b ? b : a + b;) \\\n"
    "  H3(where_##S, T, return a != 0 ? b : c;) \\\n"
    "  H2(pow_##S, T, return pow##F(a, b);)\n"
    "HELPERS(f32, float, f)\n"
    "HELPERS(f64, double, )\n";

void cr_indent(CRender *r, int ind) { fprintf(r->o, "%*s", ind * 2, ""); }

void cr_comment(FILE *o, const char *text) {
  fputs("/* ", o);
  for (const char *p = text; *p; p++) {
    fputc(*p == '\n' ? ' ' : *p, o);
    if (p[0] == '*' && p[1] == '/') fputc(' ', o);
  }
  fputs(" */", o);
}

void cr_const(FILE *o, double v, bool f32) {
  const char *T = f32 ? "float" : "double";
  if (v != v) fprintf(o, "((%s)TDSL_NAN)", T);
  else if (v > 1.7976931348623157e308) fprintf(o, "((%s)TDSL_INF)", T);
  else if (v < -1.7976931348623157e308) fprintf(o, "(-(%s)TDSL_INF)", T);
  else if (f32) fprintf(o, "((float)%.17e)", v); /* the double rounded once, as gccjit does */
  else fprintf(o, "%.17e", v);
}

static const char *dim_prefix(const CRender *r) { return r->dim ? r->dim : "tdsl_dim_"; }

static void cr_prod(CRender *r, int p) {
  const IrProd *x = ir_prod_at(r->m, p);
  for (int i = 0; x && i < x->n; i++) fprintf(r->o, "%s(long)%s%d", i ? "*" : "", dim_prefix(r), x->dims[i]);
}

void cr_ext(CRender *r, long ext, int dext) {
  if (!dext) {
    fprintf(r->o, "%ldL", ext);
    return;
  }
  fputc('(', r->o);
  if (ext != 1) fprintf(r->o, "%ldL*", ext);
  cr_prod(r, dext);
  fputc(')', r->o);
}

/* An affine form with strides over dynamic dimensions: always in long arithmetic. */
static void cr_aff_dyn(CRender *r, const Aff *f) {
  for (int i = 0; i < f->n; i++) {
    const Term *t = &f->t[i];
    if (i) fputs(" + ", r->o);
    fprintf(r->o, "%ldL", t->coef);
    if (t->dyn) {
      fputc('*', r->o);
      cr_prod(r, t->dyn);
    }
    if (t->var >= 0) fprintf(r->o, "*i%d", t->var);
    else if (t->var != AFF_ONE) fprintf(r->o, "*(long)%s%d", r->sym, -1 - t->var);
  }
  fprintf(r->o, " + %ldL", f->off);
}

void cr_aff(CRender *r, const Aff *f) {
  for (int i = 0; i < f->n; i++)
    if (f->t[i].dyn) {
      cr_aff_dyn(r, f);
      return;
    }
  if (!r->idx32) {
    aff_print_c(r->o, r->sym, f);
    return;
  }
  for (int i = 0; i < f->n; i++) {
    if (i) fputs(" + ", r->o);
    if (f->t[i].coef != 1) fprintf(r->o, "%ld*", f->t[i].coef);
    if (f->t[i].var >= 0) fprintf(r->o, "i%d", f->t[i].var);
    else fprintf(r->o, "%s%d", r->sym, -1 - f->t[i].var);
  }
  if (f->n == 0 || f->off) fprintf(r->o, f->n ? " + %ld" : "%ld", f->off);
}

void cr_access(CRender *r, const Access *acc) {
  fprintf(r->o, "%s%d[", r->buf, acc->buf);
  cr_aff(r, &acc->flat);
  fputc(']', r->o);
}

static const char *math_fn(PrimOp op) {
  switch (op) {
  case OP_EXP: return "exp";
  case OP_LOG: return "log";
  case OP_EXP2: return "exp2";
  case OP_LOG2: return "log2";
  case OP_SIN: return "sin";
  case OP_COS: return "cos";
  case OP_SQRT: return "sqrt";
  case OP_TANH: return "tanh";
  case OP_ERF: return "erf";
  case OP_MOD: return "fmod";
  default: return NULL;
  }
}

static const char *infix(PrimOp op) {
  switch (op) {
  case OP_ADD: return "+";
  case OP_SUB: return "-";
  case OP_MUL: return "*";
  case OP_DIV: return "/";
  default: return NULL;
  }
}

/* Ops with a special form; false for calls of a math function or a helper. */
static bool special_op(CRender *r, const IrExpr *x, bool f32) {
  FILE *o = r->o;
  const char *T = f32 ? "float" : "double", *sfx = f32 ? "f" : "", *in = infix(x->op);
  switch (x->op) {
  case OP_ID: case OP_ARG1: cr_expr(r, x->a[0], f32); return true;
  case OP_ARG2: cr_expr(r, x->a[1], f32); return true;
  case OP_NEG: fputs("(-", o); cr_expr(r, x->a[0], f32); fputc(')', o); return true;
  case OP_RECIP: fprintf(o, "((%s)1 / ", T); cr_expr(r, x->a[0], f32); fputc(')', o); return true;
  case OP_RECIP_SQRT: fprintf(o, "((%s)1 / sqrt%s(", T, sfx); cr_expr(r, x->a[0], f32); fputs("))", o); return true;
  case OP_FMA: /* a*b + c rounded twice, as op_eval and the gccjit backend compute it */
    fputc('(', o);
    cr_expr(r, x->a[0], f32);
    fputs(" * ", o);
    cr_expr(r, x->a[1], f32);
    fputs(" + ", o);
    cr_expr(r, x->a[2], f32);
    fputc(')', o);
    return true;
  default: break;
  }
  if (!in) return false;
  fputc('(', o);
  cr_expr(r, x->a[0], f32);
  fprintf(o, " %s ", in);
  cr_expr(r, x->a[1], f32);
  fputc(')', o);
  return true;
}

void cr_expr(CRender *r, const IrExpr *x, bool f32) {
  FILE *o = r->o;
  const char *T = f32 ? "float" : "double";
  switch (x->kind) {
  case X_CONST: cr_const(o, x->value, f32); return;
  case X_SYM: fprintf(o, "((%s)%s%d)", T, r->sym, x->sym); return;
  case X_LOAD:
    if ((VEC_AT(r->m->bufs, IrBuf, x->acc.buf)->elem == ELEM_F32) != f32) fprintf(o, "(%s)", T);
    cr_access(r, &x->acc);
    return;
  case X_OP: break;
  }
  if (special_op(r, x, f32)) return;
  const char *fn = math_fn(x->op);
  if ((x->op == OP_EXP || x->op == OP_TANH || x->op == OP_LOG) && f32 && r->own_math) fprintf(o, "tdsl_%s_f32(", fn);
  else if (fn) fprintf(o, "%s%s(", fn, f32 ? "f" : "");
  else fprintf(o, "tdsl_op_%s_%s(", op_info[x->op].name, f32 ? "f32" : "f64");
  for (int i = 0; i < op_info[x->op].arity; i++) {
    if (i) fputs(", ", o);
    cr_expr(r, x->a[i], f32);
  }
  fputc(')', o);
}

void cr_accum(CRender *r, PrimOp op, bool f32, const char *lhs, const IrExpr *rhs, const char *rhs_text) {
  FILE *o = r->o;
  const char *in = infix(op);
  if (in) fprintf(o, "(%s %s ", lhs, in);
  else fprintf(o, "tdsl_op_%s_%s(%s, ", op_info[op].name, f32 ? "f32" : "f64", lhs);
  if (rhs) cr_expr(r, rhs, f32);
  else fputs(rhs_text, o);
  fputc(')', o);
}

void cr_store_value(CRender *r, const Stmt *s, bool f32) {
  IrExpr old = {.kind = X_LOAD, .acc = s->dst};
  IrExpr acc = {.kind = X_OP, .op = s->accum, .a = {&old, s->val}};
  cr_expr(r, s->accum == OP_ARG2 ? s->val : &acc, f32);
}

void cr_store(CRender *r, const Stmt *s) {
  cr_access(r, &s->dst);
  fputs(" = ", r->o);
  cr_store_value(r, s, VEC_AT(r->m->bufs, IrBuf, s->dst.buf)->elem == ELEM_F32);
  fputs(";\n", r->o);
}

/* The loop's header with its variable named i<var><sfx>, stepping by step. */
static void cr_loop(CRender *r, const Stmt *s, const char *sfx, int step) {
  int v = s->var;
  char inc[32];
  if (step == 1) snprintf(inc, sizeof inc, "i%d%s++", v, sfx);
  else snprintf(inc, sizeof inc, "i%d%s += %d", v, sfx, step);
  if (s->tile_var >= 0 && s->tile > 0) /* v over [tile*tile_var, min(tile*(tile_var+1), ext)) */
    fprintf(r->o, "for (long i%d%s = %dL*i%d; i%d%s < (%dL*i%d + %dL < %ldL ? %dL*i%d + %dL : %ldL); %s) {\n", v, sfx, s->tile,
            s->tile_var, v, sfx, s->tile, s->tile_var, s->tile, s->ext, s->tile, s->tile_var, s->tile, s->ext, inc);
  else if (s->dext) {
    fprintf(r->o, "for (long i%d%s = 0; i%d%s < ", v, sfx, v, sfx);
    cr_ext(r, s->ext, s->dext);
    fprintf(r->o, "; %s) {\n", inc);
  } else fprintf(r->o, "for (long i%d%s = 0; i%d%s < %ldL; %s) {\n", v, sfx, v, sfx, s->ext, inc);
}

/* A streamed loop (Stmt.stream = L cells): L values at a time into tdsl_sv, written
 * 16 bytes at a time with TDSL_STREAM_F32/F64 (a non-temporal store where the compiler
 * has SSE2; C makes no assumption of wider vectors). */
static void cr_stream_loop(CRender *r, const Stmt *s, int ind) {
  const Stmt *st = s->body.items[0];
  bool f32 = VEC_AT(r->m->bufs, IrBuf, st->dst.buf)->elem == ELEM_F32;
  int v = s->var, L = s->stream;
  FILE *o = r->o;
  cr_loop(r, s, "s", L);
  cr_indent(r, ind + 1);
  fprintf(o, "%s tdsl_sv[%d];\n", f32 ? "float" : "double", L);
  cr_indent(r, ind + 1);
  fprintf(o, "for (long i%d = i%ds; i%d < i%ds + %d; i%d++) tdsl_sv[i%d - i%ds] = ", v, v, v, v, L, v, v, v);
  cr_store_value(r, st, f32);
  fputs(";\n", o);
  cr_indent(r, ind + 1);
  int g = f32 ? 4 : 2; /* cells in 16 bytes */
  fprintf(o, "{ long i%d = i%ds; for (int tdsl_g = 0; tdsl_g < %d; tdsl_g += %d) TDSL_STREAM_%s(&", v, v, L, g, f32 ? "F32" : "F64");
  cr_access(r, &st->dst);
  fputs(" + tdsl_g, tdsl_sv + tdsl_g); }\n", o);
  cr_indent(r, ind);
  fputs("}\n", o);
}

static void cr_guards(CRender *r, const Stmt *s) {
  fputs("if (", r->o);
  for (int k = 0; k < s->nguards; k++) {
    if (k) fputs(" && ", r->o);
    fputc('(', r->o);
    cr_aff(r, &s->guards[k].aff);
    fputs(") >= 0 && (", r->o);
    cr_aff(r, &s->guards[k].aff);
    fputs(") < ", r->o);
    cr_ext(r, s->guards[k].ext, s->guards[k].dext);
  }
  fputs(") {\n", r->o);
}

void cr_stmt(CRender *r, const Stmt *s, int ind) {
  if (r->stmt && r->stmt(r, s, ind)) return;
  FILE *o = r->o;
  cr_indent(r, ind);
  switch (s->kind) {
  case S_LOOP:
  case S_IF:
    if (s->kind == S_LOOP && s->stream) {
      cr_stream_loop(r, s, ind);
      break;
    }
    if (s->kind == S_LOOP) cr_loop(r, s, "", 1);
    else cr_guards(r, s);
    cr_stmts(r, &s->body, ind + 1);
    cr_indent(r, ind);
    fputs("}\n", o);
    break;
  case S_STORE: cr_store(r, s); break;
  case S_FILL: {
    const IrBuf *b = VEC_AT(r->m->bufs, IrBuf, s->buf);
    fputs("for (long k = 0; k < ", o);
    cr_ext(r, b->size, b->dsize);
    fprintf(o, "; k++) %s%d[k] = ", r->buf, s->buf);
    cr_const(o, s->value, b->elem == ELEM_F32);
    fputs(";\n", o);
    break;
  }
  case S_CALL:
    for (int k = 0; k < s->ncalls; k++) {
      if (k) cr_indent(r, ind);
      fprintf(o, "%s%d(%s); ", r->fn ? r->fn : "tdsl_fn_", s->callee + k, r->call_args ? r->call_args : "");
      cr_comment(o, VEC_AT(r->m->funcs, IrFunc, s->callee + k)->name);
      fputc('\n', o);
    }
    break;
  case S_COMMENT:
    cr_comment(o, s->text);
    fputc('\n', o);
    break;
  case S_PREFETCH: { /* one per 64-byte line */
    int esize = VEC_AT(r->m->bufs, IrBuf, s->dst.buf)->elem == ELEM_F64 ? 8 : 4;
    for (long c = 0; c < s->ext; c += 64 / esize) {
      fprintf(o, "%s__builtin_prefetch(&%s%d[", c ? " " : "", r->buf, s->dst.buf);
      cr_aff(r, &s->dst.flat);
      fprintf(o, " + %ld], 1);", c);
    }
    fputc('\n', o);
    break;
  }
  case S_FENCE: fputs("TDSL_FENCE();\n", o); break;
  case S_KERNEL: /* the schedule pass's (src/schedule.h): a renderer that takes scheduled IR hooks it */
    fputs("\n#error tdslc: a scheduled kernel statement reached a renderer without it\n", o);
    break;
  }
}

void cr_stmts(CRender *r, const PtrVec *body, int ind) {
  for (int i = 0; i < body->len; i++) cr_stmt(r, body->items[i], ind);
}
