/* cuda_emit.c: loop IR -> CUDA C kernels and the launch plan.
 *
 * Each top-level statement of a function becomes one kernel (S_CALL stays a host call).
 * For a loop nest, the perfectly nested outer loops form a chain; a chain loop runs in
 * parallel (one thread per point) when every store of the nest writes a distinct cell
 * for each of its values: some axis of every destination is indexed by that loop
 * variable alone (plus index symbols, equal in every thread). The other chain loops,
 * reductions included, run sequentially inside the thread, in their original order, so
 * each cell is accumulated by exactly one thread in the CPU backend's order: no atomics,
 * no races, the same numbers. A nest that also reads a buffer it writes, at any cell
 * other than the one being written, runs in a single thread: parallel threads could
 * see each other's writes.
 *
 * The source compiles as CUDA (NVRTC) and, with TDSL_EMULATE and a shim defining the
 * TDSL_* macros and blockIdx/threadIdx (testsuite/cuda/shim.h), as host C: the
 * TDSL_EMU_ENTRY after each kernel runs its whole grid, so tests check the indexing and
 * reduction logic without a GPU. */
#include <stdlib.h>
#include <string.h>

#include "cuda.h"

typedef struct E {
  Arena *a;
  const IrModule *m;
  FILE *o;
  CudaPlan *p;
  char *arg;  /* per kernel: per buffer 0, 'b' or 'w' */
  bool *sym;  /* per kernel: symbol used */
  const Stmt *to_acc; /* a split reduction: this store accumulates into the local acc */
  long scratch;       /* bytes of scratch the split reductions need */
  Elem scratch_elem;  /* of the kernel being emitted */
} E;

static const IrBuf *ebuf(const E *e, int b) { return VEC_AT(e->m->bufs, IrBuf, b); }
static const char *ctype(Elem el) { return el == ELEM_F64 ? "double" : "float"; }

/* ---- which buffers and symbols a kernel uses ---- */

static void use_aff(E *e, const Aff *f) {
  for (int i = 0; i < f->n; i++)
    if (f->t[i].var < 0) e->sym[-1 - f->t[i].var] = true;
}

static void use_access(E *e, const Access *acc, bool write) {
  if (write) e->arg[acc->buf] = 'w';
  else if (!e->arg[acc->buf]) e->arg[acc->buf] = 'b';
  use_aff(e, &acc->flat);
}

static void use_expr(E *e, const IrExpr *x) {
  if (x->kind == X_LOAD) use_access(e, &x->acc, false);
  if (x->kind == X_SYM) e->sym[x->sym] = true;
  if (x->kind == X_OP)
    for (int i = 0; i < op_info[x->op].arity; i++) use_expr(e, x->a[i]);
}

static void use_stmt(E *e, const Stmt *s) {
  switch (s->kind) {
  case S_LOOP:
  case S_IF:
    for (int k = 0; k < s->nguards; k++) use_aff(e, &s->guards[k].aff);
    for (int i = 0; i < s->body.len; i++) use_stmt(e, s->body.items[i]);
    break;
  case S_STORE:
    use_access(e, &s->dst, true);
    use_expr(e, s->val);
    break;
  case S_FILL: e->arg[s->buf] = 'w'; break;
  default: break;
  }
}

/* ---- which chain loops may run in parallel ---- */

/* Stores of the nest; a fill or call inside a nest (the lowering makes none) is
 * collected as NULL: such a nest runs in one thread. */
static void collect_stores(const Stmt *s, PtrVec *out, Arena *a) {
  if (s->kind == S_STORE) vec_push(a, out, (void *)s);
  if (s->kind == S_FILL || s->kind == S_CALL) vec_push(a, out, NULL);
  if (s->kind == S_LOOP || s->kind == S_IF)
    for (int i = 0; i < s->body.len; i++) collect_stores(s->body.items[i], out, a);
}

static bool aff_eq(const Aff *x, const Aff *y) {
  if (x->off != y->off || x->n != y->n) return false;
  for (int i = 0; i < x->n; i++)
    if (x->t[i].var != y->t[i].var || x->t[i].coef != y->t[i].coef) return false;
  return true;
}

/* The axis index depends on no loop variable but var (and does on var). */
static bool axis_only(const Aff *f, int var) {
  bool has = false;
  for (int i = 0; i < f->n; i++) {
    if (f->t[i].var < 0) continue;
    if (f->t[i].var != var || f->t[i].coef == 0) return false;
    has = true;
  }
  return has;
}

static bool var_parallel(const PtrVec *stores, int var) {
  for (int i = 0; i < stores->len; i++) {
    const Stmt *s = stores->items[i];
    bool ok = false;
    for (int ax = 0; ax < s->dst.rank && !ok; ax++) ok = axis_only(&s->dst.axis[ax], var);
    if (!ok) return false;
  }
  return true;
}

/* Every load of a buffer written in the nest reads exactly the cell being written. */
static bool loads_own_cells(const IrExpr *x, const PtrVec *stores) {
  if (x->kind == X_OP) {
    for (int i = 0; i < op_info[x->op].arity; i++)
      if (!loads_own_cells(x->a[i], stores)) return false;
    return true;
  }
  if (x->kind != X_LOAD) return true;
  for (int i = 0; i < stores->len; i++) {
    const Stmt *s = stores->items[i];
    if (s->dst.buf == x->acc.buf && !aff_eq(&s->dst.flat, &x->acc.flat)) return false;
  }
  return true;
}

static bool nest_parallelizable(const PtrVec *stores) {
  for (int i = 0; i < stores->len; i++)
    if (!stores->items[i]) return false;
  for (int i = 0; i < stores->len; i++) {
    const Stmt *s = stores->items[i];
    for (int k = 0; k < stores->len; k++) {
      const Stmt *t = stores->items[k];
      if (t->dst.buf == s->dst.buf && !aff_eq(&t->dst.flat, &s->dst.flat)) return false;
    }
    if (!loads_own_cells(s->val, stores)) return false;
  }
  return true;
}

/* ---- expressions ---- */

static void c_const(FILE *o, double v, bool f32) {
  const char *T = f32 ? "float" : "double";
  if (v != v) fprintf(o, "((%s)TDSL_NAN)", T);
  else if (v > 1.7976931348623157e308) fprintf(o, "((%s)TDSL_INF)", T);
  else if (v < -1.7976931348623157e308) fprintf(o, "(-(%s)TDSL_INF)", T);
  else if (f32) fprintf(o, "((float)%.17e)", v);
  else fprintf(o, "%.17e", v);
}

static void c_expr(E *e, const IrExpr *x, bool f32);

static void c_args(E *e, const IrExpr *x, bool f32) {
  for (int i = 0; i < op_info[x->op].arity; i++) {
    if (i) fputs(", ", e->o);
    c_expr(e, x->a[i], f32);
  }
  fputc(')', e->o);
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

static void c_expr(E *e, const IrExpr *x, bool f32) {
  FILE *o = e->o;
  const char *T = f32 ? "float" : "double", *sfx = f32 ? "f" : "";
  switch (x->kind) {
  case X_CONST: c_const(o, x->value, f32); return;
  case X_SYM: fprintf(o, "((%s)s%d)", T, x->sym); return;
  case X_LOAD:
    if ((ebuf(e, x->acc.buf)->elem == ELEM_F32) != f32) fprintf(o, "(%s)", T);
    fprintf(o, "b%d[", x->acc.buf);
    aff_print_c(o, "s", &x->acc.flat);
    fputc(']', o);
    return;
  case X_OP: break;
  }
  const char *in = infix(x->op), *fn = math_fn(x->op);
  switch (x->op) {
  case OP_ID: case OP_ARG1: c_expr(e, x->a[0], f32); return;
  case OP_ARG2: c_expr(e, x->a[1], f32); return;
  case OP_NEG: fputs("(-", o); c_expr(e, x->a[0], f32); fputc(')', o); return;
  case OP_RECIP: fprintf(o, "((%s)1 / ", T); c_expr(e, x->a[0], f32); fputc(')', o); return;
  case OP_RECIP_SQRT: fprintf(o, "((%s)1 / sqrt%s(", T, sfx); c_expr(e, x->a[0], f32); fputs("))", o); return;
  case OP_FMA:
    fputc('(', o);
    c_expr(e, x->a[0], f32);
    fputs(" * ", o);
    c_expr(e, x->a[1], f32);
    fputs(" + ", o);
    c_expr(e, x->a[2], f32);
    fputc(')', o);
    return;
  default: break;
  }
  if (in) {
    fputc('(', o);
    c_expr(e, x->a[0], f32);
    fprintf(o, " %s ", in);
    c_expr(e, x->a[1], f32);
    fputc(')', o);
    return;
  }
  if (fn) fprintf(o, "%s%s(", fn, sfx);
  else fprintf(o, "tdsl_op_%s_%s(", op_info[x->op].name, f32 ? "f32" : "f64");
  c_args(e, x, f32);
}

/* accum(lhs, rhs) where lhs is a local and rhs an expression (or text). */
static void c_accum(E *e, PrimOp op, bool f32, const char *lhs, const IrExpr *rhs, const char *rhs_text) {
  FILE *o = e->o;
  const char *in = infix(op);
  if (in) fprintf(o, "(%s %s ", lhs, in);
  else fprintf(o, "tdsl_op_%s_%s(%s, ", op_info[op].name, f32 ? "f32" : "f64", lhs);
  if (rhs) c_expr(e, rhs, f32);
  else fputs(rhs_text, o);
  fputc(')', o);
}

/* ---- statements ---- */

/* A loop of a tiled nest: var runs over [tile*tile_var, min(tile*(tile_var+1), ext)). */
static bool tiled(const Stmt *s) { return s->kind == S_LOOP && s->tile > 0 && s->tile_var >= 0; }

static void indent(E *e, int ind) { fprintf(e->o, "%*s", ind * 2, ""); }

static void c_stmts(E *e, const PtrVec *body, int ind);

static void c_stmt(E *e, const Stmt *s, int ind) {
  FILE *o = e->o;
  switch (s->kind) {
  case S_LOOP:
    indent(e, ind);
    if (tiled(s))
      fprintf(o, "for (long i%d = %dL*i%d; i%d < (%dL*i%d + %dL < %ldL ? %dL*i%d + %dL : %ldL); i%d++) {\n", s->var, s->tile,
              s->tile_var, s->var, s->tile, s->tile_var, s->tile, s->ext, s->tile, s->tile_var, s->tile, s->ext, s->var);
    else fprintf(o, "for (long i%d = 0; i%d < %ldL; i%d++) {\n", s->var, s->var, s->ext, s->var);
    c_stmts(e, &s->body, ind + 1);
    indent(e, ind);
    fputs("}\n", o);
    break;
  case S_IF:
    indent(e, ind);
    fputs("if (", o);
    for (int k = 0; k < s->nguards; k++) {
      if (k) fputs(" && ", o);
      fputs("(", o);
      aff_print_c(o, "s", &s->guards[k].aff);
      fputs(") >= 0 && (", o);
      aff_print_c(o, "s", &s->guards[k].aff);
      fprintf(o, ") < %ldL", s->guards[k].ext);
    }
    fputs(") {\n", o);
    c_stmts(e, &s->body, ind + 1);
    indent(e, ind);
    fputs("}\n", o);
    break;
  case S_STORE: {
    bool f32 = ebuf(e, s->dst.buf)->elem == ELEM_F32;
    indent(e, ind);
    if (s == e->to_acc) {
      fputs("acc = ", o);
      if (s->accum == OP_ARG2) c_expr(e, s->val, f32);
      else c_accum(e, s->accum, f32, "acc", s->val, NULL);
      fputs(";\n", o);
      break;
    }
    fprintf(o, "b%d[", s->dst.buf);
    aff_print_c(o, "s", &s->dst.flat);
    fputs("] = ", o);
    IrExpr old = {.kind = X_LOAD, .acc = s->dst};
    IrExpr acc = {.kind = X_OP, .op = s->accum, .a = {&old, s->val}};
    c_expr(e, s->accum == OP_ARG2 ? s->val : &acc, f32);
    fputs(";\n", o);
    break;
  }
  case S_FILL:
    indent(e, ind);
    fprintf(o, "for (long k = 0; k < %ldL; k++) b%d[k] = ", ebuf(e, s->buf)->size, s->buf);
    c_const(o, s->value, ebuf(e, s->buf)->elem == ELEM_F32);
    fputs(";\n", o);
    break;
  case S_COMMENT:
    indent(e, ind);
    fprintf(o, "/* %s */\n", s->text);
    break;
  case S_CALL: break; /* never inside a kernel: calls are top-level host steps */
  case S_KERNEL: /* the schedule pass (src/schedule.h) runs for the CPU back ends only */
    fputs("#error tdslc: a CPU kernel statement reached the CUDA emitter\n", o);
    break;
  }
}

static void c_stmts(E *e, const PtrVec *body, int ind) {
  for (int i = 0; i < body->len; i++) c_stmt(e, body->items[i], ind);
}

/* ---- kernels ---- */

static void begin_args(E *e) {
  memset(e->arg, 0, (size_t)e->m->bufs.len);
  memset(e->sym, 0, sizeof(bool) * (size_t)e->m->syms.len);
}

/* A kernel whose arguments are the buffers and symbols marked since begin_args, then
 * the scratch buffer if asked. */
static CudaKernel *finish_kernel(E *e, bool scratch) {
  CudaKernel *k = ANEW(e->a, CudaKernel);
  k->id = e->p->kernels.len;
  k->name = arena_printf(e->a, "k%d", k->id);
  k->args = ANEWN(e->a, CudaArg, e->m->bufs.len + e->m->syms.len + 2);
  for (int b = 0; b < e->m->bufs.len; b++)
    if (e->arg[b]) k->args[k->nargs++] = (CudaArg){e->arg[b], b};
  for (int i = 0; i < e->m->syms.len; i++)
    if (e->sym[i]) k->args[k->nargs++] = (CudaArg){'s', i};
  if (scratch) k->args[k->nargs++] = (CudaArg){'x', 0};
  vec_push(e->a, &e->p->kernels, k);
  return k;
}

static CudaKernel *new_kernel(E *e, const Stmt *s) {
  begin_args(e);
  use_stmt(e, s);
  return finish_kernel(e, false);
}

/* The signature, the thread index and the bounds check. */
static void kernel_head(E *e, const CudaKernel *k, const char *what) {
  FILE *o = e->o;
  fprintf(o, "/* %s */\nTDSL_KERNEL %s(", what, k->name);
  for (int i = 0; i < k->nargs; i++) {
    const CudaArg *a = &k->args[i];
    if (i) fputs(", ", o);
    if (a->kind == 's') fprintf(o, "int s%d", a->index);
    else if (a->kind == 'x') fprintf(o, "%s *__restrict__ xs", ctype(e->scratch_elem));
    else fprintf(o, "%s *__restrict__ b%d", ctype(ebuf(e, a->index)->elem), a->index);
  }
  fprintf(o, ") {\n  long t = (long)blockIdx.x * (long)blockDim.x + (long)threadIdx.x;\n"
             "  if (t >= %ldL) return;\n", k->threads);
}

/* The emulation entry: kernel parameters as cuLaunchKernel passes them. */
static void kernel_tail(E *e, const CudaKernel *k) {
  FILE *o = e->o;
  fprintf(o, "}\n#ifdef TDSL_EMULATE\nTDSL_EMU_ENTRY(%s, %s(", k->name, k->name);
  for (int i = 0; i < k->nargs; i++) {
    const CudaArg *a = &k->args[i];
    if (i) fputs(", ", o);
    if (a->kind == 's') fprintf(o, "*(int *)p[%d]", i);
    else if (a->kind == 'x') fprintf(o, "*(%s **)p[%d]", ctype(e->scratch_elem), i);
    else fprintf(o, "*(%s **)p[%d]", ctype(ebuf(e, a->index)->elem), i);
  }
  fputs("))\n#endif\n\n", o);
}

static const char *func_what(E *e, const IrFunc *f, const Stmt *s) {
  (void)e;
  if (s->kind == S_FILL) return arena_printf(e->a, "%s: fill %s", f->name, ebuf(e, s->buf)->name);
  return f->name;
}

static void fill_kernel(E *e, const IrFunc *f, const Stmt *s) {
  if (ebuf(e, s->buf)->size <= 0) return;
  CudaKernel *k = new_kernel(e, s);
  k->threads = ebuf(e, s->buf)->size;
  kernel_head(e, k, func_what(e, f, s));
  fprintf(e->o, "  b%d[t] = ", s->buf);
  c_const(e->o, s->value, ebuf(e, s->buf)->elem == ELEM_F32);
  fputs(";\n", e->o);
  kernel_tail(e, k);
}

/* Declares the chain variables with par[i] == want from the linear index in variable
 * v: the innermost varies fastest (coalesced accesses when it indexes the last axis,
 * as in the lowering's loop order), the outermost takes the rest. */
/* Roles of the chain loops. */
enum { SEQ, PAR, DROP /* the tile loop of a tiled chain loop: the tiled loop runs whole */ };

static void decompose(E *e, const Stmt **chain, int n, const int *par, int want, const char *v, int ind) {
  int first = -1;
  for (int i = 0; i < n && first < 0; i++)
    if (par[i] == want) first = i;
  for (int i = n - 1; i >= 0; i--) {
    if (par[i] != want) continue;
    indent(e, ind);
    if (i == first) fprintf(e->o, "long i%d = %s;\n", chain[i]->var, v);
    else fprintf(e->o, "long i%d = %s %% %ldL;\n%*s%s /= %ldL;\n", chain[i]->var, v, chain[i]->ext, ind * 2, "", v,
                 chain[i]->ext);
  }
}

static bool expr_loads(const IrExpr *x, int buf) {
  if (x->kind == X_LOAD) return x->acc.buf == buf;
  if (x->kind != X_OP) return false;
  for (int i = 0; i < op_info[x->op].arity; i++)
    if (expr_loads(x->a[i], buf)) return true;
  return false;
}

/* The nest's only store, when its cell depends on the parallel loops alone and its value
 * does not read the destination: the thread can accumulate in a register and store once. */
static const Stmt *register_store(const PtrVec *stores, const Stmt **chain, int n, const int *par) {
  if (stores->len != 1 || !stores->items[0]) return NULL;
  const Stmt *s = stores->items[0];
  if (expr_loads(s->val, s->dst.buf)) return NULL;
  for (int k = 0; k < s->dst.flat.n; k++) {
    int v = s->dst.flat.t[k].var;
    if (v < 0) continue;
    bool ok = false;
    for (int i = 0; i < n; i++) ok |= chain[i]->var == v && par[i] == PAR;
    if (!ok) return NULL;
  }
  return s;
}

/* A reduction that may be split across threads: a register store accumulated by add,
 * max or min. Sets *red to the number of reduced points. */
static const Stmt *split_store(const PtrVec *stores, const Stmt **chain, int n, const int *par, long *red) {
  const Stmt *s = register_store(stores, chain, n, par);
  if (!s || (s->accum != OP_ADD && s->accum != OP_MAX && s->accum != OP_MIN)) return NULL;
  *red = 1;
  for (int i = 0; i < n; i++)
    if (par[i] == SEQ) *red *= chain[i]->ext;
  return s;
}

/* Split reduction, kernel 1: thread (point, chunk) folds every chunks-th reduced point
 * into a local from the neutral element and leaves it in the scratch buffer; kernel 2:
 * one thread per point folds the chunks into the destination. Adds round differently
 * from the CPU's sequential order (max and min are exact). */
static void split_kernels(E *e, const char *what, const Stmt **chain, int n, const int *par, const Stmt *st, long points,
                          long red, long chunks) {
  FILE *o = e->o;
  bool f32 = ebuf(e, st->dst.buf)->elem == ELEM_F32;
  e->scratch_elem = ebuf(e, st->dst.buf)->elem;
  long bytes = points * chunks * (f32 ? 4 : 8);
  if (bytes > e->scratch) e->scratch = bytes;
  begin_args(e);
  use_stmt(e, chain[0]);
  e->arg[st->dst.buf] = 0; /* not touched by the first kernel */
  CudaKernel *k = finish_kernel(e, true);
  k->threads = points * chunks;
  kernel_head(e, k, arena_printf(e->a, "%s: split reduction, %ld chunks", what, chunks));
  fprintf(o, "  long slot = t;\n  long c = t %% %ldL;\n  t /= %ldL;\n", chunks, chunks);
  decompose(e, chain, n, par, PAR, "t", 1);
  fprintf(o, "  %s acc = ", f32 ? "float" : "double");
  c_const(o, op_neutral(st->accum), f32);
  fprintf(o, ";\n  for (long r = c; r < %ldL; r += %ldL) {\n    long q = r;\n", red, chunks);
  decompose(e, chain, n, par, SEQ, "q", 2);
  e->to_acc = st;
  c_stmts(e, &chain[n - 1]->body, 2);
  e->to_acc = NULL;
  fputs("  }\n  xs[slot] = acc;\n", o);
  kernel_tail(e, k);

  begin_args(e);
  use_access(e, &st->dst, true);
  k = finish_kernel(e, true);
  k->threads = points;
  kernel_head(e, k, arena_printf(e->a, "%s: split reduction, combine", what));
  fputs("  long slot = t;\n", o);
  decompose(e, chain, n, par, PAR, "t", 1);
  fprintf(o, "  %s v = b%d[", f32 ? "float" : "double", st->dst.buf);
  aff_print_c(o, "s", &st->dst.flat);
  fprintf(o, "];\n  for (long c = 0; c < %ldL; c++) v = ", chunks);
  c_accum(e, st->accum, f32, "v", NULL, arena_printf(e->a, "xs[slot * %ldL + c]", chunks));
  fprintf(o, ";\n  b%d[", st->dst.buf);
  aff_print_c(o, "s", &st->dst.flat);
  fputs("] = v;\n", o);
  kernel_tail(e, k);
}

/* Below this many threads a long reduction is split across more threads. */
enum { SPLIT_MAX_POINTS = 4096, SPLIT_MIN_RED = 2048, SPLIT_TARGET_THREADS = 65536, SPLIT_MIN_CHUNK = 64 };

static void nest_kernel(E *e, const IrFunc *f, const Stmt *s) {
  /* The chain of perfectly nested loops. */
  const Stmt *chain[64];
  int n = 0;
  const Stmt *cur = s;
  while (cur->kind == S_LOOP && n < 64) {
    chain[n++] = cur;
    if (cur->ext <= 0) return; /* an empty nest does nothing */
    if (cur->body.len != 1) break;
    cur = cur->body.items[0];
  }
  PtrVec stores = {0};
  collect_stores(s, &stores, e->a);
  /* A tiled chain loop runs over its whole extent (tiles are for CPU caches): its tile
   * loop, further out in the chain, goes. */
  int par[64] = {SEQ};
  for (int j = 0; j < n; j++)
    for (int i = 0; i < j && tiled(chain[j]); i++)
      if (chain[i]->var == chain[j]->tile_var) par[i] = DROP;
  if (n && nest_parallelizable(&stores))
    for (int i = 0; i < n; i++)
      if (par[i] != DROP && var_parallel(&stores, chain[i]->var)) par[i] = PAR;
  long points = 1, red = 0;
  for (int i = 0; i < n; i++)
    if (par[i] == PAR) points *= chain[i]->ext;
  const char *what = func_what(e, f, s);
  const Stmt *st = n ? split_store(&stores, chain, n, par, &red) : NULL;
  if (st && points < SPLIT_MAX_POINTS && red >= SPLIT_MIN_RED) {
    long chunks = SPLIT_TARGET_THREADS / points;
    if (chunks > red / SPLIT_MIN_CHUNK) chunks = red / SPLIT_MIN_CHUNK;
    if (chunks > 1) {
      split_kernels(e, what, chain, n, par, st, points, red, chunks);
      return;
    }
  }
  CudaKernel *k = new_kernel(e, s);
  k->threads = points;
  kernel_head(e, k, what);
  FILE *o = e->o;
  decompose(e, chain, n, par, PAR, "t", 1);
  bool seq = false;
  for (int i = 0; i < n; i++) seq |= par[i] == SEQ;
  /* A reduction in the thread: the cell stays in a register across the loops. */
  const Stmt *reg = seq ? register_store(&stores, chain, n, par) : NULL;
  if (reg) {
    fprintf(o, "  %s acc = b%d[", ctype(ebuf(e, reg->dst.buf)->elem), reg->dst.buf);
    aff_print_c(o, "s", &reg->dst.flat);
    fputs("];\n", o);
    e->to_acc = reg;
  }
  int ind = 1;
  for (int i = 0; i < n; i++) {
    if (par[i] != SEQ) continue;
    indent(e, ind++);
    fprintf(o, "for (long i%d = 0; i%d < %ldL; i%d++) {\n", chain[i]->var, chain[i]->var, chain[i]->ext, chain[i]->var);
  }
  if (n) c_stmts(e, &chain[n - 1]->body, ind);
  else c_stmt(e, s, ind);
  while (--ind > 0) {
    indent(e, ind);
    fputs("}\n", o);
  }
  if (reg) {
    fprintf(o, "  b%d[", reg->dst.buf);
    aff_print_c(o, "s", &reg->dst.flat);
    fputs("] = acc;\n", o);
    e->to_acc = NULL;
  }
  kernel_tail(e, k);
}

static void plan_func(E *e, int fi) {
  const IrFunc *f = VEC_AT(e->m->funcs, IrFunc, fi);
  PtrVec *steps = &e->p->steps[fi];
  for (int i = 0; i < f->body.len; i++) {
    const Stmt *s = f->body.items[i];
    CudaStep *st = ANEW(e->a, CudaStep);
    int before = e->p->kernels.len;
    switch (s->kind) {
    case S_COMMENT: fprintf(e->o, "/* %s */\n", s->text); continue;
    case S_CALL: st->call = true; st->index = s->callee; break;
    case S_FILL: fill_kernel(e, f, s); break;
    default: nest_kernel(e, f, s); break;
    }
    if (st->call) {
      vec_push(e->a, steps, st);
      continue;
    }
    for (int k = before; k < e->p->kernels.len; k++) {
      CudaStep *ks = ANEW(e->a, CudaStep);
      ks->index = k;
      vec_push(e->a, steps, ks);
    }
  }
}

static const char *prelude =
    "/* Generated by tdslc --backend=cuda: one kernel per loop nest or fill. */\n"
    "#ifndef TDSL_EMULATE\n"
    "#define TDSL_KERNEL extern \"C\" __global__ void __launch_bounds__(256)\n"
    "#define TDSL_DEV static __device__ __forceinline__\n"
    "#define TDSL_NAN __int_as_float(0x7fc00000)\n"
    "#define TDSL_INF __int_as_float(0x7f800000)\n"
    "#endif\n"
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
    "  H2(pow_##S, T, if (b != nearbyint##F(b) || !(fabs##F(b) < (T)9.0e15)) return pow##F(a, b); \\\n"
    "     long n = (long)b; long k = n < 0 ? -n : n; T r = 1; \\\n"
    "     for (; k; k >>= 1) { if (k & 1) r *= a; a *= a; } return n < 0 ? (T)1 / r : r;)\n"
    "HELPERS(f32, float, f)\n"
    "HELPERS(f64, double, )\n\n";

static char *meta_text(Arena *a, const IrModule *m, const CudaPlan *p, long scratch) {
  char *txt = NULL;
  size_t len = 0;
  FILE *o = open_memstream(&txt, &len);
  fputs("tdslcuda 1\n", o);
  if (scratch) fprintf(o, "scratch %ld\n", scratch);
  for (int i = 0; i < m->bufs.len; i++) {
    const IrBuf *b = VEC_AT(m->bufs, IrBuf, i);
    fprintf(o, "buf %d %ld\n", i, b->size * (b->elem == ELEM_F64 ? 8 : 4));
  }
  for (int i = 0; i < p->kernels.len; i++) {
    const CudaKernel *k = VEC_AT(p->kernels, CudaKernel, i);
    fprintf(o, "kernel %d %s %ld %d", k->id, k->name, k->threads, k->nargs);
    for (int j = 0; j < k->nargs; j++) fprintf(o, " %c%d", k->args[j].kind, k->args[j].index);
    fputc('\n', o);
  }
  fclose(o);
  char *r = arena_strdup(a, txt);
  free(txt);
  return r;
}

CudaPlan *cuda_plan(Arena *a, const IrModule *m) {
  CudaPlan *p = ANEW(a, CudaPlan);
  p->steps = ANEWN(a, PtrVec, m->funcs.len + 1);
  char *txt = NULL;
  size_t len = 0;
  E e = {.a = a, .m = m, .p = p, .o = open_memstream(&txt, &len)};
  e.arg = ANEWN(a, char, m->bufs.len + 1);
  e.sym = ANEWN(a, bool, m->syms.len + 1);
  fputs(prelude, e.o);
  for (int i = 0; i < m->funcs.len; i++) plan_func(&e, i);
  fclose(e.o);
  p->src = arena_strdup(a, txt);
  free(txt);
  p->meta = meta_text(a, m, p, e.scratch);
  return p;
}
