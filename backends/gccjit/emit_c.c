/* emit_c.c: C renderings of the loop IR: --emit-c (the same code the gccjit backend
 * builds, as C source) and --emit-header (typed access for static linking). */
#include <ctype.h>
#include <string.h>

#include "emit_c.h"
#include "strtab.h"

static const char *ctype(const IrModule *m, int b) {
  return VEC_AT(m->bufs, IrBuf, b)->elem == ELEM_F64 ? "double" : "float";
}

/* Text inside a printf format in a C string literal: no quote, backslash, trigraph,
 * newline or conversion ends it. */
static void c_fmt_literal(FILE *o, const char *s) {
  for (const char *p = s; *p; p++)
    fprintf(o, strchr("\"\\?", *p) ? "\\%c" : *p == '%' ? "%%%c" : *p == '\n' ? " " : "%c", *p);
}

/* Each check is "{ ... }" then a new line indented at ind, where the checked
 * statement follows. A failed one records its message in the instance's fault (as the
 * gccjit backend does, tdsl_abi.h) and leaves the function; callers leave after it. */
void c_check_access(CRender *r, const Access *acc, const char *what, int ind) {
  FILE *o = r->o;
  const IrBuf *b = VEC_AT(r->m->bufs, IrBuf, acc->buf);
  for (int ax = 0; ax < acc->rank; ax++) {
    fprintf(o, "{ long ix = ");
    cr_aff(r, &acc->axis[ax]);
    bool dyn = DIM_IS_DYN(b->dims[ax]);
    if (dyn)
      fprintf(o, "; long n = tdsl_dim_%d; if (ix < 0 || ix >= n) { snprintf(self->fault_msg, sizeof self->fault_msg, "
                 "\"index %%ld out of range [0, %%ld) on axis %d of tensor ",
              DIM_DYN_ID(b->dims[ax]), ax);
    else
      fprintf(o,
              "; if (ix < 0 || ix >= %d) { snprintf(self->fault_msg, sizeof self->fault_msg, \"index %%ld out of range [0, %d) "
              "on axis %d of tensor ",
              b->dims[ax], b->dims[ax], ax);
    c_fmt_literal(o, b->name);
    fputs(" in ", o);
    c_fmt_literal(o, what);
    fprintf(o, dyn ? "\", ix, n); self->fault = 1; return; } }\n" : "\", ix); self->fault = 1; return; } }\n");
    cr_indent(r, ind);
  }
}

void c_check_expr(CRender *r, const IrExpr *e, const char *what, int ind) {
  if (e->kind == X_LOAD) c_check_access(r, &e->acc, what, ind);
  if (e->kind == X_OP)
    for (int i = 0; i < op_info[e->op].arity; i++) c_check_expr(r, e->a[i], what, ind);
}

/* What c_hook needs: --check-bounds, and where the parallel loops of the function
 * being rendered went (NAME_par_F_K, K counted in rendering order). */
typedef struct CEmit {
  bool check;
  const char *name;
  int fn, npar;
  bool in_outline; /* rendering a parallel loop's body: its loops run serially */
  Arena *a;
} CEmit;

/* What the C rendering adds to the shared one: the schedule's statements (reduction
 * loops in partial sums, contraction kernels: emit_c_sched.c; parallel loops outlined,
 * run through the runtime's pool) and, under --check-bounds, every axis index of every
 * access tested before a store, as the gccjit backend does. */
static bool c_hook(CRender *r, const Stmt *s, int ind) {
  CEmit *e = r->user;
  bool check = e->check;
  if (s->kind == S_LOOP && s->parallel && !e->in_outline) {
    cr_indent(r, ind);
    fprintf(r->o, "tdsl_parallel_run(self, %s_par_%d_%d, ", e->name, e->fn, e->npar++);
    cr_ext(r, s->ext, s->dext);
    fputs(");\n", r->o);
    return true;
  }
  if (s->kind == S_LOOP && s->accs > 1) {
    cr_indent(r, ind);
    c_reduce_loop(r, s, ind, check);
    return true;
  }
  if (s->kind == S_KERNEL && s->kern->parallel && !e->in_outline) {
    cr_indent(r, ind);
    c_kernel_parallel(r, s, ind, arena_printf(e->a, "%s_par_%d", e->name, e->fn), e->npar);
    e->npar += 2;
    return true;
  }
  if (s->kind == S_KERNEL) {
    cr_indent(r, ind);
    c_kernel(r, s, ind);
    return true;
  }
  for (int k = 0; s->kind == S_CALL && check && k < s->ncalls; k++) {
    cr_indent(r, ind);
    fprintf(r->o, "%s%d(self); if (self->fault) return; ", r->fn, s->callee + k);
    cr_comment(r->o, VEC_AT(r->m->funcs, IrFunc, s->callee + k)->name);
    fputc('\n', r->o);
  }
  if (s->kind == S_CALL && check) return true;
  if (s->kind != S_STORE || !check) return false;
  cr_indent(r, ind);
  c_check_access(r, &s->dst, s->what, ind);
  c_check_expr(r, s->val, s->what, ind);
  cr_store(r, s);
  return true;
}

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
  fprintf(o, "struct tdsl_instance {\n  void *rt[%d];\n  int fault;\n  char fault_pad[%d];\n  char fault_msg[%d];\n",
          INST_RT_SLOTS, INST_FAULT_MSG - INST_FAULT - 4, INST_FAULT_MSG_LEN);
  for (int i = 0; i < m->bufs.len; i++) {
    const IrBuf *b = VEC_AT(m->bufs, IrBuf, i);
    if (b->dsize) fprintf(o, "  _Alignas(64) %s *b%d; /* %s: the runtime allocates it */\n", ctype(m, i), i, b->name);
    else fprintf(o, "  _Alignas(64) %s b%d[%ld]; /* %s */\n", ctype(m, i), i, b->size > 0 ? b->size : 1, b->name);
  }
  for (int i = 0; i < m->syms.len; i++) fprintf(o, "  int s%d; /* %s */\n", i, VEC_AT(m->syms, IrSym, i)->name);
  for (int i = 0; i < m->dims.len; i++) fprintf(o, "  int d%d; /* %s */\n", i, ir_dim_name(&a, m, i));
  fputs("};\n", o);
  for (int i = 0; i < m->bufs.len; i++)
    fprintf(o, "_Static_assert(offsetof(struct tdsl_instance, b%d) == %ld, \"layout\");\n#define tdsl_buf_%d (self->b%d)\n", i,
            l.buf_off[i], i, i);
  for (int i = 0; i < m->syms.len; i++)
    fprintf(o, "_Static_assert(offsetof(struct tdsl_instance, s%d) == %ld, \"layout\");\n#define tdsl_sym_%d (self->s%d)\n", i,
            l.sym_off[i], i, i);
  for (int i = 0; i < m->dims.len; i++)
    fprintf(o, "_Static_assert(offsetof(struct tdsl_instance, d%d) == %ld, \"layout\");\n#define tdsl_dim_%d (self->d%d)\n", i,
            l.dim_off[i], i, i);
  fprintf(o, "_Static_assert(offsetof(struct tdsl_instance, fault) == %d, \"layout\");\n", INST_FAULT);
  fprintf(o, "_Static_assert(offsetof(struct tdsl_instance, fault_msg) == %d, \"layout\");\n", INST_FAULT_MSG);
  fprintf(o, "_Static_assert(sizeof(struct tdsl_instance) <= %ld, \"layout\");\n\n", l.size);
  arena_free(&a);
}

/* Each parallel loop of f (the schedule marks only outer loops of top-level nests) as
 * `static void NAME_par_F_K(void *arg, long lo, long hi)` running its iterations
 * [lo, hi): what the runtime's pool splits (jit_sched.c outlines them the same way). */
static void c_outline_parallel(CRender *r, const PtrVec *body, int *k) {
  CEmit *e = r->user;
  for (int i = 0; i < body->len; i++) {
    const Stmt *s = body->items[i];
    if (s->kind == S_KERNEL && s->kern->parallel) { /* two functions */
      c_kernel_outline(r, s, arena_printf(e->a, "%s_par_%d", e->name, e->fn), *k);
      *k += 2;
      continue;
    }
    if (s->kind == S_KERNEL) continue;
    if (!(s->kind == S_LOOP && s->parallel)) {
      c_outline_parallel(r, &s->body, k);
      continue;
    }
    fprintf(r->o, "static void %s_par_%d_%d(void *arg, long lo, long hi) {\n  struct tdsl_instance *self = arg;\n",
            e->name, e->fn, (*k)++);
    fprintf(r->o, "  for (long i%d = lo; i%d < hi; i%d++) {\n", s->var, s->var, s->var);
    e->in_outline = true;
    cr_stmts(r, &s->body, 2);
    e->in_outline = false;
    fputs("  }\n}\n\n", r->o);
  }
}

/* The pool hook the runtime puts in slots 2 and 3 of the instance header (NULL: no
 * pool, run serially): the same protocol as the gccjit backend's models. */
static const char c_parallel_run[] =
    "typedef void (*tdsl_par_fn)(void *arg, long lo, long hi);\n"
    "typedef void (*tdsl_par_hook)(void *rt, tdsl_par_fn fn, void *arg, long n);\n"
    "static __attribute__((unused)) void tdsl_parallel_run(struct tdsl_instance *self, tdsl_par_fn fn, long n) {\n"
    "  tdsl_par_hook hook;\n"
    "  memcpy(&hook, &self->rt[2], sizeof hook);\n"
    "  if (hook) hook(self->rt[3], fn, self, n);\n"
    "  else fn(self, 0, n);\n"
    "}\n"
    "static __attribute__((unused)) void tdsl_parallel_call(struct tdsl_instance *self, tdsl_par_fn fn, void *arg, long n) {\n"
    "  tdsl_par_hook hook;\n"
    "  memcpy(&hook, &self->rt[2], sizeof hook);\n"
    "  if (hook) hook(self->rt[3], fn, arg, n);\n"
    "  else fn(arg, 0, n);\n"
    "}\n\n";

/* Streamed stores (Stmt.stream) and their fence: non-temporal with SSE2, plain
 * otherwise (the same values either way). */
static const char c_stream[] =
    "#if defined(__SSE2__)\n#include <emmintrin.h>\n"
    "#define TDSL_STREAM_F32(p, v) _mm_stream_ps((p), _mm_loadu_ps(v))\n"
    "#define TDSL_STREAM_F64(p, v) _mm_stream_pd((p), _mm_loadu_pd(v))\n"
    "#define TDSL_FENCE() _mm_sfence()\n"
    "#else\n"
    "#define TDSL_STREAM_F32(p, v) memcpy((p), (v), 16)\n"
    "#define TDSL_STREAM_F64(p, v) memcpy((p), (v), 16)\n"
    "#define TDSL_FENCE() ((void)0)\n"
    "#endif\n";

void emit_c(FILE *o, const IrModule *m, bool check, bool strict_fp, const char *name) {
  fputs("/* Generated by tdslc: the C rendering of the code the gccjit backend builds. */\n"
        "#include <math.h>\n#include <stddef.h>\n#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n\n",
        o);
  fputs("#define TDSL_DEV static __attribute__((unused))\n#define TDSL_NAN NAN\n#define TDSL_INF INFINITY\n", o);
  /* As the gccjit build with --strict-fp (jit.c, -ffp-contract=off): a * b + c rounds
   * twice at every -O and -march the user compiles with (GNU C fuses it when the target
   * has FMA). */
  if (strict_fp)
    fputs("#if defined(__clang__)\n#pragma STDC FP_CONTRACT OFF\n#elif defined(__GNUC__)\n"
        "#pragma GCC optimize(\"fp-contract=off\")\n#endif\n",
        o);
  /* libm's pow under a name the compiler does not take for its builtin (jit_stmt.c: GCC's
   * vectorizer turns pow (x, 0.5) into a sqrt, NaN at -inf; here with -fno-math-errno). */
  fputs("#if defined(__GNUC__)\nextern float tdsl_libm_powf(float, float) __asm__(\"powf\");\n"
        "extern double tdsl_libm_pow(double, double) __asm__(\"pow\");\n#define powf tdsl_libm_powf\n"
        "#define pow tdsl_libm_pow\n#endif\n",
        o);
  fputs(c_stream, o);
  fputs(cr_helpers, o);
  fputs(ir_c_own_math, o);
  fputc('\n', o);
  c_instance(o, m);
  c_meta(o, m, name);
  fputs(c_parallel_run, o);
  Arena a = {0};
  CEmit e = {.check = check, .name = name, .a = &a};
  CRender r = {.o = o, .m = m, .buf = "tdsl_buf_", .sym = "tdsl_sym_", .fn = arena_printf(&a, "%s_fn_", name), .own_math = true,
               .call_args = "self", .stmt = c_hook, .user = &e};
  for (int i = 0; i < m->funcs.len; i++) {
    const IrFunc *f = VEC_AT(m->funcs, IrFunc, i);
    fprintf(o, "%svoid %s_fn_%d(struct tdsl_instance *self);\n", f->exported ? "" : "static ", name, i);
  }
  for (int i = 0; i < m->funcs.len; i++) {
    const IrFunc *f = VEC_AT(m->funcs, IrFunc, i);
    int npar = 0;
    e.fn = i, e.npar = 0;
    c_outline_parallel(&r, &f->body, &npar);
    fprintf(o, "%svoid %s_fn_%d(struct tdsl_instance *self) { ", f->exported ? "" : "static __attribute__((unused)) ", name, i);
    cr_comment(o, f->name);
    fputc('\n', o);
    cr_stmts(&r, &f->body, 1);
    fputs("}\n\n", o);
  }
  arena_free(&a);
  /* What the runtime calls for the "seq" routines (jit_export_dispatch). */
  fprintf(o, "void %s_call(struct tdsl_instance *self, int k) {\n  switch (k) {\n", name);
  for (int i = 0; i < m->funcs.len; i++)
    if (!VEC_AT(m->funcs, IrFunc, i)->seq) fprintf(o, "  case %d: %s_fn_%d(self); break;\n", i, name, i);
  fputs("  default: break;\n  }\n}\n", o);
}

/* The C names a header defines after its NAME_: a tensor's, routine's, dimension's
 * (dim_D) or index symbol's (sym_S) name with every character other than a letter or a
 * digit as '_', and the fixed ones (call, model_meta, resolve, fn_N). Distinct names
 * can give one C name ("w.grad" and a tensor w_grad, "t#2" and t_2, a tensor h_forward
 * and the routine h.forward, a tensor named call): the first keeps it and the next
 * get _2, _3, ... (the comment beside each says whose it is), so that the header
 * defines each once: a macro defined twice named the later tensor, and a tensor's
 * macro named like a function broke the header. */
typedef struct CNames {
  Arena *a;
  StrTab used;
} CNames;

static const char *cname_take(CNames *cn, const char *prefix, const char *s, bool *renamed) {
  char *base = arena_printf(cn->a, "%s%s", prefix, s);
  for (char *c = base; *c; c++)
    if (!isalnum((unsigned char)*c)) *c = '_';
  const char *name = base;
  for (int k = 2; strtab_get(&cn->used, name); k++) name = arena_printf(cn->a, "%s_%d", base, k);
  strtab_put(cn->a, &cn->used, name, (void *)name);
  if (renamed) *renamed = name != base;
  return name;
}

/* The names of the header's own API first, so that no tensor or routine takes one: the
 * fixed ones, then dimensions and index symbols (their C names in dims, syms). */
static void cname_reserve(CNames *cn, const IrModule *m, const char *const *extra, const char **dims, const char **syms) {
  const char *fixed[] = {"call", "model_meta", "resolve"};
  for (size_t i = 0; i < sizeof fixed / sizeof *fixed; i++) cname_take(cn, "", fixed[i], NULL);
  for (int i = 0; i < m->funcs.len; i++)
    if (VEC_AT(m->funcs, IrFunc, i)->exported && !VEC_AT(m->funcs, IrFunc, i)->seq)
      cname_take(cn, "", arena_printf(cn->a, "fn_%d", i), NULL);
  for (const char *const *x = extra; x && *x; x++) cname_take(cn, "", *x, NULL);
  for (int i = 0; i < m->dims.len; i++) dims[i] = cname_take(cn, "dim_", ir_dim_name(cn->a, m, i), NULL);
  for (int i = 0; i < m->syms.len; i++) syms[i] = cname_take(cn, "sym_", VEC_AT(m->syms, IrSym, i)->name, NULL);
}

void emit_header(FILE *o, const IrModule *m, const char *name, const char *const *extra) {
  Arena a = {0};
  IrLayout l = ir_layout(&a, m);
  CNames cn = {&a, {0}};
  const char **dims = arena_alloc(&a, sizeof *dims * (size_t)(m->dims.len + 1));
  const char **syms = arena_alloc(&a, sizeof *syms * (size_t)(m->syms.len + 1));
  cname_reserve(&cn, m, extra, dims, syms);
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
    fprintf(o, "#define %s_%s", name, cname_take(&cn, "", b->name, NULL));
    if (b->dsize) { /* storage the runtime allocates when the sizes are set */
      fprintf(o, "(inst) (*(%s **)((char *)(inst) + %ld)) /* %s [", ctype(m, i), l.buf_off[i], b->name);
      for (int k = 0; k < b->rank; k++)
        if (DIM_IS_DYN(b->dims[k])) fprintf(o, "%s%s", k ? "," : "", ir_dim_name(&a, m, DIM_DYN_ID(b->dims[k])));
        else fprintf(o, "%s%d", k ? "," : "", b->dims[k]);
      fputs("] */\n", o);
      continue;
    }
    fprintf(o, "(inst) ((%s *)((char *)(inst) + %ld)) /* %s [", ctype(m, i), l.buf_off[i], b->name);
    for (int k = 0; k < b->rank; k++) fprintf(o, "%s%d", k ? "," : "", b->dims[k]);
    fprintf(o, "], %ld cells */\n", b->size); /* 0 for an empty tensor (its storage is one cell) */
  }
  for (int i = 0; i < m->dims.len; i++) {
    fprintf(o, "#define %s_%s", name, dims[i]);
    const IrDim *d = VEC_AT(m->dims, IrDim, i);
    fprintf(o, "(inst) (*(int *)((char *)(inst) + %ld)) /* %s */\n", l.dim_off[i],
            d->flag || d->njoin ? "the runtime computes it" : "set it with tdsl_set_dim");
  }
  for (int i = 0; i < m->syms.len; i++) {
    fprintf(o, "#define %s_%s", name, syms[i]);
    fprintf(o, "(inst) (*(int *)((char *)(inst) + %ld))\n", l.sym_off[i]);
  }
  fprintf(o, "void %s_call(void *inst, int k);\n", name);
  for (int i = 0; i < m->funcs.len; i++) {
    const IrFunc *f = VEC_AT(m->funcs, IrFunc, i);
    if (f->seq) {
      /* The routine is a list of NAME_call steps. */
      bool renamed;
      fprintf(o, "static inline void %s_%s(void *inst) {", name, cname_take(&cn, "", f->name, &renamed));
      fprintf(o, renamed ? " /* %s */\n" : "\n", f->name); /* whose, when renamed */
      int steps = 0;
      for (int k = 0; k < f->body.len; k++) {
        const Stmt *s = f->body.items[k];
        if (s->kind == S_CALL && s->ncalls > 1)
          fprintf(o, "  for (int k = %d; k < %d; k++) %s_call(inst, k);\n", s->callee, s->callee + s->ncalls, name);
        else if (s->kind == S_CALL) fprintf(o, "  %s_call(inst, %d);\n", name, s->callee);
        steps += s->kind == S_CALL;
      }
      if (!steps) fputs("  (void)inst; /* no steps (a parameter's forward): no -Wunused-parameter for hosts */\n", o);
      fputs("}\n", o);
      continue;
    }
    if (!f->exported) continue;
    fprintf(o, "void %s_fn_%d(void *inst); /* %s */\n", name, i, f->name);
    fprintf(o, "#define %s_%s %s_fn_%d\n", name, cname_take(&cn, "", f->name, NULL), name, i);
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
