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
 * A nest with a dynamic size (a loop bound, stride or buffer over dynamic dimensions,
 * ir.h) is planned from its static sizes, a dynamic extent counting as IR_DYN_EXT_GUESS:
 * contractions and reductions get the kernels of static ones (cuda_tile.c, the split
 * below), which read the extents at launch; the others are one thread per point. Its
 * dimensions (and broadcast flags) are int arguments read from the instance at each
 * launch, and its thread count is a static factor times some of them (CudaKernel.tdims)
 * and times tile counts ceil(extent / tile) (CudaKernel.ceils).
 * A flag-scaled axis index is 0 for every value of its loop when the flag is 0, so it
 * does not make a loop parallel.
 *
 * The source compiles as CUDA (NVRTC) and, with TDSL_EMULATE and a shim defining the
 * TDSL_* macros and blockIdx/threadIdx (testsuite/cuda/shim.h), as host C: the
 * TDSL_EMU_ENTRY after each kernel runs its whole grid, so tests check the indexing and
 * reduction logic without a GPU. */
#include <stdlib.h>
#include <string.h>

#include "cuda_kern.h"

/* ---- which buffers and symbols a kernel uses ---- */

static void use_prod(E *e, int p) {
  const IrProd *x = ir_prod_at(e->m, p);
  for (int i = 0; x && i < x->n; i++) e->dim[x->dims[i]] = true;
}

static void use_aff(E *e, const Aff *f) {
  for (int i = 0; i < f->n; i++) {
    if (f->t[i].var < 0 && f->t[i].var != AFF_ONE) e->sym[-1 - f->t[i].var] = true;
    use_prod(e, f->t[i].dyn);
  }
}

void cu_use_access(E *e, const Access *acc, bool write) {
  if (write) e->arg[acc->buf] = 'w';
  else if (!e->arg[acc->buf]) e->arg[acc->buf] = 'b';
  use_aff(e, &acc->flat);
}

static void use_expr(E *e, const IrExpr *x) {
  if (x->kind == X_LOAD) cu_use_access(e, &x->acc, false);
  if (x->kind == X_SYM) e->sym[x->sym] = true;
  if (x->kind == X_OP)
    for (int i = 0; i < op_info[x->op].arity; i++) use_expr(e, x->a[i]);
}

void cu_use_stmt(E *e, const Stmt *s) {
  switch (s->kind) {
  case S_LOOP:
  case S_IF:
    use_prod(e, s->dext);
    for (int k = 0; k < s->nguards; k++) {
      use_aff(e, &s->guards[k].aff);
      use_prod(e, s->guards[k].dext);
    }
    for (int i = 0; i < s->body.len; i++) cu_use_stmt(e, s->body.items[i]);
    break;
  case S_STORE:
    cu_use_access(e, &s->dst, true);
    use_expr(e, s->val);
    break;
  case S_FILL:
    e->arg[s->buf] = 'w';
    use_prod(e, cu_buf(e, s->buf)->dsize);
    break;
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
    if (x->t[i].var != y->t[i].var || x->t[i].coef != y->t[i].coef || x->t[i].dyn != y->t[i].dyn) return false;
  return true;
}

/* The axis index depends on no loop variable but var (and does on var, by a static
 * coefficient: a flag-scaled one is 0 for every var while the flag is). */
static bool axis_only(const Aff *f, int var) {
  bool has = false;
  for (int i = 0; i < f->n; i++) {
    if (f->t[i].var < 0 && f->t[i].var != AFF_ONE) continue;
    if (f->t[i].var != var || f->t[i].coef == 0 || f->t[i].dyn) return false;
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

/* ---- statements: the shared C rendering (src/ir_c.c) ---- */

/* A loop of a tiled nest: var runs over [tile*tile_var, min(tile*(tile_var+1), ext)). */
static bool tiled(const Stmt *s) { return s->kind == S_LOOP && s->tile > 0 && s->tile_var >= 0; }

void cu_indent(E *e, int ind) { cr_indent(&e->r, ind); }

/* The store of a register reduction accumulates into the local acc. */
static bool acc_hook(CRender *r, const Stmt *s, int ind) {
  E *e = r->user;
  if (s != e->to_acc) return false;
  bool f32 = cu_buf(e, s->dst.buf)->elem == ELEM_F32;
  cr_indent(r, ind);
  fputs("acc = ", r->o);
  if (s->accum == OP_ARG2) cr_expr(r, s->val, f32);
  else cr_accum(r, s->accum, f32, "acc", s->val, NULL);
  fputs(";\n", r->o);
  return true;
}

void cu_stmts(E *e, const PtrVec *body, int ind) { cr_stmts(&e->r, body, ind); }

/* ---- kernels ---- */

void cu_begin_args(E *e) {
  memset(e->arg, 0, (size_t)e->m->bufs.len);
  memset(e->sym, 0, sizeof(bool) * (size_t)e->m->syms.len);
  memset(e->dim, 0, sizeof(bool) * (size_t)e->m->dims.len);
}

/* A kernel whose arguments are the buffers and symbols marked since cu_begin_args, then
 * the scratch buffer if asked. */
CudaKernel *cu_finish_kernel(E *e, bool scratch) {
  CudaKernel *k = ANEW(e->a, CudaKernel);
  k->id = e->p->kernels.len;
  k->name = arena_printf(e->a, "k%d", k->id);
  k->args = ANEWN(e->a, CudaArg, e->m->bufs.len + e->m->syms.len + e->m->dims.len + 2);
  for (int b = 0; b < e->m->bufs.len; b++)
    if (e->arg[b]) k->args[k->nargs++] = (CudaArg){e->arg[b], b};
  for (int i = 0; i < e->m->syms.len; i++)
    if (e->sym[i]) k->args[k->nargs++] = (CudaArg){'s', i};
  for (int i = 0; i < e->m->dims.len; i++)
    if (e->dim[i]) k->args[k->nargs++] = (CudaArg){'d', i};
  if (scratch) k->args[k->nargs++] = (CudaArg){'x', 0};
  vec_push(e->a, &e->p->kernels, k);
  return k;
}

static CudaKernel *new_kernel(E *e, const Stmt *s) {
  cu_begin_args(e);
  cu_use_stmt(e, s);
  return cu_finish_kernel(e, false);
}

void cu_kernel_sig(E *e, const CudaKernel *k, const char *what) {
  FILE *o = e->o;
  cr_comment(o, what);
  if (k->min_blocks > 0) fprintf(o, "\nTDSL_KERNEL_MB(%d) %s(", k->min_blocks, k->name);
  else fprintf(o, "\nTDSL_KERNEL %s(", k->name);
  for (int i = 0; i < k->nargs; i++) {
    const CudaArg *a = &k->args[i];
    if (i) fputs(", ", o);
    if (a->kind == 's') fprintf(o, "int s%d", a->index);
    else if (a->kind == 'd') fprintf(o, "int dim%d", a->index);
    else if (a->kind == 'x') fprintf(o, "%s *__restrict__ xs", cu_ctype(e->scratch_elem));
    else fprintf(o, "%s *__restrict__ b%d", cu_ctype(cu_buf(e, a->index)->elem), a->index);
  }
  fputs(") {\n", o);
}

/* The thread count: a constant, or (static factor times the kernel's dims). */
static void put_threads(E *e, const CudaKernel *k) {
  if (!k->ntdims) {
    fprintf(e->o, "%ldL", k->threads);
    return;
  }
  fprintf(e->o, "(%ldL", k->threads);
  for (int i = 0; i < k->ntdims; i++) fprintf(e->o, "*(long)dim%d", k->tdims[i]);
  fputc(')', e->o);
}

void cu_kernel_head(E *e, const CudaKernel *k, const char *what) {
  cu_kernel_sig(e, k, what);
  fputs("  long t = (long)blockIdx.x * (long)blockDim.x + (long)threadIdx.x;\n  if (t >= ", e->o);
  put_threads(e, k);
  fputs(") return;\n", e->o);
  fflush(e->o);
  e->body_at = *e->len;
}

void cu_threads_times(E *e, CudaKernel *k, int p) {
  const IrProd *x = ir_prod_at(e->m, p);
  if (!x) return;
  int *d = ANEWN(e->a, int, k->ntdims + x->n);
  if (k->ntdims) memcpy(d, k->tdims, sizeof(int) * (size_t)k->ntdims);
  memcpy(d + k->ntdims, x->dims, sizeof(int) * (size_t)x->n);
  k->tdims = d;
  k->ntdims += x->n;
}

/* The emulation entry: kernel parameters as cuLaunchKernel passes them. */
void cu_kernel_tail(E *e, CudaKernel *k) {
  FILE *o = e->o;
  if (!k->coop && e->body_at != (size_t)-1) {
    fflush(o);
    k->body = arena_strndup(e->a, *e->txt + e->body_at, *e->len - e->body_at);
  }
  e->body_at = (size_t)-1;
  fprintf(o, "}\n#ifdef TDSL_EMULATE\nTDSL_EMU_%sENTRY(%s, %s(", k->coop ? "BLOCK_" : "", k->name, k->name);
  for (int i = 0; i < k->nargs; i++) {
    const CudaArg *a = &k->args[i];
    if (i) fputs(", ", o);
    if (a->kind == 's' || a->kind == 'd') fprintf(o, "*(int *)p[%d]", i);
    else if (a->kind == 'x') fprintf(o, "*(%s **)p[%d]", cu_ctype(e->scratch_elem), i);
    else fprintf(o, "*(%s **)p[%d]", cu_ctype(cu_buf(e, a->index)->elem), i);
  }
  fputs("))\n#endif\n\n", o);
}

static const char *func_what(E *e, const IrFunc *f, const Stmt *s) {
  (void)e;
  if (s->kind == S_FILL) return arena_printf(e->a, "%s: fill %s", f->name, cu_buf(e, s->buf)->name);
  return f->name;
}

static void fill_kernel(E *e, const IrFunc *f, const Stmt *s) {
  if (cu_buf(e, s->buf)->size <= 0) return;
  CudaKernel *k = new_kernel(e, s);
  k->threads = cu_buf(e, s->buf)->size;
  cu_threads_times(e, k, cu_buf(e, s->buf)->dsize);
  cu_kernel_head(e, k, func_what(e, f, s));
  fprintf(e->o, "  b%d[t] = ", s->buf);
  cr_const(e->o, s->value, cu_buf(e, s->buf)->elem == ELEM_F32);
  fputs(";\n", e->o);
  cu_kernel_tail(e, k);
}

/* A loop's extent: its constant (with suffix L), or cr_ext's product when dynamic. */
static void put_ext(E *e, const Stmt *s, const char *L) {
  if (s->dext) cr_ext(&e->r, s->ext, s->dext);
  else fprintf(e->o, "%ld%s", s->ext, L);
}

void cu_decompose(E *e, const Stmt **chain, int n, const int *par, int want, const char *v, int ind) {
  const char *T = e->r.idx32 ? "int" : "long", *L = e->r.idx32 ? "" : "L";
  int first = -1;
  for (int i = 0; i < n && first < 0; i++)
    if (par[i] == want) first = i;
  for (int i = n - 1; i >= 0; i--) {
    if (par[i] != want) continue;
    cu_indent(e, ind);
    if (i == first) {
      fprintf(e->o, "%s i%d = %s;\n", T, chain[i]->var, v);
      continue;
    }
    fprintf(e->o, "%s i%d = %s %% ", T, chain[i]->var, v);
    put_ext(e, chain[i], L);
    fprintf(e->o, ";\n%*s%s /= ", ind * 2, "", v);
    put_ext(e, chain[i], L);
    fputs(";\n", e->o);
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

bool cu_covers(const E *e, const Stmt **chain, int n, const bool *in_cell, const Access *dst) {
  long coef[64], ext[64];
  int k = 0;
  if (dst->flat.off || cu_buf(e, dst->buf)->dsize) return false;
  for (int t = 0; t < dst->flat.n; t++)
    if (dst->flat.t[t].var < 0) return false;
  for (int i = 0; i < n; i++) {
    if (!in_cell[i]) continue;
    if (chain[i]->dext) return false;
    long cf = 0;
    for (int t = 0; t < dst->flat.n; t++)
      if (dst->flat.t[t].var == chain[i]->var) cf += dst->flat.t[t].coef;
    if (cf <= 0) return false;
    int j = k++;
    for (; j > 0 && coef[j - 1] > cf; j--) coef[j] = coef[j - 1], ext[j] = ext[j - 1];
    coef[j] = cf;
    ext[j] = chain[i]->ext;
  }
  long span = 1;
  for (int j = 0; j < k; j++) {
    if (coef[j] != span) return false;
    span *= ext[j];
  }
  return span == cu_buf(e, dst->buf)->size;
}

/* The register store of a nest takes the fill of 0 before it when it writes every cell
 * of the buffer (its value reads none: register_store). */
static bool reg_takes_fill(const E *e, const Stmt **chain, int n, const int *par, const Stmt *reg, const Stmt *fill) {
  if (!fill || !reg || reg->dst.buf != fill->buf) return false;
  bool in_cell[64];
  for (int i = 0; i < n; i++) in_cell[i] = par[i] == PAR;
  return cu_covers(e, chain, n, in_cell, &reg->dst);
}

/* Below this many threads a long reduction is split across more threads. */
enum { SPLIT_MAX_POINTS = 4096, SPLIT_MIN_RED = 2048, SPLIT_TARGET_THREADS = 65536, SPLIT_MIN_CHUNK = 64 };
/* Over a dynamic number of reduced points: fewer threads (64 blocks), most of which
 * return at once when the reduction is short at run time, enough to stream a long one. */
enum { SPLIT_DYN_THREADS = 16384 };

/* A reduction that may be split across threads: a register store accumulated by add,
 * max or min. Sets *z to the sizes of its points and reduced points. */
static const Stmt *split_store(E *e, const PtrVec *stores, const Stmt **chain, int n, const int *par, RedSize *z) {
  const Stmt *s = register_store(stores, chain, n, par);
  if (!s || (s->accum != OP_ADD && s->accum != OP_MAX && s->accum != OP_MIN)) return NULL;
  *z = (RedSize){1, 1, 0, 0, 1, 1};
  for (int i = 0; i < n; i++) {
    if (par[i] == DROP) continue;
    bool p = par[i] == PAR;
    long *c = p ? &z->points : &z->red, *g = p ? &z->gpoints : &z->gred;
    *c = mul_sat(*c, chain[i]->ext);
    *g = mul_sat(*g, chain[i]->dext ? chain[i]->ext * IR_DYN_EXT_GUESS : chain[i]->ext);
    int *d = p ? &z->pdext : &z->rdext;
    *d = ir_prod_mul(e->a, e->mm, *d, chain[i]->dext);
  }
  /* Split and block reductions number the reduced points with one long: past 2^62
   * (three reduced axes of 2^31) the thread runs the loops themselves. */
  if (z->red >= SAT_MAX || z->gred >= SAT_MAX) return NULL;
  return s;
}

const char *cu_ext_what(const E *e, long ext, int dext) {
  const char *t = arena_printf(e->a, "%ld", ext);
  const IrProd *x = ir_prod_at(e->m, dext);
  for (int i = 0; x && i < x->n; i++) {
    const char *d = ir_dim_name(e->a, e->m, x->dims[i]);
    t = i || ext != 1 ? arena_printf(e->a, "%s*%s", t, d) : d;
  }
  return t;
}

/* A split reduction over a dynamic number of reduced points: ce of the chunks (one per
 * SPLIT_MIN_CHUNK points, at least 1) have points, computed at launch. */
static void live_chunks(E *e, const RedSize *z, long chunks) {
  fputs("  long ce = (", e->o);
  cr_ext(&e->r, z->red, z->rdext);
  fprintf(e->o, " + %d) / %d;\n  ce = ce < 1 ? 1 : ce > %ldL ? %ldL : ce;\n", SPLIT_MIN_CHUNK - 1, SPLIT_MIN_CHUNK, chunks, chunks);
}

/* Split reduction, kernel 1: thread (point, chunk) folds every chunks-th reduced point
 * into a local from the neutral element and leaves it in the scratch buffer; kernel 2:
 * one thread per point folds the chunks into the destination. Adds round differently
 * from the CPU's sequential order (max and min are exact). Over a dynamic number of
 * reduced points, only the first ce chunks run (live_chunks); with one, its thread folds
 * into the cell itself, in the CPU's order, and kernel 2 does nothing. */
static void split_kernels(E *e, const char *what, const Stmt **chain, int n, const int *par, const Stmt *st,
                          const RedSize *z, long chunks) {
  FILE *o = e->o;
  bool f32 = cu_buf(e, st->dst.buf)->elem == ELEM_F32, dyn = z->rdext;
  long points = z->points;
  e->scratch_elem = cu_buf(e, st->dst.buf)->elem;
  long bytes = points * chunks * (f32 ? 4 : 8);
  if (bytes > e->scratch) e->scratch = bytes;
  cu_begin_args(e);
  cu_use_stmt(e, chain[0]);
  if (!dyn) e->arg[st->dst.buf] = 0; /* not touched by the first kernel */
  CudaKernel *k = cu_finish_kernel(e, true);
  k->threads = points * chunks;
  cu_kernel_head(e, k, arena_printf(e->a, "%s: split reduction, %s%ld chunks", what, dyn ? "up to " : "", chunks));
  /* Neighbouring threads read neighbouring cells: neighbouring chunks of one point when
   * the loads are contiguous along the reduction (row sums), else neighbouring points of
   * one chunk (column sums, as a bias gradient over a batch). xs[point * chunks + chunk]. */
  int inner = -1;
  for (int i = 0; i < n; i++)
    if (par[i] == SEQ) inner = chain[i]->var;
  if (inner >= 0 && cu_loads_along(st->val, inner) == 1)
    fprintf(o, "  long slot = t;\n  long c = t %% %ldL;\n  t /= %ldL;\n", chunks, chunks);
  else fprintf(o, "  long c = t / %ldL;\n  t %%= %ldL;\n  long slot = t * %ldL + c;\n", points, points, chunks);
  if (dyn) {
    live_chunks(e, z, chunks);
    fputs("  if (c >= ce) return;\n", o);
  }
  cu_decompose(e, chain, n, par, PAR, "t", 1);
  cu_strided_fold(e, chain, n, par, st, z, "c", dyn ? "ce" : arena_printf(e->a, "%ldL", chunks), dyn ? "ce == 1" : NULL);
  if (dyn) {
    fprintf(o, "  if (ce == 1) b%d[", st->dst.buf);
    cr_aff(&e->r, &st->dst.flat);
    fputs("] = acc;\n  else ", o);
  } else fputs("  ", o);
  fputs("xs[slot] = acc;\n", o);
  cu_kernel_tail(e, k);

  cu_begin_args(e);
  cu_use_access(e, &st->dst, true);
  const IrProd *rd = ir_prod_at(e->m, z->rdext);
  for (int i = 0; rd && i < rd->n; i++) e->dim[rd->dims[i]] = true;
  k = cu_finish_kernel(e, true);
  k->threads = points;
  cu_kernel_head(e, k, arena_printf(e->a, "%s: split reduction, combine", what));
  fputs("  long slot = t;\n", o);
  if (dyn) {
    live_chunks(e, z, chunks);
    fputs("  if (ce < 2) return; /* one chunk folded into the cell */\n", o);
  }
  cu_decompose(e, chain, n, par, PAR, "t", 1);
  fprintf(o, "  %s v = b%d[", f32 ? "float" : "double", st->dst.buf);
  cr_aff(&e->r, &st->dst.flat);
  fprintf(o, "];\n  for (long c = 0; c < %s; c++) v = ", dyn ? "ce" : arena_printf(e->a, "%ldL", chunks));
  cr_accum(&e->r, st->accum, f32, "v", NULL, arena_printf(e->a, "xs[slot * %ldL + c]", chunks));
  fprintf(o, ";\n  b%d[", st->dst.buf);
  cr_aff(&e->r, &st->dst.flat);
  fputs("] = v;\n", o);
  cu_kernel_tail(e, k);
}

void cu_strided_fold(E *e, const Stmt **chain, int n, const int *par, const Stmt *st, const RedSize *z, const char *first,
                     const char *step, const char *one) {
  FILE *o = e->o;
  bool f32 = cu_buf(e, st->dst.buf)->elem == ELEM_F32;
  fprintf(o, "  %s acc = ", cu_ctype(cu_buf(e, st->dst.buf)->elem));
  if (one) {
    fprintf(o, "%s ? ", one);
    cr_access(&e->r, &st->dst);
    fputs(" : ", o);
  }
  cr_const(o, op_neutral(st->accum), f32);
  fprintf(o, ";\n  for (long r = %s; r < ", first);
  cr_ext(&e->r, z->red, z->rdext);
  fprintf(o, "; r += %s) {\n    long q = r;\n", step);
  cu_decompose(e, chain, n, par, SEQ, "q", 2);
  e->to_acc = st;
  cu_stmts(e, &chain[n - 1]->body, 2);
  e->to_acc = NULL;
  fputs("  }\n", o);
}


/* A nest as its chain of perfectly nested loops, their roles, its stores and its
 * register store (the one cell the parallel loops pick), before any kernel is chosen. */
typedef struct Nest {
  const Stmt *chain[64];
  int n;
  int par[64];
  PtrVec stores;
  const Stmt *reg;
} Nest;

/* False for an empty nest (it does nothing). */
static bool nest_shape(E *e, const Stmt *s, Nest *x) {
  memset(x, 0, sizeof *x);
  const Stmt *cur = s;
  while (cur->kind == S_LOOP && x->n < 64) {
    x->chain[x->n++] = cur;
    if (cur->ext <= 0) return false;
    if (cur->body.len != 1) break;
    cur = cur->body.items[0];
  }
  collect_stores(s, &x->stores, e->a);
  /* A tiled chain loop runs over its whole extent (tiles are for CPU caches): its tile
   * loop, further out in the chain, goes. */
  int n = x->n;
  for (int j = 0; j < n; j++)
    for (int i = 0; i < j && tiled(x->chain[j]); i++)
      if (x->chain[i]->var == x->chain[j]->tile_var) x->par[i] = DROP;
  if (n && nest_parallelizable(&x->stores))
    for (int i = 0; i < n; i++)
      if (x->par[i] != DROP && var_parallel(&x->stores, x->chain[i]->var)) x->par[i] = PAR;
  x->reg = n ? register_store(&x->stores, x->chain, n, x->par) : NULL;
  return true;
}

static void nest_kernel(E *e, const IrFunc *f, const Stmt *s) {
  Nest x;
  if (!nest_shape(e, s, &x)) return;
  const Stmt **chain = x.chain;
  int n = x.n, *par = x.par;
  PtrVec stores = x.stores;
  long points = 1;
  for (int i = 0; i < n; i++)
    if (par[i] == PAR) points *= chain[i]->ext;
  const char *what = func_what(e, f, s);
  const Stmt *reg = x.reg;
  /* Tiles, block reductions and splits are planned from static sizes (a dynamic extent
   * counts as IR_DYN_EXT_GUESS); their kernels read the dynamic extents at launch. */
  bool dyn = ir_stmt_dynamic(e->m, s);
  if (reg && cu_contraction(e, what, chain, n, par, reg)) return;
  RedSize z;
  const Stmt *st = n ? split_store(e, &stores, chain, n, par, &z) : NULL;
  /* Both combine partial results across threads, in another order than the CPU's: not
   * under --strict-fp (for max and min only the sign of a zero result can differ). */
  if (st && !e->strict && cu_block_reduction(e, what, chain, n, par, st, &z)) return;
  /* The scratch memory is sized at compile time: the points must be static. Over a
   * dynamic number of reduced points, the most chunks; those that run adapt at launch. */
  if (st && !e->strict && !z.pdext && z.points < SPLIT_MAX_POINTS && (z.rdext || z.red >= SPLIT_MIN_RED)) {
    long chunks = (z.rdext ? SPLIT_DYN_THREADS : SPLIT_TARGET_THREADS) / z.points;
    if (!z.rdext && chunks > z.red / SPLIT_MIN_CHUNK) chunks = z.red / SPLIT_MIN_CHUNK;
    if (chunks > 1) {
      split_kernels(e, what, chain, n, par, st, &z, chunks);
      return;
    }
  }
  CudaKernel *k = new_kernel(e, s);
  k->threads = points;
  for (int i = 0; i < n; i++)
    if (par[i] == PAR) cu_threads_times(e, k, chain[i]->dext);
  cu_kernel_head(e, k, what);
  FILE *o = e->o;
  cu_decompose(e, chain, n, par, PAR, "t", 1);
  bool seq = false;
  for (int i = 0; i < n; i++) seq |= par[i] == SEQ;
  /* A reduction in the thread: the cell stays in a register across the loops. A cell
   * whose fill of 0 this nest takes starts from 0 (then accumulates as after the fill). */
  bool fresh = !dyn && reg_takes_fill(e, chain, n, par, reg, e->pending_fill);
  if (!seq && !fresh) reg = NULL;
  if (reg) {
    fprintf(o, "  %s acc = ", cu_ctype(cu_buf(e, reg->dst.buf)->elem));
    if (fresh) {
      cr_const(o, 0, cu_buf(e, reg->dst.buf)->elem == ELEM_F32);
      e->pending_fill = NULL;
    } else {
      fprintf(o, "b%d[", reg->dst.buf);
      cr_aff(&e->r, &reg->dst.flat);
      fputc(']', o);
    }
    fputs(";\n", o);
    e->to_acc = reg;
  }
  int ind = 1;
  for (int i = 0; i < n; i++) {
    if (par[i] != SEQ) continue;
    cu_indent(e, ind++);
    fprintf(o, "for (long i%d = 0; i%d < ", chain[i]->var, chain[i]->var);
    put_ext(e, chain[i], "L");
    fprintf(o, "; i%d++) {\n", chain[i]->var);
  }
  if (n) cu_stmts(e, &chain[n - 1]->body, ind);
  else cr_stmt(&e->r, s, ind);
  while (--ind > 0) {
    cu_indent(e, ind);
    fputs("}\n", o);
  }
  if (reg) {
    fprintf(o, "  b%d[", reg->dst.buf);
    cr_aff(&e->r, &reg->dst.flat);
    fputs("] = acc;\n", o);
    e->to_acc = NULL;
  }
  cu_kernel_tail(e, k);
}

/* Launch steps for kernels lo..hi-1, in order. */
static void push_kernels(E *e, PtrVec *steps, int lo, int hi) {
  for (int k = lo; k < hi; k++) {
    CudaStep *ks = ANEW(e->a, CudaStep);
    ks->index = k;
    vec_push(e->a, steps, ks);
  }
}

/* A fill of 0 whose next statement writes every cell of the buffer through one register
 * store (a contraction, a thread's reduction, a pointwise accumulation) goes: the cells
 * start from 0 there (cu_contraction or nest_kernel takes e->pending_fill), which saves
 * the fill's pass over memory and the cells' reads. */
static bool next_takes_fill(E *e, const IrFunc *f, int i, const Stmt *fill) {
  while (++i < f->body.len && ((const Stmt *)f->body.items[i])->kind == S_COMMENT) {}
  if (i >= f->body.len || ((const Stmt *)f->body.items[i])->kind != S_LOOP) return false;
  /* A dynamic nest takes it only as a contraction (into a static buffer over a dynamic K). */
  bool dyn = ir_stmt_dynamic(e->m, f->body.items[i]);
  Nest x;
  return nest_shape(e, f->body.items[i], &x) && x.reg &&
         (cu_contraction_takes(e, x.chain, x.n, x.par, x.reg, fill) || (!dyn && reg_takes_fill(e, x.chain, x.n, x.par, x.reg, fill)));
}

static void plan_func(E *e, int fi) {
  const IrFunc *f = VEC_AT(e->m->funcs, IrFunc, fi);
  PtrVec *steps = &e->p->steps[fi];
  for (int i = 0; i < f->body.len; i++) {
    const Stmt *s = f->body.items[i];
    if (s->kind == S_COMMENT) {
      cr_stmt(&e->r, s, 0);
      continue;
    }
    int before = e->p->kernels.len;
    switch (s->kind) {
    case S_CALL:
      for (int k = 0; k < s->ncalls; k++) {
        CudaStep *cs = ANEW(e->a, CudaStep);
        cs->call = true;
        cs->index = s->callee + k;
        vec_push(e->a, steps, cs);
      }
      continue;
    case S_FILL:
      if (s->value == 0 && !cu_buf(e, s->buf)->dsize && next_takes_fill(e, f, i, s)) {
        e->pending_fill = s;
        continue;
      }
      fill_kernel(e, f, s);
      break;
    default:
      nest_kernel(e, f, s);
      if (e->pending_fill) { /* not taken after all: the fill is launched first */
        int nest_end = e->p->kernels.len;
        fill_kernel(e, f, e->pending_fill);
        e->pending_fill = NULL;
        push_kernels(e, steps, nest_end, e->p->kernels.len);
        push_kernels(e, steps, before, nest_end);
        continue;
      }
      break;
    }
    push_kernels(e, steps, before, e->p->kernels.len);
  }
}

static const char *prelude =
    "/* Generated by tdslc --backend=cuda: one kernel per loop nest or fill. */\n"
    "#ifndef TDSL_EMULATE\n"
    "#define TDSL_KERNEL extern \"C\" __global__ void __launch_bounds__(256)\n"
    "#define TDSL_KERNEL_MB(n) extern \"C\" __global__ void __launch_bounds__(256, n)\n"
    "#define TDSL_DEV static __device__ __forceinline__\n"
    "#define TDSL_NAN __int_as_float(0x7fc00000)\n"
    "#define TDSL_INF __int_as_float(0x7f800000)\n"
    "#define TDSL_SHFL_DOWN(v, d) __shfl_down_sync(0xffffffffu, (v), (d))\n"
    "#define TDSL_ALIGN16 __align__(16)\n"
    "#define TDSL_LD4(p) (*(const float4 *)(p))\n"
    "#define TDSL_ST4(p, v) (*(float4 *)(p) = (v))\n"
    "#endif\n";

static char *meta_text(Arena *a, const IrModule *m, const CudaPlan *p, long scratch) {
  char *txt = NULL;
  size_t len = 0;
  FILE *o = open_memstream(&txt, &len);
  fputs("tdslcuda 1\n", o);
  if (scratch) fprintf(o, "scratch %ld\n", scratch);
  for (int i = 0; i < m->bufs.len; i++) {
    const IrBuf *b = VEC_AT(m->bufs, IrBuf, i);
    if (b->dsize) fprintf(o, "dbuf %d\n", i);
    else fprintf(o, "buf %d %ld\n", i, b->size * (b->elem == ELEM_F64 ? 8 : 4));
  }
  for (int i = 0; i < p->kernels.len; i++) {
    const CudaKernel *k = VEC_AT(p->kernels, CudaKernel, i);
    fprintf(o, "kernel %d %s %ld %d", k->id, k->name, k->threads, k->nargs);
    for (int j = 0; j < k->nargs; j++) fprintf(o, " %c%d", k->args[j].kind, k->args[j].index);
    fputc('\n', o);
    if (k->smem) fprintf(o, "smem %d %d\n", k->id, k->smem);
    if (k->ntdims) {
      fprintf(o, "tdims %d %d", k->id, k->ntdims);
      for (int j = 0; j < k->ntdims; j++) fprintf(o, " %d", k->tdims[j]);
      fputc('\n', o);
    }
    for (int c = 0; c < k->nceils; c++) {
      const CudaCeil *x = &k->ceils[c];
      fprintf(o, "tceil %d %ld %ld %d", k->id, x->num, x->div, x->n);
      for (int j = 0; j < x->n; j++) fprintf(o, " %d", x->dims[j]);
      fputc('\n', o);
    }
  }
  fclose(o);
  char *r = arena_strdup(a, txt);
  free(txt);
  return r;
}

/* TF32 tensor-core helpers (sm_80+; the emulation's shim has its own): round the bits of
 * a float to TF32, ldmatrix of four 8 x 16-byte matrices from shared memory (lane l
 * gives the address of row l % 8 of matrix l / 8), one m16n8k8 mma accumulating into d
 * (the fragment layouts of the PTX ISA), cp.async copies of 4 or 16 bytes that read nb
 * bytes of src (0: write zeros) with their commit and wait, dynamic shared memory; and
 * the swizzled layouts of cuda_mma.c's tiles. */
static const char *tf32_prelude =
    "#ifndef TDSL_EMULATE\n"
    "#define TDSL_DYN_SHARED(T, name, n) extern __shared__ __align__(16) T name[]\n"
    "#define TDSL_CP_COMMIT() asm volatile(\"cp.async.commit_group;\" ::: \"memory\")\n"
    "#define TDSL_CP_WAIT(n) asm volatile(\"cp.async.wait_group %0;\" :: \"n\"(n) : \"memory\")\n"
    "TDSL_DEV unsigned tdsl_tf32u(unsigned u) {\n"
    "  unsigned r;\n"
    "  asm(\"cvt.rna.tf32.f32 %0, %1;\" : \"=r\"(r) : \"f\"(__uint_as_float(u)));\n"
    "  return r;\n"
    "}\n"
    "TDSL_DEV void tdsl_ldm4(unsigned *d, const unsigned *p) {\n"
    "  unsigned a = (unsigned)__cvta_generic_to_shared(p);\n"
    "  asm volatile(\"ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\"\n"
    "               : \"=r\"(d[0]), \"=r\"(d[1]), \"=r\"(d[2]), \"=r\"(d[3]) : \"r\"(a));\n"
    "}\n"
    "TDSL_DEV void tdsl_cp16(unsigned *d, const float *src, int nb) {\n"
    "  unsigned a = (unsigned)__cvta_generic_to_shared(d);\n"
    "  asm volatile(\"cp.async.cg.shared.global [%0], [%1], 16, %2;\" :: \"r\"(a), \"l\"(src), \"r\"(nb) : \"memory\");\n"
    "}\n"
    "TDSL_DEV void tdsl_cp4(unsigned *d, const float *src, int nb) {\n"
    "  unsigned a = (unsigned)__cvta_generic_to_shared(d);\n"
    "  asm volatile(\"cp.async.ca.shared.global [%0], [%1], 4, %2;\" :: \"r\"(a), \"l\"(src), \"r\"(nb) : \"memory\");\n"
    "}\n"
    "TDSL_DEV void tdsl_mma_tf32(float *d, const unsigned *a, const unsigned *b) {\n"
    "  asm volatile(\"mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, \"\n"
    "               \"{%8,%9}, {%0,%1,%2,%3};\"\n"
    "               : \"+f\"(d[0]), \"+f\"(d[1]), \"+f\"(d[2]), \"+f\"(d[3])\n"
    "               : \"r\"(a[0]), \"r\"(a[1]), \"r\"(a[2]), \"r\"(a[3]), \"r\"(b[0]), \"r\"(b[1]));\n"
    "}\n"
    "#endif\n"
    "TDSL_DEV int tdsl_swz_k(int r, int k) { return r * 32 + (((k >> 2) ^ (r & 7)) << 2) + (k & 3); }\n"
    "TDSL_DEV int tdsl_swz_r(int r, int k, int rows) { return k * rows + (((r >> 2) ^ ((k & 3) << 1)) << 2) + (r & 3); }\n";

CudaPlan *cuda_plan(Arena *a, IrModule *m, const CudaPlanOpts *opts) {
  CudaPlan *p = ANEW(a, CudaPlan);
  p->steps = ANEWN(a, PtrVec, m->funcs.len + 1);
  char *txt = NULL;
  size_t len = 0;
  E e = {.a = a, .m = m, .mm = m, .p = p, .o = open_memstream(&txt, &len)};
  e.r = (CRender){.o = e.o, .m = m, .buf = "b", .sym = "s", .dim = "dim", .stmt = acc_hook, .user = &e};
  e.tf32 = opts->tf32;
  e.strict = opts->strict_fp;
  e.arg = ANEWN(a, char, m->bufs.len + 1);
  e.sym = ANEWN(a, bool, m->syms.len + 1);
  e.dim = ANEWN(a, bool, m->dims.len + 1);
  e.txt = &txt;
  e.len = &len;
  e.body_at = (size_t)-1;
  fputs(prelude, e.o);
  /* Emulated on the host, a float exp, tanh and log are the CPU backend's (correctly rounded),
   * not the host libm's: the emulation stands in for the GPU's math library with the CPU
   * backend's, so comparing the two backends tests the kernels (testsuite/cuda/). */
  fputs("#ifdef TDSL_EMULATE\n", e.o);
  fputs(ir_c_own_math, e.o);
  fputs("#define expf tdsl_exp_f32\n#define tanhf tdsl_tanh_f32\n#define logf tdsl_log_f32\n#endif\n", e.o);
  fputs(cr_helpers, e.o);
  if (e.tf32) fputs(tf32_prelude, e.o);
  fputc('\n', e.o);
  for (int i = 0; i < m->funcs.len; i++) plan_func(&e, i);
  cu_fuse_routines(&e);
  fclose(e.o);
  p->src = arena_strdup(a, txt);
  free(txt);
  p->meta = meta_text(a, m, p, e.scratch);
  return p;
}
