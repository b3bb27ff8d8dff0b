/* lower.c: assignments (graph.h) -> loop IR (ir.h).
 *
 * Each Asgn becomes a loop nest over its step's iteration space. The lhs is indexed
 * through slot asgn->lhs_slot, every operand leaf through its own slot; an affine axis
 * index that can leave its operand's extent gets a guard, and a point where any guard
 * fails contributes nothing (padding). `init_neutral` fills the whole lhs first. */
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ctx.h"
#include "diag.h"
#include "graph.h"
#include "ir.h"
#include "strtab.h"

enum { TILE = 16 }; /* loop tile for transposes: 16 floats = one cache line */

typedef struct L {
  Arena *a;
  Diag *d;
  Graph *g;
  IrModule *m;
  bool dbl;
  int *vbuf, *gbuf; /* per tensor id: buffer index or -1 */
  char *role;       /* per tensor id: TensorRole of its value */
  bool ok;
} L;

void aff_range(const Aff *a, const long *var_ext, long *lo, long *hi) {
  long l = a->off, h = a->off;
  for (int i = 0; i < a->n; i++) {
    if (a->t[i].var < 0) continue;
    long span = a->t[i].coef * (var_ext[a->t[i].var] - 1);
    if (span < 0) l += span; else h += span;
  }
  *lo = l;
  *hi = h;
}

int ir_find_func(const IrModule *m, const char *name) {
  for (int i = 0; i < m->funcs.len; i++)
    if (!strcmp(VEC_AT(m->funcs, IrFunc, i)->name, name)) return i;
  return -1;
}

/* ---- buffers ---- */

static const char *tensor_name(L *l, const Tensor *t) {
  return t->name ? t->name : arena_printf(l->a, "t#%d", t->id);
}

static int new_buf(L *l, const Tensor *t, bool grad) {
  IrBuf *b = ANEW(l->a, IrBuf);
  b->id = l->m->bufs.len;
  b->name = grad ? arena_printf(l->a, "%s.grad", tensor_name(l, t)) : tensor_name(l, t);
  b->elem = t->prec == PREC_DOUBLE ? ELEM_F64 : t->prec == PREC_SINGLE ? ELEM_F32
            : l->dbl ? ELEM_F64 : ELEM_F32;
  b->tensor_id = t->id;
  b->role = grad ? ROLE_GRAD : l->role[t->id];
  b->size = 1;
  if (t->shape.solved) {
    for (int k = 0; k < 3; k++) b->rank += t->shape.n[k];
    b->dims = ANEWN(l->a, int, b->rank + 1);
    b->labels = ANEWN(l->a, const char *, b->rank + 1);
    int r = 0;
    for (int k = 0; k < 3; k++) {
      b->nk[k] = t->shape.n[k];
      for (int i = 0; i < t->shape.n[k]; i++) {
        b->dims[r] = t->shape.dims[k][i].d;
        b->labels[r] = t->shape.dims[k][i].label;
        if (DIM_IS_DYN(b->dims[r])) {
          int id = DIM_DYN_ID(b->dims[r]);
          b->dsize = ir_prod_mul(l->a, l->m, b->dsize, ir_prod(l->a, l->m, &id, 1));
        } else b->size *= b->dims[r];
        r++;
      }
    }
  }
  if (!grad) {
    b->init.kind = t->init.kind;
    b->init.value = t->init.value;
    b->init.values = t->init.values;
    b->init.nvalues = t->init.nvalues;
    b->init.path = t->init.path;
    /* A model may run from another directory than the compiler: keep files absolute. */
    char *abs = t->init.path ? realpath(t->init.path, NULL) : NULL;
    if (abs) {
      b->init.path = arena_strdup(l->a, abs);
      free(abs);
    }
    b->init.file_elems = t->init.file_elems;
    b->init.ops = t->init.ops;
    b->init.nops = t->init.nops;
  }
  vec_push(l->a, &l->m->bufs, b);
  return b->id;
}

static int buf_of(L *l, Buf b) {
  int *tab = b.grad ? l->gbuf : l->vbuf;
  if (tab[b.t->id] < 0) tab[b.t->id] = new_buf(l, b.t, b.grad);
  return tab[b.t->id];
}

static IrBuf *irbuf(L *l, int i) { return VEC_AT(l->m->bufs, IrBuf, i); }

static int sym_index(L *l, const IndexSym *s) {
  for (int i = 0; i < l->g->syms.len; i++)
    if (VEC_AT(l->g->syms, IndexSym, i) == s) return i;
  diag_error(l->d, s->loc, "internal error: index symbol %s is not in the graph", s->name);
  l->ok = false;
  return 0;
}

/* ---- affine forms ---- */

static void aff_add_term(Arena *a, Aff *f, int var, long coef, int dyn) {
  if (coef == 0) return;
  if (var == AFF_ONE && !dyn) {
    f->off += coef;
    return;
  }
  for (int i = 0; i < f->n; i++)
    if (f->t[i].var == var && f->t[i].dyn == dyn) {
      f->t[i].coef += coef;
      return;
    }
  Term *nt = ANEWN(a, Term, f->n + 1);
  if (f->n) memcpy(nt, f->t, sizeof(Term) * (size_t)f->n);
  nt[f->n++] = (Term){var, coef, dyn};
  f->t = nt;
}

/* The dynamic product of dimension d (0 for a static one). */
static int dim_prod(L *l, int d) {
  if (!DIM_IS_DYN(d)) return 0;
  int id = DIM_DYN_ID(d);
  return ir_prod(l->a, l->m, &id, 1);
}

/* For ordering: a stride over a dynamic dimension counts as a large one. */
enum { DYN_WEIGHT = 1 << 16 };
static long term_weight(const Term *t) { return labs(t->coef) * (t->dyn ? DYN_WEIGHT : 1); }

/* Drops terms whose coefficients cancelled; largest strides first (reads like
 * row-major: 6*i0 + i1). */
static void aff_normalize(Aff *f) {
  int j = 0;
  for (int i = 0; i < f->n; i++)
    if (f->t[i].coef) f->t[j++] = f->t[i];
  f->n = j;
  for (int i = 1; i < f->n; i++)
    for (int k = i; k > 0 && term_weight(&f->t[k]) > term_weight(&f->t[k - 1]); k--) {
      Term t = f->t[k];
      f->t[k] = f->t[k - 1];
      f->t[k - 1] = t;
    }
}

enum { MAX_NEST_ITERS = 64 }; /* iterators of one assignment (tiling adds two loops) */

typedef struct Nest {
  const Projections *p;
  int base;           /* loop variable of iterator 0 */
  long *var_ext;      /* per function variable */
} Nest;

/* The flag "dimension id is not 1" (ir.h IrDim.flag), made once. */
static int bcast_flag(L *l, int id) {
  for (int i = 0; i < l->m->dims.len; i++) {
    const IrDim *d = l->m->dims.items[i];
    if (d->flag && d->of == id) return ir_prod(l->a, l->m, &i, 1);
  }
  IrDim *d = ANEW(l->a, IrDim);
  d->id = l->m->dims.len;
  d->flag = true;
  d->of = id;
  vec_push(l->a, &l->m->dims, d);
  return ir_prod(l->a, l->m, &d->id, 1);
}

/* A dynamic axis that broadcasts when its run-time size is 1 (graph.h dyn_bcast): its
 * index is scaled by the flag, so it is 0 then (the run-time checks make it the
 * iterator otherwise). */
static void bcast_scale(L *l, Aff *f, int id) {
  int flag = bcast_flag(l, id);
  for (int k = 0; k < f->n; k++) f->t[k].dyn = ir_prod_mul(l->a, l->m, f->t[k].dyn, flag);
}

/* An operand access through a slot of the projections (slot -1: index 0 everywhere). */
static Access make_access(L *l, Nest *n, int buf, int slot, Loc loc) {
  IrBuf *b = irbuf(l, buf);
  Access acc = {.buf = buf, .rank = b->rank};
  acc.axis = ANEWN(l->a, Aff, b->rank + 1);
  if (slot < 0) return acc;
  if (slot >= n->p->nslots || n->p->rank[slot] != b->rank) {
    diag_error(l->d, loc, "internal error: %s has rank %d but its projection slot %d has %d axes",
               b->name, b->rank, slot, slot < n->p->nslots ? n->p->rank[slot] : -1);
    l->ok = false;
    return acc;
  }
  long stride = 1;
  int dstride = 0; /* the stride is stride times this product of dynamic dims */
  for (int ax = b->rank - 1; ax >= 0; ax--) {
    const AxisIndex *ai = &n->p->idx[slot][ax];
    Aff *f = &acc.axis[ax];
    f->off = ai->offset;
    for (int k = 0; k < ai->nterms; k++)
      if (n->p->iter_size[ai->iter[k]] != 1) /* a size-1 iterator is always 0: no loop */
        aff_add_term(l->a, f, n->base + ai->iter[k], ai->coef[k], 0);
    if (ai->sym) aff_add_term(l->a, f, -1 - sym_index(l, ai->sym), 1, 0);
    if (ai->dyn_bcast && DIM_IS_DYN(b->dims[ax])) bcast_scale(l, f, DIM_DYN_ID(b->dims[ax]));
    aff_normalize(f);
    aff_add_term(l->a, &acc.flat, AFF_ONE, stride * f->off, dstride);
    for (int k = 0; k < f->n; k++)
      aff_add_term(l->a, &acc.flat, f->t[k].var, stride * f->t[k].coef, ir_prod_mul(l->a, l->m, dstride, f->t[k].dyn));
    if (DIM_IS_DYN(b->dims[ax])) dstride = ir_prod_mul(l->a, l->m, dstride, dim_prod(l, b->dims[ax]));
    else stride *= b->dims[ax];
  }
  aff_normalize(&acc.flat);
  return acc;
}

/* Does axis index f stay in [0, dim) (dim static or DIM_DYN) for every point of the
 * nest? With dynamic sizes only the plain cases are known: all static, or f is an
 * iterator that runs over exactly that dynamic dimension. */
static bool dyn_in_range(const Nest *n, const Aff *f, int dim) {
  bool dyn = DIM_IS_DYN(dim);
  for (int k = 0; k < f->n; k++) dyn |= f->t[k].var >= 0 && n->var_ext[f->t[k].var] < 0;
  if (!dyn) {
    long lo, hi;
    aff_range(f, n->var_ext, &lo, &hi);
    return lo >= 0 && hi < dim;
  }
  return f->n == 1 && f->off == 0 && f->t[0].coef == 1 && f->t[0].var >= 0 && n->var_ext[f->t[0].var] == dim;
}

/* Collects guards for the axes of acc that can fall outside their extent. */
static void add_guards(L *l, Nest *n, const Access *acc, PtrVec *guards) {
  IrBuf *b = irbuf(l, acc->buf);
  for (int ax = 0; ax < acc->rank; ax++) {
    const Aff *f = &acc->axis[ax];
    bool has_var = false;
    for (int k = 0; k < f->n; k++) has_var |= f->t[k].var >= 0;
    if (!has_var) continue; /* fixed and symbol indices are checked, not skipped */
    bool bcast = false;
    for (int k = 0; k < f->n; k++) bcast |= f->t[k].dyn != 0;
    if (bcast) continue; /* a run-time broadcast: the run-time checks keep it in range */
    if (dyn_in_range(n, f, b->dims[ax])) continue;
    Guard *gd = ANEW(l->a, Guard);
    gd->aff = *f;
    gd->ext = DIM_IS_DYN(b->dims[ax]) ? 1 : b->dims[ax];
    gd->dext = dim_prod(l, b->dims[ax]);
    vec_push(l->a, guards, gd);
  }
}

static IrExpr *lower_expr(L *l, Nest *n, const AExpr *e, PtrVec *accs, Loc loc) {
  IrExpr *x = ANEW(l->a, IrExpr);
  switch (e->kind) {
  case AE_CONST:
    x->kind = X_CONST;
    x->value = e->value;
    break;
  case AE_SYM:
    x->kind = X_SYM;
    x->sym = sym_index(l, e->sym);
    break;
  case AE_BUF: {
    x->kind = X_LOAD;
    x->acc = make_access(l, n, buf_of(l, e->buf), e->slot, loc);
    vec_push(l->a, accs, &x->acc);
    break;
  }
  case AE_OP:
    x->kind = X_OP;
    x->op = e->op;
    for (int i = 0; i < op_info[e->op].arity; i++) x->a[i] = lower_expr(l, n, e->args[i], accs, loc);
    break;
  }
  return x;
}

/* ---- assignment descriptions (for --dump-ir comments and bounds messages) ---- */

static void aexpr_fmt(FILE *o, const AExpr *e) {
  switch (e->kind) {
  case AE_CONST: fprintf(o, "%g", e->value); break;
  case AE_SYM: fprintf(o, "%s", e->sym->name); break;
  case AE_BUF:
    if (e->buf.t->name) fputs(e->buf.t->name, o);
    else fprintf(o, "t#%d", e->buf.t->id);
    if (e->buf.grad) fputs(".grad", o);
    break;
  case AE_OP:
    fprintf(o, "%s(", op_info[e->op].name);
    for (int i = 0; i < op_info[e->op].arity; i++) {
      if (i) fputs(", ", o);
      aexpr_fmt(o, e->args[i]);
    }
    fputc(')', o);
    break;
  }
}

static const char *asgn_what(L *l, const Asgn *as) {
  char *buf = NULL;
  size_t len = 0;
  FILE *o = open_memstream(&buf, &len);
  if (!o) return "assignment";
  AExpr lhs = {.kind = AE_BUF, .buf = as->lhs};
  aexpr_fmt(o, &lhs);
  /* as in the source: =: overwrites, =+ / =:+ accumulate */
  const char *acc = as->accum == OP_ARG2 ? "" : op_info[as->accum].infix ? op_info[as->accum].infix : op_info[as->accum].name;
  fprintf(o, " =%s%s ", as->init_neutral || as->accum == OP_ARG2 ? ":" : "", acc);
  aexpr_fmt(o, as->rhs);
  /* The operation's site (the step) says more than the prelude line of its code. */
  Loc loc = as->step && as->step->loc.file ? as->step->loc : as->loc;
  if (loc.file) {
    const char *p = loc.file->path, *slash = strrchr(p, '/');
    fprintf(o, " at %s:%d:%d", slash ? slash + 1 : p, loc.line, loc.col);
  }
  fclose(o);
  const char *r = arena_strdup(l->a, buf);
  free(buf);
  return r;
}

/* ---- loop order ---- */

/* Iterators are ordered outermost first by, in turn: the smallest stride they take in
 * any access (a loop that walks something contiguously belongs inside), the sum of
 * their strides over all accesses, and their stride in the written tensor (writes
 * contiguous innermost). This gives i-k-j for a matmul, the reduced axis innermost for
 * a row sum, and a write-contiguous innermost loop for a permute (then tiled). Ties
 * keep the projection's order. accs[0] is the written access. */
typedef struct IterKey {
  long min, sum, dst;
} IterKey;

static bool key_outer(IterKey a, IterKey b) {
  if (a.min != b.min) return a.min > b.min;
  if (a.sum != b.sum) return a.sum > b.sum;
  return a.dst > b.dst;
}

static void loop_order(int niters, int base, PtrVec *accs, int *order) {
  IterKey key[MAX_NEST_ITERS];
  for (int v = 0; v < niters && v < MAX_NEST_ITERS; v++) key[v] = (IterKey){LONG_MAX, 0, 0};
  for (int i = 0; i < accs->len; i++) {
    const Access *a = accs->items[i];
    for (int k = 0; k < a->flat.n; k++) {
      int v = a->flat.t[k].var - base;
      if (v < 0 || v >= niters || v >= MAX_NEST_ITERS) continue;
      long c = term_weight(&a->flat.t[k]);
      if (c < key[v].min) key[v].min = c;
      key[v].sum += c;
      if (i == 0) key[v].dst = c;
    }
  }
  for (int i = 0; i < niters; i++) order[i] = i;
  for (int i = 1; i < niters; i++) /* stable insertion sort, outermost first */
    for (int j = i; j > 0 && key_outer(key[order[j]], key[order[j - 1]]); j--) {
      int t = order[j];
      order[j] = order[j - 1];
      order[j - 1] = t;
    }
}

static Stmt *new_stmt(L *l, StmtKind k) {
  Stmt *s = ANEW(l->a, Stmt);
  s->kind = k;
  return s;
}

/* for var < ext (tiled by TILE through tile_var when tile_var >= 0) { body }; ext < 0:
 * the dynamic dimension DIM_DYN encoded (never tiled) */
static Stmt *new_loop(L *l, int var, long ext, int tile_var, Stmt *body) {
  Stmt *lp = new_stmt(l, S_LOOP);
  lp->var = var;
  lp->ext = ext < 0 ? 1 : ext;
  lp->dext = ext < 0 ? dim_prod(l, (int)ext) : 0;
  lp->tile_var = tile_var;
  lp->tile = tile_var >= 0 ? TILE : 0;
  vec_push(l->a, &lp->body, body);
  return lp;
}

static long coef_of(const Aff *f, int var) {
  for (int i = 0; i < f->n; i++)
    if (f->t[i].var == var) return f->t[i].coef;
  return 0;
}

/* A transpose-like nest: the innermost loop p walks some access with a large stride,
 * while another loop q walks that access contiguously. Tiling p and q keeps both the
 * written and the read lines in cache (a 4-D permute: several times faster). */
static void pick_tile(const int *act, int nact, const PtrVec *accs, const long *var_ext, int *tp, int *tq) {
  if (nact < 2) return;
  int p = act[nact - 1];
  if (var_ext[p] < 2 * TILE) return;
  for (int i = 0; i < accs->len; i++) {
    const Aff *f = &((const Access *)accs->items[i])->flat;
    if (labs(coef_of(f, p)) <= 1) continue;
    for (int k = 0; k < nact - 1; k++)
      if (coef_of(f, act[k]) == 1 && var_ext[act[k]] >= 2 * TILE) {
        *tp = p;
        *tq = act[k];
        return;
      }
  }
}

/* One loop of a nest: var over [0, ext); tile_var >= 0: the loop over var's tiles. */
typedef struct NestLoop {
  int var;
  long ext;
  int tile_var;
} NestLoop;

/* The loops of n, outermost first: size-1 iterators get none (loop_order decides the
 * rest); a transpose-like pair (pick_tile) is tiled: tile(q) tile(p) q p innermost. */
static int nest_loops(IrFunc *f, Nest *n, PtrVec *accs, NestLoop *loops) {
  const Projections *p = n->p;
  int order[MAX_NEST_ITERS], act[MAX_NEST_ITERS], nact = 0;
  loop_order(p->niters, n->base, accs, order);
  for (int i = 0; i < p->niters; i++)
    if (p->iter_size[order[i]] != 1) act[nact++] = n->base + order[i];
  int tp = -1, tq = -1;
  pick_tile(act, nact, accs, n->var_ext, &tp, &tq);
  int nl = 0;
  for (int i = 0; i < nact; i++)
    if (act[i] != tp && act[i] != tq) loops[nl++] = (NestLoop){act[i], n->var_ext[act[i]], -1};
  if (tp >= 0) {
    int vq = f->nvars++, vp = f->nvars++;
    loops[nl++] = (NestLoop){vq, (n->var_ext[tq] + TILE - 1) / TILE, -1};
    loops[nl++] = (NestLoop){vp, (n->var_ext[tp] + TILE - 1) / TILE, -1};
    loops[nl++] = (NestLoop){tq, n->var_ext[tq], vq};
    loops[nl++] = (NestLoop){tp, n->var_ext[tp], vp};
  }
  return nl;
}

static void push_comment(L *l, PtrVec *body, const char *text) {
  Stmt *c = new_stmt(l, S_COMMENT);
  c->text = text;
  vec_push(l->a, body, c);
}

/* The store dst[...] =accum rhs; every access it makes (dst first) goes into accs. */
static Stmt *lower_store(L *l, Nest *n, const Asgn *as, PtrVec *accs) {
  Stmt *st = new_stmt(l, S_STORE);
  st->what = asgn_what(l, as);
  st->dst = make_access(l, n, buf_of(l, as->lhs), as->lhs_slot, as->loc);
  vec_push(l->a, accs, &st->dst);
  st->accum = as->accum;
  st->val = lower_expr(l, n, as->rhs, accs, as->loc);
  return st;
}

/* s under an `if` of the guards, if any. */
static Stmt *guarded(L *l, Stmt *s, const PtrVec *guards) {
  if (!guards->len) return s;
  Stmt *g = new_stmt(l, S_IF);
  g->nguards = guards->len;
  g->guards = ANEWN(l->a, Guard, guards->len);
  for (int i = 0; i < guards->len; i++) g->guards[i] = *(Guard *)guards->items[i];
  vec_push(l->a, &g->body, s);
  return g;
}

/* Does the store write a different cell at every point of the nest? Each active
 * iterator (size > 1) must occur in some axis index, and each axis must be injective
 * in the iterators it holds: with their coefficients sorted by size, every one larger
 * than the span of the smaller ones (mixed radix: 2*oh + wh with wh < 2, a plain
 * iterator). Symbol terms and offsets shift an axis without merging points. A
 * dynamic extent is unknown, so it may only be the largest term's; a run-time
 * broadcast (dyn) is not injective. Sufficient, not necessary: 3*a + 4*b over (3, 2)
 * is injective but says no, which only keeps the accumulation. */
static bool store_injective(const Nest *n, const Access *dst) {
  int niters = n->p->niters;
  bool seen[MAX_NEST_ITERS] = {0};
  for (int ax = 0; ax < dst->rank; ax++) {
    const Aff *f = &dst->axis[ax];
    Term t[MAX_NEST_ITERS];
    int nt = 0;
    for (int k = 0; k < f->n; k++) {
      if (f->t[k].dyn) return false;
      int v = f->t[k].var - n->base;
      if (f->t[k].var < 0 || v < 0 || v >= niters) continue; /* a symbol or a constant */
      if (nt == MAX_NEST_ITERS) return false;
      t[nt++] = f->t[k];
      seen[v] = true;
    }
    for (int i = 1; i < nt; i++) /* ascending |coef| */
      for (int k = i; k > 0 && labs(t[k].coef) < labs(t[k - 1].coef); k--) {
        Term x = t[k];
        t[k] = t[k - 1];
        t[k - 1] = x;
      }
    long span = 0; /* the largest distance the smaller terms cover */
    for (int k = 0; k < nt; k++) {
      if (labs(t[k].coef) <= span) return false;
      if (k == nt - 1) break;
      long ext = n->var_ext[t[k].var];
      if (ext < 1 || labs(t[k].coef) > (LONG_MAX - span) / ext) return false;
      span += labs(t[k].coef) * (ext - 1);
    }
  }
  for (int v = 0; v < niters; v++)
    if (n->p->iter_size[v] != 1 && !seen[v]) return false; /* a reduction */
  return true;
}

/* An assignment: [fill the lhs with the neutral element,] a comment naming it, and a
 * perfect nest over its step's iteration space whose innermost loop holds the
 * (guarded) store. The CUDA backend maps such nests onto threads, and gcc unswitches
 * what it can. */
static void lower_asgn(L *l, IrFunc *f, PtrVec *body, const Asgn *as) {
  if (as->kind == ASGN_COMMENT) {
    push_comment(l, body, as->comment ? as->comment : "");
    return;
  }
  const Projections *p = as->step ? as->step->proj : NULL;
  if (!p || p->niters > MAX_NEST_ITERS) {
    if (p) diag_error(l->d, as->loc, "internal error: more than %d iterators", MAX_NEST_ITERS);
    else diag_error(l->d, as->loc, "internal error: assignment has no projections");
    l->ok = false;
    return;
  }
  Nest n = {.p = p, .base = f->nvars};
  f->nvars += p->niters;
  n.var_ext = ANEWN(l->a, long, f->nvars + 1);
  for (int i = 0; i < p->niters; i++) n.var_ext[n.base + i] = p->iter_size[i];

  PtrVec accs = {0};
  Stmt *st = lower_store(l, &n, as, &accs);
  /* `=:+` and its kin over a map that writes each cell at most once: the cell is the
   * one value, stored as it is rather than combined with the fill (OCANNL, and torch's
   * einsum: a permute or an outer product keeps a -0; 0 + -0 would make it +0). The
   * fill stays for the cells the map does not reach. */
  if (as->init_neutral && store_injective(&n, &st->dst)) st->accum = OP_ARG2;
  if (as->init_neutral && irbuf(l, st->dst.buf)->size != 0) { /* an empty lhs has no cell to fill */
    Stmt *fill = new_stmt(l, S_FILL);
    fill->buf = st->dst.buf;
    fill->value = op_neutral(as->accum);
    vec_push(l->a, body, fill);
  }
  push_comment(l, body, st->what); /* so that --dump-ir reads like the source */
  /* An iterator over an empty axis (static size 0; a dynamic size is never 0): the nest
   * has no point, so it stores nothing and the lhs keeps its fill (a sum over an empty
   * axis is 0, a max -inf, ...: op_neutral). No loop of 0 trips reaches the back ends. */
  for (int i = 0; i < p->niters; i++)
    if (p->iter_size[i] == 0) return;

  PtrVec guards = {0};
  for (int i = 0; i < accs.len; i++) add_guards(l, &n, accs.items[i], &guards);
  NestLoop loops[MAX_NEST_ITERS + 2];
  int nl = nest_loops(f, &n, &accs, loops);
  Stmt *inner = guarded(l, st, &guards);
  for (int d = nl - 1; d >= 0; d--) inner = new_loop(l, loops[d].var, loops[d].ext, loops[d].tile_var, inner);
  vec_push(l->a, body, inner);
}

static IrFunc *new_func(L *l, const char *name, bool exported) {
  IrFunc *f = ANEW(l->a, IrFunc);
  f->id = l->m->funcs.len;
  f->name = name;
  f->exported = exported;
  vec_push(l->a, &l->m->funcs, f);
  return f;
}

static void lower_code(L *l, IrFunc *f, const Code *c) {
  for (int i = 0; i < c->asgns.len; i++) lower_asgn(l, f, &f->body, c->asgns.items[i]);
}

static void add_call(L *l, IrFunc *f, int callee);

/* Does code[at..] start with all of run? */
static bool starts_with(const Code *code, int at, const Code *run) {
  if (!run->asgns.len || run->asgns.len > code->asgns.len - at) return false;
  for (int k = 0; k < run->asgns.len; k++)
    if (code->asgns.items[at + k] != run->asgns.items[k]) return false;
  return true;
}

/* The tensors' functions by the first assignment of their code: a hash of the pointer
 * with linear probing, so entries with one key stay in the order they were added (by
 * tensor, forward before backprop) and a routine is matched in time linear in it. */
typedef struct CodeFn {
  const void *first; /* NULL: an empty slot */
  const Code *code;
  int fn;
} CodeFn;

typedef struct CodeIndex {
  CodeFn *e;
  size_t mask;
} CodeIndex;

static size_t ptr_hash(const void *p) { return (size_t)(((uintptr_t)p >> 4) * 0x9E3779B97F4A7C15ull); }

static void index_add(CodeIndex *x, const Code *code, int fn) {
  if (fn < 0 || !code->asgns.len) return;
  size_t h = ptr_hash(code->asgns.items[0]) & x->mask;
  while (x->e[h].first) h = (h + 1) & x->mask;
  x->e[h] = (CodeFn){code->asgns.items[0], code, fn};
}

static CodeIndex code_index(L *l, const int *fwd, const int *bwd) {
  size_t n = 4;
  while (n < 4 * (size_t)l->g->tensors.len) n *= 2;
  CodeIndex x = {ANEWN(l->a, CodeFn, n), n - 1};
  for (int t = 0; t < l->g->tensors.len; t++) {
    Tensor *u = VEC_AT(l->g->tensors, Tensor, t);
    index_add(&x, &u->fwd, fwd[t]);
    index_add(&x, &u->bwd, bwd[t]);
  }
  return x;
}

/* The first tensor function whose whole code starts code[at..], or NULL. */
static const CodeFn *code_at(const CodeIndex *x, const Code *code, int at) {
  const void *key = code->asgns.items[at];
  for (size_t h = ptr_hash(key) & x->mask; x->e[h].first; h = (h + 1) & x->mask)
    if (x->e[h].first == key && starts_with(code, at, x->e[h].code)) return &x->e[h];
  return NULL;
}

/* A routine's code is mostly whole tensors' forward and backprop code (grad_update,
 * t.forward): those runs become calls of the tensor's function instead of copies,
 * which keeps the module (and gcc's compile time) linear in the model. The rest (an
 * sgd_update's per-parameter steps) goes into functions of at most ROUTINE_PART loop
 * nests each: gcc's time grows faster than linearly in a function's size. */
enum { ROUTINE_PART = 8 };
static void lower_routine(L *l, IrFunc *f, const Code *c, const CodeIndex *x) {
  IrFunc *part = NULL; /* where the routine's own code goes (one function per ROUTINE_PART nests) */
  int nparts = 0;
  for (int i = 0; i < c->asgns.len;) {
    const CodeFn *run = code_at(x, c, i);
    int callee = run ? run->fn : -1, len = run ? run->code->asgns.len : 0;
    if (callee >= 0) {
      add_call(l, f, callee);
      part = NULL;
      i += len;
      continue;
    }
    if (!part || part->body.len >= ROUTINE_PART) {
      part = new_func(l, arena_printf(l->a, "%s.part%d", f->name, nparts++), false);
      add_call(l, f, part->id);
    }
    lower_asgn(l, part, &part->body, c->asgns.items[i++]);
  }
}

static void add_call(L *l, IrFunc *f, int callee) {
  if (callee >= 0) ir_add_call(l->a, &f->body, callee);
}

IrModule *lower_graph(Arena *a, Diag *d, Graph *g, bool double_prec) {
  L l = {.a = a, .d = d, .g = g, .dbl = double_prec, .ok = true};
  l.m = ANEW(a, IrModule);
  int nt = g->tensors.len;
  l.vbuf = ANEWN(a, int, nt + 1);
  l.gbuf = ANEWN(a, int, nt + 1);
  for (int i = 0; i < nt; i++) l.vbuf[i] = l.gbuf[i] = -1;
  l.role = graph_roles(a, g);
  /* the sizes first: flags (bcast_flag) follow them */
  for (int i = 0; i < g->dimsyms.len; i++) {
    DimSym *s = VEC_AT(g->dimsyms, DimSym, i);
    IrDim *d = ANEW(a, IrDim);
    d->id = i;
    d->name = s->name;
    d->njoin = s->njoin;
    d->join = s->join;
    vec_push(a, &l.m->dims, d);
  }
  for (int i = 0; i < nt; i++) {
    Tensor *t = VEC_AT(g->tensors, Tensor, i);
    buf_of(&l, (Buf){t, false});
    if (t->diff) buf_of(&l, (Buf){t, true});
  }
  for (int i = 0; i < g->dimchecks.len; i++) {
    const DimCheck *dc = g->dimchecks.items[i];
    IrCheck *c = ANEW(a, IrCheck);
    *c = (IrCheck){dc->size, dc->expect, dc->or_one, dc->msg};
    vec_push(a, &l.m->checks, c);
  }
  for (int i = 0; i < g->syms.len; i++) {
    IndexSym *s = VEC_AT(g->syms, IndexSym, i);
    IrSym *is = ANEW(a, IrSym);
    is->id = i;
    is->name = s->name;
    is->range = s->range;
    vec_push(a, &l.m->syms, is);
  }
  /* Each tensor's own code once, so that T.forward functions share it; in execution
   * order (forward code in creation order, then backprop code in reverse), so that a
   * subgraph's code is a few runs of consecutive functions (ir.h, S_CALL). */
  int *fwd = ANEWN(a, int, nt + 1), *bwd = ANEWN(a, int, nt + 1);
  for (int i = 0; i < nt; i++) {
    Tensor *t = VEC_AT(g->tensors, Tensor, i);
    fwd[i] = bwd[i] = -1;
    if (t->kind == TK_OP && t->fwd.asgns.len) {
      IrFunc *f = new_func(&l, arena_printf(a, "%s.fwd", tensor_name(&l, t)), false);
      lower_code(&l, f, &t->fwd);
      fwd[i] = f->id;
    }
  }
  for (int i = nt - 1; i >= 0; i--) {
    Tensor *t = VEC_AT(g->tensors, Tensor, i);
    if (t->kind == TK_OP && t->diff && t->bwd.asgns.len) {
      IrFunc *f = new_func(&l, arena_printf(a, "%s.bwd", tensor_name(&l, t)), false);
      lower_code(&l, f, &t->bwd);
      bwd[i] = f->id;
    }
  }
  for (int i = 0; i < nt; i++)
    if (fwd[i] >= 0 && bwd[i] >= 0) {
      VEC_AT(l.m->funcs, IrFunc, fwd[i])->twin = bwd[i] + 1;
      VEC_AT(l.m->funcs, IrFunc, bwd[i])->twin = fwd[i] + 1;
    }
  CodeIndex x = code_index(&l, fwd, bwd);
  for (int i = 0; i < g->routines.len; i++) {
    Routine *r = VEC_AT(g->routines, Routine, i);
    IrFunc *f = new_func(&l, r->name, true);
    lower_routine(&l, f, &r->code, &x);
  }
  /* T.forward / T.backprop for every named tensor, under its buffer's name. */
  bool *done = ANEWN(a, bool, nt + 1);
  GraphWalk walk = {.memo = true};
  /* Each name's last binding: the index in g->names where it last stands. */
  StrTab last_at = {0};
  for (int i = 0; i < g->names.len; i++)
    strtab_put(a, &last_at, VEC_AT(g->names, NamedTensor, i)->name, VEC_AT(g->names, NamedTensor, i));
  for (int i = 0; i < g->names.len; i++) {
    NamedTensor *nm = VEC_AT(g->names, NamedTensor, i);
    Tensor *t = nm->t;
    int vb = l.vbuf[t->id];
    /* A name means its last binding (OCaml shadowing: `let%op g = g + 1` makes a new tensor
     * g_2 that `g` then names); the runtime looks aliases up before buffer names, so only a
     * name's final meaning becomes an alias. */
    bool last = strtab_get(&last_at, nm->name) == nm;
    if (last && strcmp(nm->name, irbuf(&l, vb)->name)) {
      IrAlias *al = ANEW(a, IrAlias);
      al->name = nm->name;
      al->buf = vb;
      vec_push(a, &l.m->aliases, al);
    }
    if (done[t->id]) continue;
    done[t->id] = true;
    graph_walk(a, g, t, 0, 0, &walk);
    const char *mark = walk.seen;
    IrFunc *f = new_func(&l, arena_printf(a, "%s.forward", irbuf(&l, vb)->name), true);
    for (int k = 0; k < nt; k++)
      if (mark[k]) add_call(&l, f, fwd[k]);
    if (t->diff) {
      f = new_func(&l, arena_printf(a, "%s.backprop", irbuf(&l, vb)->name), true);
      for (int k = nt - 1; k >= 0; k--)
        if (mark[k]) add_call(&l, f, bwd[k]);
    }
  }
  ir_mark_seqs(a, l.m);
  return l.ok ? l.m : NULL;
}
