/* emit_c.c: C renderings of the loop IR: --emit-c (the same code the gccjit backend
 * builds, as C source) and --emit-header (typed access for static linking). */
#include <ctype.h>
#include <string.h>

#include "emit_c.h"

static const char *ctype(const IrModule *m, int b) {
  return VEC_AT(m->bufs, IrBuf, b)->elem == ELEM_F64 ? "double" : "float";
}

void c_const(FILE *o, double v, bool f32) {
  if (v != v) fputs("NAN", o);
  else if (v == 1.0 / 0.0) fputs("INFINITY", o);
  else if (v == -1.0 / 0.0) fputs("-INFINITY", o);
  else {
    char buf[40];
    snprintf(buf, sizeof buf, "%.17g", v);
    if (!strpbrk(buf, ".e")) strcat(buf, ".0"); /* 1f is not C: 1.0f */
    fprintf(o, "%s%s", buf, f32 ? "f" : "");
  }
}

void c_expr(FILE *o, const IrModule *m, const IrExpr *e, bool f32) {
  const char *sfx = f32 ? "f" : "";
  const char *T = f32 ? "float" : "double";
  switch (e->kind) {
  case X_CONST: c_const(o, e->value, f32); return;
  case X_SYM: fprintf(o, "(%s)tdsl_sym_%d", T, e->sym); return;
  case X_LOAD:
    fprintf(o, "(%s)tdsl_buf_%d[", T, e->acc.buf);
    aff_print_c(o, "tdsl_sym_", &e->acc.flat);
    fputc(']', o);
    return;
  case X_OP: break;
  }
  const char *infix = NULL, *fn = NULL;
  switch (e->op) {
  case OP_ID: case OP_ARG1: c_expr(o, m, e->a[0], f32); return;
  case OP_ARG2: c_expr(o, m, e->a[1], f32); return;
  case OP_ADD: infix = "+"; break;
  case OP_SUB: infix = "-"; break;
  case OP_MUL: infix = "*"; break;
  case OP_DIV: infix = "/"; break;
  case OP_EXP: fn = "exp"; break;
  case OP_LOG: fn = "log"; break;
  case OP_EXP2: fn = "exp2"; break;
  case OP_LOG2: fn = "log2"; break;
  case OP_SIN: fn = "sin"; break;
  case OP_COS: fn = "cos"; break;
  case OP_SQRT: fn = "sqrt"; break;
  case OP_TANH: fn = "tanh"; break;
  case OP_MOD: fn = "fmod"; break;
  default: break;
  }
  if (infix) {
    fputc('(', o);
    c_expr(o, m, e->a[0], f32);
    fprintf(o, " %s ", infix);
    c_expr(o, m, e->a[1], f32);
    fputc(')', o);
    return;
  }
  if (e->op == OP_NEG || e->op == OP_RECIP || e->op == OP_RECIP_SQRT) {
    fputs(e->op == OP_NEG ? "(-" : e->op == OP_RECIP ? "(1 / " : "(1 / sqrt", o);
    if (e->op == OP_RECIP_SQRT) fputs(sfx, o);
    fputc('(', o);
    c_expr(o, m, e->a[0], f32);
    fputs("))", o);
    return;
  }
  if (e->op == OP_FMA) {
    fputs("(", o);
    c_expr(o, m, e->a[0], f32);
    fputs(" * ", o);
    c_expr(o, m, e->a[1], f32);
    fputs(" + ", o);
    c_expr(o, m, e->a[2], f32);
    fputs(")", o);
    return;
  }
  if (fn) fprintf(o, "%s%s(", fn, sfx);
  else fprintf(o, "tdsl_op_%s_%s(", op_info[e->op].name, f32 ? "f32" : "f64");
  for (int i = 0; i < op_info[e->op].arity; i++) {
    if (i) fputs(", ", o);
    c_expr(o, m, e->a[i], f32);
  }
  fputc(')', o);
}

void c_check_access(FILE *o, const IrModule *m, const Access *acc, const char *what, int ind) {
  const IrBuf *b = VEC_AT(m->bufs, IrBuf, acc->buf);
  for (int ax = 0; ax < acc->rank; ax++) {
    fprintf(o, "{ long ix = ");
    aff_print_c(o, "tdsl_sym_", &acc->axis[ax]);
    fprintf(o, "; if (ix < 0 || ix >= %d) { dprintf(2, \"tdsl: index %%ld out of range [0, %d) on axis %d of tensor %s in ",
            b->dims[ax], b->dims[ax], ax, b->name);
    for (const char *p = what; *p; p++) fprintf(o, *p == '"' || *p == '\\' ? "\\%c" : *p == '%' ? "%%%c" : "%c", *p);
    fprintf(o, "\\n\", ix); abort(); } }\n%*s", ind * 2, "");
  }
}

void c_check_expr(FILE *o, const IrModule *m, const IrExpr *e, const char *what, int ind) {
  if (e->kind == X_LOAD) c_check_access(o, m, &e->acc, what, ind);
  if (e->kind == X_OP)
    for (int i = 0; i < op_info[e->op].arity; i++) c_check_expr(o, m, e->a[i], what, ind);
}

/* --check-bounds: every axis index of every access, as the gccjit backend does. */
static void c_checks(FILE *o, const IrModule *m, const Stmt *s, int ind) {
  c_check_access(o, m, &s->dst, s->what, ind);
  c_check_expr(o, m, s->val, s->what, ind);
}

static void c_stmts(FILE *o, const IrModule *m, const PtrVec *body, int ind, bool check, const char *name) {
  for (int i = 0; i < body->len; i++) {
    const Stmt *s = body->items[i];
    fprintf(o, "%*s", ind * 2, "");
    switch (s->kind) {
    case S_LOOP:
      if (s->accs > 1) {
        c_reduce_loop(o, m, s, ind, check);
        break;
      }
      if (s->tile_var >= 0)
        fprintf(o, "for (long i%d = %dL*i%d; i%d < (%dL*i%d + %d < %ld ? %dL*i%d + %d : %ld); i%d++) {\n", s->var, s->tile,
                s->tile_var, s->var, s->tile, s->tile_var, s->tile, s->ext, s->tile, s->tile_var, s->tile, s->ext, s->var);
      else fprintf(o, "for (long i%d = 0; i%d < %ld; i%d++) {\n", s->var, s->var, s->ext, s->var);
      c_stmts(o, m, &s->body, ind + 1, check, name);
      fprintf(o, "%*s}\n", ind * 2, "");
      break;
    case S_IF:
      fputs("if (", o);
      for (int k = 0; k < s->nguards; k++) {
        if (k) fputs(" && ", o);
        fputs("(", o);
        aff_print_c(o, "tdsl_sym_", &s->guards[k].aff);
        fputs(") >= 0 && (", o);
        aff_print_c(o, "tdsl_sym_", &s->guards[k].aff);
        fprintf(o, ") < %ld", s->guards[k].ext);
      }
      fputs(") {\n", o);
      c_stmts(o, m, &s->body, ind + 1, check, name);
      fprintf(o, "%*s}\n", ind * 2, "");
      break;
    case S_STORE: {
      bool f32 = VEC_AT(m->bufs, IrBuf, s->dst.buf)->elem == ELEM_F32;
      if (check) c_checks(o, m, s, ind);
      fprintf(o, "tdsl_buf_%d[", s->dst.buf);
      aff_print_c(o, "tdsl_sym_", &s->dst.flat);
      fputs("] = ", o);
      IrExpr old = {.kind = X_LOAD, .acc = s->dst};
      if (s->accum == OP_ARG2) c_expr(o, m, s->val, f32);
      else {
        IrExpr acc = {.kind = X_OP, .op = s->accum, .a = {&old, s->val}};
        c_expr(o, m, &acc, f32);
      }
      fputs(";\n", o);
      break;
    }
    case S_FILL:
      fprintf(o, "for (long k = 0; k < %ld; k++) tdsl_buf_%d[k] = ", VEC_AT(m->bufs, IrBuf, s->buf)->size, s->buf);
      c_const(o, s->value, false);
      fputs(";\n", o);
      break;
    case S_CALL: fprintf(o, "%s_fn_%d(self); /* %s */\n", name, s->callee, VEC_AT(m->funcs, IrFunc, s->callee)->name); break;
    case S_COMMENT: fprintf(o, "/* %s */\n", s->text); break;
    case S_KERNEL: c_kernel(o, m, s, ind); break;
    }
  }
}

static const char *helpers_c =
    "#define H1(n, T, ...) static __attribute__((unused)) T tdsl_op_##n(T a) { __VA_ARGS__ }\n"
    "#define H2(n, T, ...) static __attribute__((unused)) T tdsl_op_##n(T a, T b) { __VA_ARGS__ }\n"
    "#define H3(n, T, ...) static __attribute__((unused)) T tdsl_op_##n(T a, T b, T c) { __VA_ARGS__ }\n"
    "#define HELPERS(S, T, F) \\\n"
    "  H1(relu_##S, T, return a >= 0 ? a : 0;) \\\n"
    "  H1(sat01_##S, T, return a <= 0 ? 0 : a >= 1 ? 1 : a;) \\\n"
    "  H1(not_##S, T, return a == 0 ? 1 : 0;) \\\n"
    "  H2(relu_gate_##S, T, return a > 0 ? b : 0;) \\\n"
    "  H2(sat01_gate_##S, T, return a > 0 && a < 1 ? b : 0;) \\\n"
    "  H2(lt_##S, T, return a < b;) H2(eq_##S, T, return a == b;) H2(ne_##S, T, return a != b;) \\\n"
    "  H2(or__##S, T, return a != 0 || b != 0;) H2(and__##S, T, return a != 0 && b != 0;) \\\n"
    "  H2(max_##S, T, return a > b ? a : a <= b ? b : a + b;) \\\n"
    "  H2(min_##S, T, return a < b ? a : a >= b ? b : a + b;) \\\n"
    "  H3(where_##S, T, return a != 0 ? b : c;) \\\n"
    "  H2(pow_##S, T, if (b != nearbyint##F(b) || !(fabs##F(b) < 9.0e15)) return pow##F(a, b); \\\n"
    "     long n = (long)b, k = n < 0 ? -n : n; T r = 1; \\\n"
    "     for (; k; k >>= 1) { if (k & 1) r *= a; a *= a; } return n < 0 ? 1 / r : r;)\n"
    "HELPERS(f32, float, f)\n"
    "HELPERS(f64, double, )\n";

/* The metadata as a C string literal, so the rendering is a complete model source. */
static void c_meta(FILE *o, const IrModule *m, const char *name) {
  Arena a = {0};
  const char *meta = ir_metadata(&a, m, name);
  fprintf(o, "const char *%s_model_meta(void) {\n  return \"", name);
  for (const char *p = meta; *p; p++) {
    if (*p == '\n') fputs(p[1] ? "\\n\"\n         \"" : "\\n", o);
    else if (*p == '"' || *p == '\\') fprintf(o, "\\%c", *p);
    else fputc(*p, o);
  }
  fputs("\";\n}\n", o);
  if (strcmp(name, "tdsl")) fprintf(o, "const char *tdsl_model_meta(void) { return %s_model_meta(); }\n", name);
  fputc('\n', o);
  arena_free(&a);
}

/* The instance struct; its layout is ir_layout's (checked), the bodies name its fields
 * tdsl_buf_N / tdsl_sym_N through macros. */
static void c_instance(FILE *o, const IrModule *m) {
  Arena a = {0};
  IrLayout l = ir_layout(&a, m);
  fprintf(o, "struct tdsl_instance {\n  void *rt[%d];\n", IR_INST_HEADER / 8);
  for (int i = 0; i < m->bufs.len; i++) {
    const IrBuf *b = VEC_AT(m->bufs, IrBuf, i);
    fprintf(o, "  _Alignas(64) %s b%d[%ld]; /* %s */\n", ctype(m, i), i, b->size > 0 ? b->size : 1, b->name);
  }
  for (int i = 0; i < m->syms.len; i++) fprintf(o, "  int s%d; /* %s */\n", i, VEC_AT(m->syms, IrSym, i)->name);
  fputs("};\n", o);
  for (int i = 0; i < m->bufs.len; i++)
    fprintf(o, "_Static_assert(offsetof(struct tdsl_instance, b%d) == %ld, \"layout\");\n#define tdsl_buf_%d (self->b%d)\n", i,
            l.buf_off[i], i, i);
  for (int i = 0; i < m->syms.len; i++)
    fprintf(o, "_Static_assert(offsetof(struct tdsl_instance, s%d) == %ld, \"layout\");\n#define tdsl_sym_%d (self->s%d)\n", i,
            l.sym_off[i], i, i);
  fprintf(o, "_Static_assert(sizeof(struct tdsl_instance) <= %ld, \"layout\");\n\n", l.size);
  arena_free(&a);
}

void emit_c(FILE *o, const IrModule *m, bool check, const char *name) {
  fputs("/* Generated by tdslc: the C rendering of the code the gccjit backend builds. */\n"
        "#include <math.h>\n#include <stddef.h>\n#include <stdio.h>\n#include <stdlib.h>\n\n",
        o);
  fputs(helpers_c, o);
  fputc('\n', o);
  c_instance(o, m);
  c_meta(o, m, name);
  for (int i = 0; i < m->funcs.len; i++) {
    const IrFunc *f = VEC_AT(m->funcs, IrFunc, i);
    fprintf(o, "%svoid %s_fn_%d(struct tdsl_instance *self);\n", f->exported ? "" : "static ", name, i);
  }
  for (int i = 0; i < m->funcs.len; i++) {
    const IrFunc *f = VEC_AT(m->funcs, IrFunc, i);
    fprintf(o, "%svoid %s_fn_%d(struct tdsl_instance *self) { /* %s */\n", f->exported ? "" : "static __attribute__((unused)) ",
            name, i, f->name);
    c_stmts(o, m, &f->body, 1, check, name);
    fputs("}\n\n", o);
  }
  /* What the runtime calls for the "seq" routines (jit_export_dispatch). */
  fprintf(o, "void %s_call(struct tdsl_instance *self, int k) {\n  switch (k) {\n", name);
  for (int i = 0; i < m->funcs.len; i++)
    if (!VEC_AT(m->funcs, IrFunc, i)->seq) fprintf(o, "  case %d: %s_fn_%d(self); break;\n", i, name, i);
  fputs("  default: break;\n  }\n}\n", o);
}

static void cname(FILE *o, const char *s) {
  for (; *s; s++) fputc(isalnum((unsigned char)*s) ? *s : '_', o);
}

void emit_header(FILE *o, const IrModule *m, const char *name, const char *const *extra) {
  Arena a = {0};
  IrLayout l = ir_layout(&a, m);
  fprintf(o,
          "/* Generated by tdslc: typed access to the compiled model %s, for static linking\n"
          " * (tdslc -c) or direct access to an open model's storage. Each open model has its\n"
          " * own instance, tdsl_instance(m) (tdsl.h): %s_T(inst) is tensor T in it (row-major,\n"
          " * memory order batch, output, input), %s_sym_S(inst) index symbol S, and the\n"
          " * functions are the routines, which take the instance. Open the linked-in model with\n"
          " *   tdsl_open_resolved(%s_resolve, NULL, err, sizeof err)   (tdsl.h). */\n",
          name, name, name, name);
  fprintf(o, "#ifndef TDSL_MODEL_%s_H\n#define TDSL_MODEL_%s_H\n\n#include <string.h>\n\n", name, name);
  fprintf(o, "const char *%s_model_meta(void);\n", name);
  for (int i = 0; i < m->bufs.len; i++) {
    const IrBuf *b = VEC_AT(m->bufs, IrBuf, i);
    fprintf(o, "#define %s_", name);
    cname(o, b->name);
    fprintf(o, "(inst) ((%s *)((char *)(inst) + %ld)) /* %s [", ctype(m, i), l.buf_off[i], b->name);
    for (int k = 0; k < b->rank; k++) fprintf(o, "%s%d", k ? "," : "", b->dims[k]);
    fprintf(o, "], %ld cells */\n", b->size > 0 ? b->size : 1);
  }
  for (int i = 0; i < m->syms.len; i++) {
    fprintf(o, "#define %s_sym_", name);
    cname(o, VEC_AT(m->syms, IrSym, i)->name);
    fprintf(o, "(inst) (*(int *)((char *)(inst) + %ld))\n", l.sym_off[i]);
  }
  fprintf(o, "void %s_call(void *inst, int k);\n", name);
  for (int i = 0; i < m->funcs.len; i++) {
    const IrFunc *f = VEC_AT(m->funcs, IrFunc, i);
    if (f->seq) {
      /* The routine is a list of NAME_call steps. */
      fprintf(o, "static inline void %s_", name);
      cname(o, f->name);
      fputs("(void *inst) {\n", o);
      for (int k = 0; k < f->body.len; k++) {
        const Stmt *s = f->body.items[k];
        if (s->kind == S_CALL) fprintf(o, "  %s_call(inst, %d);\n", name, s->callee);
      }
      fputs("}\n", o);
      continue;
    }
    if (!f->exported) continue;
    fprintf(o, "void %s_fn_%d(void *inst); /* %s */\n#define %s_", name, i, f->name, name);
    cname(o, f->name);
    fprintf(o, " %s_fn_%d\n", name, i);
  }
  for (const char *const *x = extra; x && *x; x++) fprintf(o, "extern char %s_%s[];\n", name, *x);
  /* A resolver over the linked-in symbols, for tdsl_open_resolved. */
  fprintf(o,
          "\nstatic inline void *%s_resolve(void *h, const char *name) {\n  (void)h;\n"
          "  if (!strcmp(name, \"tdsl_model_meta\") || !strcmp(name, \"%s_model_meta\")) return (void *)%s_model_meta;\n",
          name, name, name);
  fprintf(o, "  if (!strcmp(name, \"%s_call\")) return (void *)%s_call;\n", name, name);
  for (int i = 0; i < m->funcs.len; i++)
    if (VEC_AT(m->funcs, IrFunc, i)->exported && !VEC_AT(m->funcs, IrFunc, i)->seq)
      fprintf(o, "  if (!strcmp(name, \"%s_fn_%d\")) return (void *)%s_fn_%d;\n", name, i, name, i);
  for (const char *const *x = extra; x && *x; x++) fprintf(o, "  if (!strcmp(name, \"%s_%s\")) return (void *)%s_%s;\n", name, *x, name, *x);
  fputs("  return NULL;\n}\n\n#endif\n", o);
  arena_free(&a);
}
