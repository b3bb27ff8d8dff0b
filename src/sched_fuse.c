/* sched_fuse.c: fusion across a routine's callees (what and why: sched_fuse.h). */
#include <string.h>

#include "sched_fuse.h"

/* Top-level nests per new function (as lowering's ROUTINE_PART). */
enum { FUSE_PART = 8 };
/* Top-level statements of callees other functions call too (a tensor's forward code,
 * which T.forward calls) the pass may copy into new functions, per module: each copy
 * is more for gcc to compile (a 50-layer MLP's -O2 build took 60% longer with no limit;
 * the moons step copies about 50). */
enum { FUSE_COPY_BUDGET = 128 };
/* Stores per fused nest: checking a fusion scans both nests, so without a bound a run of
 * same-shape nests (a deep model's gradient zeroings) fused in time quadratic in its
 * length (800 layers: 20 s); the moons and bench models' nests hold at most 8. */
enum { FUSE_MAX_STORES = 64 };

/* A map over the routine's loop variables, kept in its resting state (identity, or all
 * -1) between uses: a routine makes thousands of rewrites, and a map as large as the
 * routine for each was most of the compiler's memory on a deep model. */
typedef struct VarMap {
  int *map;
  int cap;
} VarMap;

typedef struct Fuse {
  Arena *a;
  const IrModule *m;
  const SchedOpts *o;
  int nvars;    /* loop variables of the routine's fused code so far */
  int *cost;    /* per function: its statements when other functions call it too, else 0 */
  bool *copied; /* per function: this routine's rewrites already copy it */
  int *budget;  /* FUSE_COPY_BUDGET less what the module's routines copied so far */
  VarMap ren;   /* identity at rest (fuse_pair) */
  VarMap num;   /* -1 at rest (compact_vars) */
} Fuse;

/* vm's map, covering every loop variable so far: identity or all -1 (at rest). */
static int *var_map(Fuse *f, VarMap *vm, bool ident) {
  if (vm->cap <= f->nvars) {
    vm->cap = 2 * f->nvars + 64;
    vm->map = ANEWN(f->a, int, vm->cap);
    for (int v = 0; v < vm->cap; v++) vm->map[v] = ident ? v : -1;
  }
  return vm->map;
}

/* ---- copies with renamed loop variables (map: old variable -> new) ---- */

static Aff aff_ren(Arena *a, const Aff *f, const int *map) {
  Aff r = *f;
  r.t = ANEWN(a, Term, f->n + 1);
  for (int i = 0; i < f->n; i++) {
    r.t[i] = f->t[i];
    if (r.t[i].var >= 0) r.t[i].var = map[r.t[i].var];
  }
  return r;
}

static Access acc_ren(Arena *a, const Access *x, const int *map) {
  Access r = *x;
  r.flat = aff_ren(a, &x->flat, map);
  r.axis = ANEWN(a, Aff, x->rank + 1);
  for (int ax = 0; ax < x->rank; ax++) r.axis[ax] = aff_ren(a, &x->axis[ax], map);
  return r;
}

static IrExpr *expr_ren(Arena *a, const IrExpr *e, const int *map) {
  IrExpr *r = ANEW(a, IrExpr);
  *r = *e;
  if (e->kind == X_LOAD) r->acc = acc_ren(a, &e->acc, map);
  if (e->kind == X_OP)
    for (int i = 0; i < op_info[e->op].arity; i++) r->a[i] = expr_ren(a, e->a[i], map);
  return r;
}

Stmt *sched_stmt_renamed(Arena *a, const Stmt *s, const int *map) {
  Stmt *r = ANEW(a, Stmt);
  *r = *s;
  if (s->kind == S_LOOP) {
    r->var = map[s->var];
    if (s->tile_var >= 0) r->tile_var = map[s->tile_var];
  }
  if (s->kind == S_IF) {
    r->guards = ANEWN(a, Guard, s->nguards + 1);
    for (int g = 0; g < s->nguards; g++) {
      r->guards[g] = s->guards[g];
      r->guards[g].aff = aff_ren(a, &s->guards[g].aff, map);
    }
  }
  if (s->kind == S_STORE) {
    r->dst = acc_ren(a, &s->dst, map);
    r->val = expr_ren(a, s->val, map);
  }
  r->body = (PtrVec){0};
  for (int i = 0; i < s->body.len; i++) vec_push(a, &r->body, sched_stmt_renamed(a, s->body.items[i], map));
  return r;
}

/* ---- accesses ---- */

typedef struct Use {
  const Access *acc;
  bool write;
  int nest; /* which of the two nests being fused */
} Use;

typedef struct Uses {
  Use *u;
  int n, cap;
} Uses;

static void use_add(Arena *a, Uses *us, const Access *acc, bool write, int nest) {
  if (us->n == us->cap) {
    int cap = us->cap ? 2 * us->cap : 32;
    Use *nu = ANEWN(a, Use, cap);
    if (us->n) memcpy(nu, us->u, sizeof(Use) * (size_t)us->n);
    us->u = nu, us->cap = cap;
  }
  us->u[us->n++] = (Use){acc, write, nest};
}

static void expr_uses(Arena *a, const IrExpr *e, int nest, Uses *us) {
  if (e->kind == X_LOAD) use_add(a, us, &e->acc, false, nest);
  if (e->kind == X_OP)
    for (int i = 0; i < op_info[e->op].arity; i++) expr_uses(a, e->a[i], nest, us);
}

/* False when s holds something whose accesses are not spelled out (a call, a fill). */
static bool stmt_uses(Arena *a, const Stmt *s, int nest, Uses *us) {
  switch (s->kind) {
  case S_STORE:
    use_add(a, us, &s->dst, true, nest);
    if (s->accum != OP_ARG2) use_add(a, us, &s->dst, false, nest);
    expr_uses(a, s->val, nest, us);
    return true;
  case S_LOOP:
  case S_IF:
    for (int i = 0; i < s->body.len; i++)
      if (!stmt_uses(a, s->body.items[i], nest, us)) return false;
    return true;
  case S_COMMENT: return true;
  default: return false;
  }
}

static bool exact_var(const Aff *f, int var) {
  return !f->off && f->n == 1 && f->t[0].var == var && f->t[0].coef == 1 && !f->t[0].dyn;
}

/* Every use of buf has one same axis index equal to each of vars[0..n): distinct
 * iterations of those loops touch distinct cells of buf. */
static bool partitioned(const Uses *us, int buf, const int *vars, int n) {
  for (int k = 0; k < n; k++) {
    int rank = -1;
    for (int i = 0; i < us->n; i++)
      if (us->u[i].acc->buf == buf) rank = us->u[i].acc->rank;
    bool found = false;
    for (int ax = 0; ax < rank && !found; ax++) {
      found = true;
      for (int i = 0; i < us->n && found; i++)
        if (us->u[i].acc->buf == buf) found = us->u[i].acc->rank > ax && exact_var(&us->u[i].acc->axis[ax], vars[k]);
    }
    if (!found) return false;
  }
  return true;
}

static bool touched_by(const Uses *us, int buf, int nest) {
  for (int i = 0; i < us->n; i++)
    if (us->u[i].acc->buf == buf && us->u[i].nest == nest) return true;
  return false;
}

/* The loops vars[0..n) of two adjacent nests may run both bodies per iteration: every
 * buffer one writes and both touch is partitioned by them. With `par`, every written
 * buffer is partitioned by vars[0] (its iterations may run on separate threads). */
static bool fusable(const Uses *us, const int *vars, int n, bool par) {
  for (int i = 0; i < us->n; i++) {
    const Use *u = &us->u[i];
    if (!u->write) continue;
    if (touched_by(us, u->acc->buf, 1 - u->nest) && !partitioned(us, u->acc->buf, vars, n)) return false;
    if (par && !partitioned(us, u->acc->buf, vars, 1)) return false;
  }
  return true;
}

/* ---- fusing two nests ---- */

static bool has_tiles(const Stmt *s) {
  if (s->kind == S_LOOP && s->tile_var >= 0) return true;
  for (int i = 0; i < s->body.len; i++)
    if (has_tiles(s->body.items[i])) return true;
  return false;
}

/* The loop at depth d (1 = s itself) of s's chain of single-statement loops. */
static Stmt *chain_at(Stmt *s, int d) {
  while (--d > 0) s = s->body.items[0];
  return s;
}

/* How many outer loops p and s have in common (same extents; each but the last a
 * loop whose body is only the next one), their variables in pv and sv. */
static int common_depth(Stmt *p, Stmt *s, int *pv, int *sv) {
  int d = 0;
  while (d < 64 && p->kind == S_LOOP && s->kind == S_LOOP && p->ext == s->ext) {
    pv[d] = p->var, sv[d] = s->var, d++;
    if (p->body.len != 1 || s->body.len != 1) break;
    p = p->body.items[0], s = s->body.items[0];
  }
  return d;
}

/* The depth of a nest whose loops each hold only the next one, the innermost only
 * statements without loops; -1 for any other statement. */
static int nest_depth(const Stmt *s) {
  if (s->kind != S_LOOP) return s->kind == S_STORE || s->kind == S_COMMENT ? 0 : -1;
  if (s->body.len == 1) {
    int d = nest_depth(s->body.items[0]);
    return d < 0 ? -1 : d + 1;
  }
  for (int i = 0; i < s->body.len; i++)
    if (nest_depth(s->body.items[i])) return -1;
  return 1;
}

/* Does s hold at least n stores? (Stops counting there.) */
static bool has_stores(const Stmt *s, int *n) {
  if (s->kind == S_STORE) --*n;
  for (int i = 0; i < s->body.len && *n > 0; i++) has_stores(s->body.items[i], n);
  return *n <= 0;
}

/* Bytes of the distinct buffers the uses touch. */
static long bytes_touched(Fuse *f, const Uses *us) {
  long n = 0;
  for (int i = 0; i < us->n; i++) {
    int b = us->u[i].acc->buf, k = 0;
    while (k < i && us->u[k].acc->buf != b) k++;
    if (k < i) continue;
    const IrBuf *ib = VEC_AT(f->m->bufs, IrBuf, b);
    n += ib->size * (ib->elem == ELEM_F64 ? 8 : 4);
  }
  return n;
}

/* Row fusion: nests of different shapes fused under their d common outer loops only
 * (the max, the shifted exp, its sum and the division of a softmax, per row). Worth it
 * where the data goes past L2 while one iteration's share stays in it: each pass then
 * finds the row its predecessor left in cache, not in L3 or memory. Small nests stay
 * apart: fused, a reduction nest followed by pointwise code or a fill before a
 * reduction gave loops of several inner loops that gcc vectorized worse (the batch-10
 * MLP step 15% slower). A nest with partial sums keeps its summed loop inside (deeper
 * than d), where the schedule still gives it the sums (schedule.c sched_rows). Not for
 * the GPU: its threads map a nest's whole iteration space. */
enum { ROW_MIN_BYTES = 2 << 20, ROW_MAX_BYTES = 256 << 10 };

static bool row_fusable(Fuse *f, Stmt *p, int pp, Stmt *s, int ps, int d, const Uses *us, Stmt *before) {
  if (f->o->gpu || d >= 64) return false;
  /* p is a kernel's epilogue (mark_epilogues): better there, while the cells are in L2 */
  if (before && sched_epilogue_ok(f->a, f->m, f->o, before, p)) return false;
  if (((pp & SCHED_SUMS) && nest_depth(p) >= 0 && nest_depth(p) <= d) || ((ps & SCHED_SUMS) && nest_depth(s) >= 0 && nest_depth(s) <= d))
    return false;
  long iters = 1;
  for (int k = 1; k <= d; k++) {
    const Stmt *l = chain_at(p, k);
    if (l->dext || l->ext < 1) return false;
    iters *= l->ext;
  }
  long bytes = bytes_touched(f, us);
  return bytes >= ROW_MIN_BYTES && bytes / iters <= ROW_MAX_BYTES;
}

static void append_fused(Fuse *f, PtrVec *body, const PtrVec *stmts);

/* p and s (the later nest, after its comments) as one nest, or NULL. pp, ps: the
 * SCHED_* bits of each (SCHED_PAR only at top level); before: the top-level nest before
 * p (NULL: none, or inside a nest). */
static Stmt *fuse_pair(Fuse *f, Stmt *p, int pp, Stmt *s, int ps, const PtrVec *comments, Stmt *before) {
  int pv[64], sv[64];
  if (p->kind != S_LOOP || s->kind != S_LOOP || has_tiles(p) || has_tiles(s) || ((pp | ps) & SCHED_APART)) return NULL;
  int room = FUSE_MAX_STORES;
  if (has_stores(p, &room) || has_stores(s, &room)) return NULL;
  int d = common_depth(p, s, pv, sv);
  if (!d) return NULL;
  /* Nests of the same shape, but for row fusion (row_fusable); partial sums stay apart. */
  bool same = d == nest_depth(p) && d == nest_depth(s);
  if (same && ((pp | ps) & SCHED_SUMS)) return NULL;
  int *map = var_map(f, &f->ren, true);
  for (int k = 0; k < d; k++) map[sv[k]] = pv[k];
  Stmt *s2 = sched_stmt_renamed(f->a, s, map);
  for (int k = 0; k < d; k++) map[sv[k]] = sv[k];
  Uses us = {0};
  if (!stmt_uses(f->a, p, 0, &us) || !stmt_uses(f->a, s2, 1, &us)) return NULL;
  if (!same && !row_fusable(f, p, pp, s, ps, d, &us, before)) return NULL;
  bool par = (pp | ps) & SCHED_PAR;
  if (!fusable(&us, pv, d, par)) return NULL;
  /* p's chain down to depth d, its innermost body followed by s's */
  Stmt *inner = ANEW(f->a, Stmt);
  *inner = *chain_at(p, d);
  inner->body = (PtrVec){0};
  PtrVec pb = chain_at(p, d)->body, rest = *comments;
  for (int i = 0; i < pb.len; i++) vec_push(f->a, &inner->body, pb.items[i]);
  const PtrVec *sb = &chain_at(s2, d)->body;
  for (int i = 0; i < sb->len; i++) vec_push(f->a, &rest, sb->items[i]);
  append_fused(f, &inner->body, &rest);
  for (int k = d - 1; k >= 1; k--) {
    Stmt *l = ANEW(f->a, Stmt);
    *l = *chain_at(p, k);
    l->body = (PtrVec){0};
    vec_push(f->a, &l->body, inner);
    inner = l;
  }
  inner->parallel = par;
  return inner;
}

/* body += stmts, the first nest of stmts fused with the last statement of body when
 * legal (the comments before it go inside). */
static void append_fused(Fuse *f, PtrVec *body, const PtrVec *stmts) {
  int first = 0;
  while (first < stmts->len && ((Stmt *)stmts->items[first])->kind == S_COMMENT) first++;
  Stmt *fused = NULL;
  if (body->len && first < stmts->len) {
    PtrVec comments = {0};
    for (int i = 0; i < first; i++) vec_push(f->a, &comments, stmts->items[i]);
    Stmt *p = body->items[body->len - 1], *s = stmts->items[first];
    if (p->kind == S_LOOP && s->kind == S_LOOP) /* inner loops run serially: no SCHED_PAR */
      fused = fuse_pair(f, p, sched_nest_plan(f->a, f->m, f->o, p) & ~SCHED_PAR, s, sched_nest_plan(f->a, f->m, f->o, s) & ~SCHED_PAR,
                        &comments, NULL);
  }
  if (fused) body->items[body->len - 1] = fused;
  for (int i = fused ? first + 1 : 0; i < stmts->len; i++) vec_push(f->a, body, stmts->items[i]);
}

/* ---- the routine's statement list ---- */

/* A top-level statement, and where it came from: statement idx of function `from`,
 * unchanged and in its place (from < 0: rewritten or moved). */
typedef struct Item {
  Stmt *s;
  int from, idx;
} Item;

typedef struct Items {
  Item *it;
  int n;
} Items;

static bool item_is_comment(const Item *it) { return it->s->kind == S_COMMENT; }

/* Is s `fill B v`, or a nest storing a constant in every cell of B once? *buf: B.
 * (No allocation: sink_fill asks this of every statement it passes, and a routine's
 * fills pass most of it.) */
static bool is_fill(Fuse *f, Stmt *s, int *buf, double *value) {
  if (s->kind == S_FILL) {
    *buf = s->buf, *value = s->value;
    return true;
  }
  Stmt *st;
  if ((s->kind != S_LOOP && s->kind != S_STORE) || !sched_each_cell_once(s, f->m, &st) || st->accum != OP_ARG2 || st->val->kind != X_CONST)
    return false;
  *buf = st->dst.buf, *value = st->val->value;
  return true;
}

/* The fill s is (is_fill), as a `fill B v` statement. */
static Stmt *as_fill(Fuse *f, Stmt *s, int buf, double value) {
  if (s->kind == S_FILL) return s;
  Stmt *r = ANEW(f->a, Stmt);
  r->kind = S_FILL;
  r->buf = buf;
  r->value = value;
  return r;
}

/* The fill as a nest over B's axes (memory order; size-1 axes get no loop), or NULL for a
 * single cell. Its loop variables are new. */
static Stmt *fill_nest(Fuse *f, const Stmt *fill) {
  const IrBuf *b = VEC_AT(f->m->bufs, IrBuf, fill->buf);
  Stmt *st = ANEW(f->a, Stmt);
  st->kind = S_STORE;
  st->accum = OP_ARG2;
  st->what = arena_printf(f->a, "%s =: %.9g", b->name, fill->value);
  st->val = ANEW(f->a, IrExpr);
  st->val->kind = X_CONST;
  st->val->value = fill->value;
  st->dst.buf = b->id;
  st->dst.rank = b->rank;
  st->dst.axis = ANEWN(f->a, Aff, b->rank + 1);
  st->dst.flat.t = ANEWN(f->a, Term, b->rank + 1);
  int vars[64], nl = 0;
  long stride = 1;
  for (int ax = b->rank - 1; ax >= 0; stride *= b->dims[ax], ax--) {
    if (b->dims[ax] <= 1) continue;
    if (nl == 64) return NULL;
    int v = vars[nl++] = f->nvars++;
    st->dst.axis[ax] = (Aff){.n = 1, .t = ANEWN(f->a, Term, 1)};
    st->dst.axis[ax].t[0] = (Term){.var = v, .coef = 1};
    st->dst.flat.t[st->dst.flat.n++] = (Term){.var = v, .coef = stride};
  }
  if (!nl) return NULL;
  Stmt *r = st;
  for (int k = 0; k < nl; k++) { /* vars[0] is the innermost axis */
    Stmt *l = ANEW(f->a, Stmt);
    l->kind = S_LOOP;
    l->var = vars[k];
    l->tile_var = -1;
    for (int ax = 0; ax < b->rank; ax++)
      if (st->dst.axis[ax].n && st->dst.axis[ax].t[0].var == vars[k]) l->ext = b->dims[ax];
    vec_push(f->a, &l->body, r);
    r = l;
  }
  return r;
}

/* May the rewrite change items a and b (NULL: none)? Charges the copies of their
 * shared callees to the budget when it holds them. */
static bool claim(Fuse *f, const Item *a, const Item *b) {
  int ca = a && a->from >= 0 && !f->copied[a->from] ? a->from : -1;
  int cb = b && b->from >= 0 && !f->copied[b->from] && b->from != ca ? b->from : -1;
  int need = (ca >= 0 ? f->cost[ca] : 0) + (cb >= 0 ? f->cost[cb] : 0);
  if (need > *f->budget) return false;
  *f->budget -= need;
  if (ca >= 0) f->copied[ca] = true;
  if (cb >= 0) f->copied[cb] = true;
  return true;
}

/* ---- sinking fills ----
 *
 * Each fill asks which statement first touches its buffer after it. Scanning for it
 * was quadratic in the routine's length: a deep model's gradient zeroings each scanned
 * the backward pass (1000 layers, 43K statements: 6 s). The answer now comes from lists
 * made once: per buffer, the statements that might read or write it, in routine order,
 * and the statements that might touch any buffer (calls, kernels). Sinking keeps those
 * orders: a fill moves down to just before the first statement touching its buffer, so
 * it passes none of its buffer's statements and no call or kernel, and it touches no
 * other buffer. So an item's number in the first layout (its id) orders it against
 * every statement of its buffer's list and against every call or kernel. The list
 * itself is linked by id: a move or removal does not shift what follows. */
typedef struct Sink {
  Item *it;         /* by id: the item (rewritten in place) */
  int n, head;      /* ids; the first item now (-1: none) */
  int *next, *prev; /* by id: the neighbours now (-1: none) */
  int *fill;        /* by id: the buffer it fills (is_fill), or -1 */
  int *at;          /* by id, for a fill: its place in touch[] */
  bool *gone;       /* by id: removed */
  int *start;       /* per buffer b: its statements are touch[start[b] .. start[b + 1]) */
  int *touch;       /* ids, in routine order within each buffer */
  int *all, nall;   /* ids of the calls and kernels, in order */
  int *work, nwork; /* ids of the statements neither fills nor comments, in order */
  int *key;         /* by id: 2 id, or for a moved fill (and its comment) 2 t - 1 where t
                       is the item its last move put it before */
} Sink;

/* Adds each buffer s might touch, once per item (seen[b] == id: added), to
 * k->touch (when filling) or counts it in k->start[b + 1]; *all: s might touch any. */
typedef struct Toucher {
  Sink *k;
  int id, *seen, *pos;
  bool fill_in, all;
} Toucher;

static void add_touch(int b, void *arg) {
  Toucher *t = arg;
  if (t->seen[b] == t->id) return;
  t->seen[b] = t->id;
  if (!t->fill_in) {
    t->k->start[b + 1]++;
    return;
  }
  int x = t->pos[b]++;
  t->k->touch[x] = t->id;
  if (t->k->fill[t->id] == b) t->k->at[t->id] = x;
}

/* The buffers s might read or write (a call or a kernel: any). */
static void collect_touches(const Stmt *s, Toucher *t) {
  switch (s->kind) {
  case S_STORE:
    add_touch(s->dst.buf, t);
    sched_each_load(s->val, add_touch, t);
    return;
  case S_FILL: add_touch(s->buf, t); return;
  case S_CALL:
  case S_KERNEL: t->all = true; return;
  case S_PREFETCH:
  case S_FENCE: return;
  default:
    for (int i = 0; i < s->body.len; i++) collect_touches(s->body.items[i], t);
  }
}

/* Two walks over the items: count per buffer, then place the ids. */
static void sink_lists(Fuse *f, Sink *k) {
  int nb = f->m->bufs.len;
  k->start = ANEWN(f->a, int, nb + 2);
  int *seen = ANEWN(f->a, int, nb + 1), *pos = ANEWN(f->a, int, nb + 1);
  for (int pass = 0; pass < 2; pass++) {
    for (int b = 0; b < nb; b++) seen[b] = -1;
    if (pass) {
      for (int b = 0; b < nb; b++) k->start[b + 1] += k->start[b];
      for (int b = 0; b < nb; b++) pos[b] = k->start[b];
      k->touch = ANEWN(f->a, int, k->start[nb] + 1);
    }
    k->nall = 0;
    for (int id = 0; id < k->n; id++) {
      Toucher t = {k, id, seen, pos, pass == 1, false};
      collect_touches(k->it[id].s, &t);
      if (t.all && pass) k->all[k->nall] = id;
      k->nall += t.all;
    }
    if (!pass) k->all = ANEWN(f->a, int, k->nall + 1);
  }
}

static bool sink_comment(const Sink *k, int id) { return id >= 0 && item_is_comment(&k->it[id]); }

static Sink sink_make(Fuse *f, Items *l) {
  Sink k = {.it = l->it, .n = l->n, .head = l->n ? 0 : -1};
  k.next = ANEWN(f->a, int, k.n + 1), k.prev = ANEWN(f->a, int, k.n + 1);
  k.fill = ANEWN(f->a, int, k.n + 1), k.at = ANEWN(f->a, int, k.n + 1);
  k.gone = ANEWN(f->a, bool, k.n + 1);
  k.work = ANEWN(f->a, int, k.n + 1), k.key = ANEWN(f->a, int, k.n + 1);
  for (int id = 0; id < k.n; id++) {
    double v;
    k.next[id] = id + 1 < k.n ? id + 1 : -1;
    k.prev[id] = id - 1;
    k.key[id] = 2 * id;
    if (!is_fill(f, k.it[id].s, &k.fill[id], &v)) k.fill[id] = -1;
    if (k.fill[id] < 0 && !sink_comment(&k, id)) k.work[k.nwork++] = id;
  }
  sink_lists(f, &k);
  return k;
}

static void sink_unlink(Sink *k, int id) {
  int p = k->prev[id], n = k->next[id];
  if (p >= 0) k->next[p] = n;
  else k->head = n;
  if (n >= 0) k->prev[n] = p;
}

static void sink_insert_before(Sink *k, int id, int at) {
  int p = k->prev[at];
  k->prev[id] = p, k->next[id] = at, k->prev[at] = id;
  if (p >= 0) k->next[p] = id;
  else k->head = id;
}

/* The first statement after fill u that might touch its buffer b (-1: none); *x: its
 * place in touch[] when it is in b's list. */
static int first_toucher(const Sink *k, int u, int b, int *x) {
  int v = -1;
  for (*x = k->at[u] + 1; *x < k->start[b + 1]; ++*x)
    if (!k->gone[v = k->touch[*x]]) break;
    else v = -1;
  int lo = 0, hi = k->nall; /* the first call or kernel after u */
  while (lo < hi) {
    int mid = (lo + hi) / 2;
    if (k->all[mid] > u) hi = mid;
    else lo = mid + 1;
  }
  int w = lo < k->nall ? k->all[lo] : -1;
  if (w >= 0 && (v < 0 || w < v)) {
    *x = -1;
    return w;
  }
  return v;
}

/* Is there a statement other than a fill or a comment after u and before `to` (an item
 * that never moved)? Such statements never move: they stand in id order, and u stands
 * just before the item its last move put it before (key). Scanning the items between
 * was quadratic in a run of fills (a deep model's gradient zeroings). */
static bool work_between(const Sink *k, int u, int to) {
  int lo = 0, hi = k->nwork;
  while (lo < hi) {
    int mid = (lo + hi) / 2;
    if (2 * k->work[mid] > k->key[u]) hi = mid;
    else lo = mid + 1;
  }
  while (lo < k->nwork && k->fill[k->work[lo]] >= 0) lo++; /* a merge made it a fill */
  return lo < k->nwork && 2 * k->work[lo] < k->key[to];
}

/* A constant fill u is dropped when the first statement touching its buffer
 * overwrites every cell (or accumulates into every cell once, and becomes an
 * overwrite), else moved down to that statement. Returns whether u stays. */
static bool sink_fill(Fuse *f, Sink *k, int u) {
  int buf = k->fill[u], x;
  if (buf < 0) return true;
  int j = first_toucher(k, u, buf, &x);
  if (j < 0) return true;
  Item *it = k->it;
  double value;
  is_fill(f, it[u].s, &buf, &value);
  Stmt *next = it[j].s, *st, *merged = NULL;
  bool dead = k->fill[j] == buf;
  if (!dead && sched_each_cell_once(next, f->m, &st) && st->dst.buf == buf) {
    if (st->accum == OP_ARG2) dead = true; /* sched_each_cell_once: it does not read B */
    else merged = sched_fill_nest(f->a, f->m, as_fill(f, it[u].s, buf, value), next);
  }
  /* the fill's comment (its assignment) goes with it */
  int c = sink_comment(k, k->prev[u]) ? k->prev[u] : -1;
  if (dead || merged) {
    if (!claim(f, &it[u], merged ? &it[j] : NULL)) return true;
    if (merged) { /* the same buffers (sched_fill_nest); now perhaps a fill of buf */
      double v;
      it[j] = (Item){merged, -1, 0};
      int nb;
      k->fill[j] = is_fill(f, merged, &nb, &v) && x >= 0 ? nb : -1;
      k->at[j] = x;
    }
    sink_unlink(k, u), k->gone[u] = true;
    if (c >= 0) sink_unlink(k, c), k->gone[c] = true;
    return false;
  }
  int to = j; /* before the comment of j */
  if (k->prev[j] != u && sink_comment(k, k->prev[j])) to = k->prev[j];
  /* Only past real work: two fills (with their comments) before the same statement
   * would otherwise swap places for ever (sink_fills meets each again). */
  bool past_work = work_between(k, u, to);
  if (!past_work) return true;
  /* landing inside a callee's statements copies that callee too */
  if (!claim(f, &it[u], it[to].idx ? &it[to] : NULL)) return true;
  it[u] = (Item){as_fill(f, it[u].s, buf, value), -1, 0};
  k->key[u] = k->key[to] - 1;
  sink_unlink(k, u);
  if (c >= 0) {
    it[c].from = -1;
    k->key[c] = k->key[to] - 1;
    sink_unlink(k, c);
    sink_insert_before(k, c, to);
  }
  sink_insert_before(k, u, to);
  return false;
}

/* Items in the order the sinking left them. */
static void sink_fills(Fuse *f, Items *l) {
  Sink k = sink_make(f, l);
  for (int u = k.head; u >= 0;) {
    int after = k.next[u]; /* a fill moved further down is met again there */
    bool commented = sink_comment(&k, k.prev[u]);
    if (sink_fill(f, &k, u)) u = k.next[u];
    else u = commented && !sink_comment(&k, after) ? k.next[after] : after; /* its comment went too */
  }
  Item *out = ANEWN(f->a, Item, l->n + 1);
  l->n = 0;
  for (int u = k.head; u >= 0; u = k.next[u]) out[l->n++] = k.it[u];
  l->it = out;
}

/* A fill the next nest's kernel takes (sched_fill_into_kernel): left for it, not fused
 * into the nest before (a fused fill is one more pass over B, and the kernel then
 * reads B back). */
static bool kernel_takes(Fuse *f, const Items *l, int i) {
  if (l->it[i].s->kind != S_FILL) return false;
  int j = i + 1;
  while (j < l->n && item_is_comment(&l->it[j])) j++;
  return j < l->n && l->it[j].s->kind == S_LOOP && sched_fill_into_kernel(f->a, f->m, f->o, l->it[i].s, l->it[j].s);
}

/* Fuses each nest (or fill) with the previous one where legal; comments between them go
 * into the fused nest. */
static void fuse_items(Fuse *f, Items *l) {
  int out = 0, last = -1, prev = -1; /* last: the previous non-comment item in out; prev: the one before it */
  for (int i = 0; i < l->n; i++) {
    Item it = l->it[i];
    Stmt *fused = NULL;
    if (!item_is_comment(&it) && last >= 0 && !kernel_takes(f, l, i)) {
      Stmt *p = l->it[last].s, *s = it.s;
      Stmt *pn = p->kind == S_FILL ? fill_nest(f, p) : p, *sn = s->kind == S_FILL ? fill_nest(f, s) : s;
      if (pn && sn) {
        PtrVec comments = {0};
        for (int k = last + 1; k < out; k++) vec_push(f->a, &comments, l->it[k].s);
        fused = fuse_pair(f, pn, sched_nest_plan(f->a, f->m, f->o, pn), sn, sched_nest_plan(f->a, f->m, f->o, sn), &comments,
                          prev >= 0 && l->it[prev].s->kind == S_LOOP ? l->it[prev].s : NULL);
        if (fused && !claim(f, &l->it[last], &it)) fused = NULL;
      }
    }
    if (fused) {
      l->it[last] = (Item){fused, -1, 0};
      out = last + 1;
      continue;
    }
    if (!item_is_comment(&it)) prev = last, last = out;
    l->it[out++] = it;
  }
  l->n = out;
}

/* A nest the schedule makes a kernel, then a comment and a pointwise nest on its result
 * (bias + activation): both leave their callees, so that they end up next to each other
 * in one new function, where the schedule fuses the second into the kernel's epilogue
 * (sched_fuse_epilogue). */
static void mark_epilogues(Fuse *f, Items *l) {
  for (int i = 0; i + 2 < l->n; i++) {
    Item *k = &l->it[i], *c = &l->it[i + 1], *n = &l->it[i + 2];
    if (k->s->kind != S_LOOP || !item_is_comment(c) || n->s->kind != S_LOOP) continue;
    if (!sched_epilogue_ok(f->a, f->m, f->o, k->s, n->s) || !claim(f, k, n)) continue;
    k->from = n->from = -1;
    i += 2;
  }
}

/* ---- the routine, rebuilt ---- */

/* The routine's callees' statements in call order, loop variables renumbered apart. */
static Items flatten(Fuse *f, const IrFunc *r) {
  int n = 0;
  for (int i = 0; i < r->body.len; i++) {
    const Stmt *c = r->body.items[i];
    for (int k = 0; c->kind == S_CALL && k < c->ncalls; k++) n += VEC_AT(f->m->funcs, IrFunc, c->callee + k)->body.len;
  }
  Items l = {ANEWN(f->a, Item, n + 1), 0};
  for (int i = 0; i < r->body.len; i++) {
    const Stmt *c = r->body.items[i];
    for (int k = 0; c->kind == S_CALL && k < c->ncalls; k++) {
      const IrFunc *g = VEC_AT(f->m->funcs, IrFunc, c->callee + k);
      int *map = ANEWN(f->a, int, g->nvars + 1);
      for (int v = 0; v < g->nvars; v++) map[v] = f->nvars + v;
      f->nvars += g->nvars;
      for (int s = 0; s < g->body.len; s++) l.it[l.n++] = (Item){sched_stmt_renamed(f->a, g->body.items[s], map), g->id, s};
    }
  }
  return l;
}

/* Does l[i..] hold all of function `from`'s statements, unchanged and in order? */
static bool whole_callee(const IrModule *m, const Items *l, int i) {
  int from = l->it[i].from;
  if (from < 0) return false;
  int len = VEC_AT(m->funcs, IrFunc, from)->body.len;
  if (i + len > l->n) return false;
  for (int k = 0; k < len; k++)
    if (l->it[i + k].from != from || l->it[i + k].idx != k) return false;
  return true;
}

static void number_loops(const Stmt *s, int *map, int *n) {
  if (s->kind == S_LOOP && map[s->var] < 0) map[s->var] = (*n)++;
  for (int i = 0; i < s->body.len; i++) number_loops(s->body.items[i], map, n);
}

static void unnumber_loops(const Stmt *s, int *map) {
  if (s->kind == S_LOOP) map[s->var] = -1;
  for (int i = 0; i < s->body.len; i++) unnumber_loops(s->body.items[i], map);
}

/* The part's loop variables renumbered from 0 in order of appearance: each function
 * declares only the variables it uses. */
static void compact_vars(Fuse *f, IrFunc *p) {
  int *map = var_map(f, &f->num, false), n = 0;
  PtrVec old = p->body;
  p->body = (PtrVec){0};
  for (int i = 0; i < old.len; i++) number_loops(old.items[i], map, &n);
  for (int i = 0; i < old.len; i++) vec_push(f->a, &p->body, sched_stmt_renamed(f->a, old.items[i], map));
  for (int i = 0; i < old.len; i++) unnumber_loops(old.items[i], map);
  p->nvars = n;
}

static IrFunc *new_part(Fuse *f, IrModule *r, const IrFunc *rt, int *nparts) {
  IrFunc *p = ANEW(f->a, IrFunc);
  p->id = r->funcs.len;
  p->name = arena_printf(f->a, "%s.fuse%d", rt->name, (*nparts)++);
  vec_push(f->a, &r->funcs, p);
  return p;
}

/* The routine calling whole unchanged callees and new functions holding the rest. */
static IrFunc *regroup(Fuse *f, IrModule *r, const IrFunc *rt, const Items *l) {
  IrFunc *nr = ANEW(f->a, IrFunc);
  *nr = *rt;
  nr->body = (PtrVec){0};
  IrFunc *part = NULL;
  int nparts = 0, nests = 0;
  for (int i = 0; i < l->n;) {
    if (whole_callee(f->m, l, i)) {
      ir_add_call(f->a, &nr->body, l->it[i].from);
      i += VEC_AT(f->m->funcs, IrFunc, l->it[i].from)->body.len;
      part = NULL;
      continue;
    }
    if (!part || (nests >= FUSE_PART && !item_is_comment(&l->it[i]))) {
      part = new_part(f, r, rt, &nparts);
      ir_add_call(f->a, &nr->body, part->id);
      nests = 0;
    }
    vec_push(f->a, &part->body, l->it[i].s);
    nests += !item_is_comment(&l->it[i]);
    i++;
  }
  for (int i = 0; i < nr->body.len; i++) {
    const Stmt *c = nr->body.items[i];
    for (int k = 0; k < c->ncalls; k++)
      if (c->callee + k >= f->m->funcs.len) compact_vars(f, VEC_AT(r->funcs, IrFunc, c->callee + k));
  }
  return nparts ? nr : NULL;
}

/* A routine: an exported seq named by an identifier (T.forward and T.backprop are
 * left alone: their callees' code is shared by every one of them). Routines over
 * dynamic sizes keep their plain loops, as the rest of the schedule does. */
static bool is_routine(const IrModule *m, const IrFunc *fn) {
  if (!fn->seq || strchr(fn->name, '.')) return false;
  for (int i = 0; i < fn->body.len; i++) {
    const Stmt *c = fn->body.items[i];
    for (int k = 0; c->kind == S_CALL && k < c->ncalls; k++)
      if (ir_stmts_dynamic(m, &VEC_AT(m->funcs, IrFunc, c->callee + k)->body)) return false;
  }
  return true;
}

/* Adds to calls[F] the calls of F in body: +1 at each run's first function, -1 past its
 * last (call_counts sums them up), so counting stays linear in the runs. */
static void count_runs(const PtrVec *body, int *calls) {
  for (int i = 0; i < body->len; i++) {
    const Stmt *s = body->items[i];
    if (s->kind == S_CALL) calls[s->callee]++, calls[s->callee + s->ncalls]--;
    count_runs(&s->body, calls);
  }
}

static void call_counts(int *calls, int n) {
  for (int i = 1; i < n; i++) calls[i] += calls[i - 1];
}

/* Per function of m, how many calls of it the functions of m make. */
static int *module_calls(Arena *a, const IrModule *m) {
  int n = m->funcs.len, *calls = ANEWN(a, int, n + 1);
  for (int i = 0; i < n; i++) count_runs(&VEC_AT(m->funcs, IrFunc, i)->body, calls);
  call_counts(calls, n);
  return calls;
}

/* Functions no one calls any more (a routine's old parts) lose their code. */
static void drop_dead(Arena *a, IrModule *r) {
  int *called = module_calls(a, r);
  for (int i = 0; i < r->funcs.len; i++) {
    IrFunc *fn = VEC_AT(r->funcs, IrFunc, i);
    if (fn->exported || called[i] || !fn->body.len) continue;
    IrFunc *e = ANEW(a, IrFunc);
    *e = *fn;
    e->body = (PtrVec){0};
    r->funcs.items[i] = e;
  }
}

/* Per function, its top-level statements (comments aside) when a function other than
 * routine rt calls it too (all: module_calls), else 0: what copying it costs. */
static int *copy_costs(Arena *a, const IrModule *m, const int *all, const IrFunc *rt) {
  int n = m->funcs.len, *mine = ANEWN(a, int, n + 1), *cost = ANEWN(a, int, n + 1);
  count_runs(&rt->body, mine);
  call_counts(mine, n);
  for (int i = 0; i < n; i++) {
    const PtrVec *body = &VEC_AT(m->funcs, IrFunc, i)->body;
    for (int k = 0; all[i] > mine[i] && k < body->len; k++) cost[i] += ((Stmt *)body->items[k])->kind != S_COMMENT;
  }
  return cost;
}

IrModule *sched_fuse_routines(Arena *a, const IrModule *m, const SchedOpts *o) {
  IrModule *r = ANEW(a, IrModule);
  *r = *m;
  r->funcs = (PtrVec){0};
  for (int i = 0; i < m->funcs.len; i++) vec_push(a, &r->funcs, m->funcs.items[i]);
  bool changed = false;
  int budget = FUSE_COPY_BUDGET, *all = NULL;
  for (int i = 0; i < m->funcs.len; i++) {
    const IrFunc *fn = VEC_AT(m->funcs, IrFunc, i);
    if (!is_routine(m, fn)) continue;
    if (!all) all = module_calls(a, m);
    Fuse f = {.a = a, .m = m, .o = o, .cost = copy_costs(a, m, all, fn), .copied = ANEWN(a, bool, m->funcs.len + 1),
              .budget = &budget};
    Items l = flatten(&f, fn);
    sink_fills(&f, &l);
    fuse_items(&f, &l);
    mark_epilogues(&f, &l);
    IrFunc *nr = regroup(&f, r, fn, &l);
    if (nr) r->funcs.items[i] = nr, changed = true;
  }
  if (changed) drop_dead(a, r);
  return r;
}
