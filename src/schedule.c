/* schedule.c: the schedule pass (decisions and their reasons: schedule.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sched_fuse.h"

/* Register tile and cache blocks (elements). MR x NR = 6 x 2 vectors keeps 12 vector
 * accumulators plus 2 B vectors and an A broadcast within 16 registers. A kc x nr
 * panel of B (16 KiB for f32) stays in L1 across the rows of an mc x kc block of A
 * (72 KiB, L2); the packed kc x nc block of B (256 KiB) sits in L2/L3. */
enum { MR = 6, KC = 256, MC = 72, NC_BYTES = 512 * 1024 };
/* Below this many multiply-adds packing costs more than the register tile saves. */
enum { KERNEL_MIN_WORK = 32768 };
/* An A of at most this many bytes is read in place (L1 is 32-48 KiB). */
enum { A_IN_PLACE_BYTES = 32768 };
/* A reduction shorter than this gains nothing from partial sums. */
enum { REDUCE_MIN = 32 };
/* Points (multiply-adds for a kernel) below which waking threads costs more than
 * splitting saves. */
enum { PAR_MIN_POINTS = 1 << 16, PAR_MIN_WORK = 1 << 18 };
/* What a dynamic extent counts for in those sums (a batch, typically): enough for a
 * reduction's partial sums; a parallel loop needs at least this many iterations per
 * dynamic factor in its nest to reach PAR_MIN_POINTS. */
enum { DYN_EXT_GUESS = IR_DYN_EXT_GUESS };

long aff_coef(const Aff *f, int var) {
  for (int i = 0; i < f->n; i++)
    if (f->t[i].var == var) return f->t[i].coef;
  return 0;
}

Aff aff_drop(Arena *a, const Aff *f, const int *vars, int n) {
  Aff r = {.off = f->off, .t = ANEWN(a, Term, f->n + 1)};
  for (int i = 0; i < f->n; i++) {
    bool drop = false;
    for (int k = 0; k < n; k++) drop |= f->t[i].var == vars[k];
    if (!drop) r.t[r.n++] = f->t[i];
  }
  return r;
}

static bool aff_same(const Aff *a, const Aff *b) {
  if (a->off != b->off || a->n != b->n) return false;
  for (int i = 0; i < a->n; i++)
    if (a->t[i].var != b->t[i].var || a->t[i].coef != b->t[i].coef || a->t[i].dyn != b->t[i].dyn) return false;
  return true;
}

/* A loop's extent for the thresholds: a dynamic one counts as DYN_EXT_GUESS. */
static long ext_guess(const Stmt *lp) { return lp->dext ? lp->ext * DYN_EXT_GUESS : lp->ext; }

static bool has_symbol(const Access *acc) {
  for (int i = 0; i < acc->flat.n; i++)
    if (acc->flat.t[i].var < 0) return true;
  for (int ax = 0; ax < acc->rank; ax++)
    for (int i = 0; i < acc->axis[ax].n; i++)
      if (acc->axis[ax].t[i].var < 0) return true;
  return false;
}

/* Every axis index of acc stays in its extent over the loops (var_ext per variable):
 * the kernel reads and writes without guards or checks. */
static bool in_bounds(const Access *acc, const IrModule *m, const long *var_ext, const Guard *g, int ng) {
  const IrBuf *b = VEC_AT(m->bufs, IrBuf, acc->buf);
  for (int ax = 0; ax < acc->rank; ax++) {
    bool guarded = false; /* a guard keeps this axis in range */
    for (int k = 0; k < ng; k++) guarded |= g[k].ext == b->dims[ax] && aff_same(&g[k].aff, &acc->axis[ax]);
    if (guarded) continue;
    long lo, hi;
    aff_range(&acc->axis[ax], var_ext, &lo, &hi);
    if (lo < 0 || hi >= b->dims[ax]) return false;
  }
  return true;
}

/* The loops of a perfect nest, outermost first, and the statement inside them. */
static Stmt *perfect_nest(Stmt *nest, Stmt **loops, int *nloops) {
  *nloops = 0;
  Stmt *s = nest;
  while (s->kind == S_LOOP) {
    if (*nloops >= 64 || s->body.len != 1) return NULL;
    loops[(*nloops)++] = s;
    s = s->body.items[0];
  }
  return s;
}

/* Is nest a perfect nest (each loop holding only the next)? */
static bool is_perfect(Stmt *nest) {
  Stmt *loops[64];
  int nl;
  return perfect_nest(nest, loops, &nl) != NULL;
}

static bool is_tile_controller(Stmt **loops, int n, int var) {
  for (int i = 0; i < n; i++)
    if (loops[i]->tile_var == var) return true;
  return false;
}

static bool owns_axis(const Access *acc, int var);

static bool is_m_var(const Contraction *c, int v) {
  for (int t = 0; t < c->nm; t++)
    if (c->mvar[t] == v) return true;
  return false;
}

/* The M variables: every loop variable of the target that only A uses, slowest (largest
 * target stride) first. The slowest stays an outer loop when it owns a target axis and
 * the others leave enough rows: the outer loop can then run on threads. */
static void pick_m(Contraction *c, Stmt **loops, int nl, const Access *d, const Access *A, const Access *B) {
  Stmt *cand[64];
  int nc = 0;
  for (int l = 0; l < nl; l++) {
    int v = loops[l]->var;
    if (v != c->j && aff_coef(&d->flat, v) && aff_coef(&A->flat, v) && !aff_coef(&B->flat, v)) {
      int at = nc++;
      while (at > 0 && labs(aff_coef(&d->flat, cand[at - 1]->var)) < labs(aff_coef(&d->flat, v))) cand[at] = cand[at - 1], at--;
      cand[at] = loops[l];
    }
  }
  int first = nc > KERN_MAX_M ? nc - KERN_MAX_M : 0;
  long rest = 1;
  for (int t = first + 1; t < nc; t++) rest *= cand[t]->ext;
  if (nc - first >= 2 && rest >= 256 && owns_axis(d, cand[first]->var)) first++;
  c->nm = 0, c->m = 1;
  for (int t = first; t < nc; t++) {
    c->mvar[c->nm] = cand[t]->var, c->mext[c->nm++] = cand[t]->ext;
    c->m *= cand[t]->ext;
  }
  c->i = c->nm ? c->mvar[c->nm - 1] : -1;
}

/* Inserts loop s into v (n entries) sorted by decreasing key. */
static void insert_desc(Stmt **v, long *key, int *n, Stmt *s, long k) {
  int at = (*n)++;
  while (at > 0 && key[at - 1] < k) v[at] = v[at - 1], key[at] = key[at - 1], at--;
  v[at] = s, key[at] = k;
}

/* The fastest KERN_MAX_M of the loops v (slowest first) as a dimension; the others stay
 * outer loops. Returns the product of their extents. */
static long take_fastest(KDim *d, Stmt **v, int n) {
  long ext = 1;
  d->n = 0;
  for (int t = n > KERN_MAX_M ? n - KERN_MAX_M : 0; t < n; t++) {
    d->var[d->n] = v[t]->var, d->ext[d->n++] = v[t]->ext;
    ext *= v[t]->ext;
  }
  return ext;
}

/* Composite n and k: every target variable only B uses (slowest in the target first)
 * and every variable both operands use and the target does not (slowest in the
 * operands first). */
static bool pick_composite(Contraction *c, Stmt **loops, int nl, const Access *d, const Access *A, const Access *B) {
  Stmt *nv[64], *kv[64];
  long nkey[64], kkey[64];
  int nn = 0, nk = 0;
  for (int l = 0; l < nl; l++) {
    int v = loops[l]->var;
    long cd = labs(aff_coef(&d->flat, v)), ca = labs(aff_coef(&A->flat, v)), cb = labs(aff_coef(&B->flat, v));
    if (cd && cb && !ca) insert_desc(nv, nkey, &nn, loops[l], cd);
    if (!cd && ca && cb) insert_desc(kv, kkey, &nk, loops[l], ca + cb);
  }
  if (!nn || !nk) return false;
  c->n = take_fastest(&c->nd, nv, nn);
  c->kext = take_fastest(&c->kd, kv, nk);
  c->j = c->nd.var[c->nd.n - 1], c->k = c->kd.var[c->kd.n - 1];
  return true;
}

static bool in_dim(const KDim *d, int v) {
  for (int t = 0; t < d->n; t++)
    if (d->var[t] == v) return true;
  return false;
}

static bool aff_uses(const Aff *f, const int *vars, int n) {
  for (int t = 0; t < n; t++)
    if (aff_coef(f, vars[t])) return true;
  return false;
}

/* A guard the kernel can test: on M and outer variables (per row, or around the
 * kernel), or, with composite n and k, on k variables and those of one operand (its
 * packed cells). */
static bool guard_ok(const Contraction *c, const Guard *g, bool composite) {
  bool on_m = aff_uses(&g->aff, c->mvar, c->nm), on_n = aff_uses(&g->aff, c->nd.var, c->nd.n), on_k = aff_uses(&g->aff, c->kd.var, c->kd.n);
  if (!composite) return !on_n && !on_k;
  return on_k ? !(on_m && on_n) : !on_n;
}

/* Picks the role variables: j is the variable of the target with the smallest stride
 * there that only one operand uses (that operand is B), the M variables (pick_m) those
 * of the target only A uses, k the longest variable both operands use and the target
 * does not; composite: several n and k variables (pick_composite). */
static bool pick_roles(Contraction *c, Stmt **loops, int nl, const Access *acc[3], bool composite) {
  const Access *d = acc[0];
  long best = -1;
  c->j = c->i = c->k = -1;
  for (int l = 0; l < nl; l++) {
    int v = loops[l]->var;
    long cd = labs(aff_coef(&d->flat, v));
    bool in1 = aff_coef(&acc[1]->flat, v) != 0, in2 = aff_coef(&acc[2]->flat, v) != 0;
    if (cd && in1 != in2 && (best < 0 || cd < best)) best = cd, c->j = v, c->a_arg = in1 ? 1 : 0;
  }
  if (c->j < 0) return false;
  const Access *A = acc[1 + c->a_arg], *B = acc[2 - c->a_arg];
  pick_m(c, loops, nl, d, A, B);
  if (composite) return c->i >= 0 && pick_composite(c, loops, nl, d, A, B);
  for (int l = 0; l < nl; l++) {
    int v = loops[l]->var;
    bool ind = aff_coef(&d->flat, v) != 0, ina = aff_coef(&A->flat, v) != 0, inb = aff_coef(&B->flat, v) != 0;
    if (!ind && ina && inb && (c->k < 0 || loops[l]->ext > c->kext)) c->k = v, c->kext = loops[l]->ext;
    if (v == c->j) c->n = loops[l]->ext;
  }
  c->nd = (KDim){.n = 1, .var = {c->j}, .ext = {c->n}};
  c->kd = (KDim){.n = 1, .var = {c->k}, .ext = {c->kext}};
  return c->i >= 0 && c->k >= 0;
}

static bool in_guards(const Contraction *c, int v) {
  for (int g = 0; g < c->nguards; g++)
    if (aff_coef(&c->guards[g].aff, v)) return true;
  return false;
}

/* The other reduction variables (in both operands, not in the target, in no guard) that
 * continue the single k variable in both operands' layouts join it as one linear k
 * (KDim.linear): a weight gradient summed over batch and sequence, read as b*S + s in
 * both operands, is one k of B*S instead of a kernel call per b with k = S; an
 * attention projection's heads and widths likewise. */
static void merge_k(Contraction *c, Stmt **loops, int nl, const Access *d, const Access *A, const Access *B) {
  if (c->kd.n != 1 || in_guards(c, c->k)) return;
  Stmt *kv[KERN_MAX_M]; /* slowest first */
  int n = 0;
  for (int l = 0; l < nl; l++)
    if (loops[l]->var == c->k && !loops[l]->dext) kv[n++] = loops[l];
  for (bool grew = n == 1; grew && n < KERN_MAX_M;) {
    grew = false;
    for (int l = 0; l < nl && !grew; l++) {
      Stmt *u = loops[l];
      int v = u->var, slow = kv[0]->var, fast = kv[n - 1]->var;
      if (in_dim(&c->kd, v) || aff_coef(&d->flat, v) || !aff_coef(&A->flat, v) || !aff_coef(&B->flat, v) || in_guards(c, v) || u->dext)
        continue;
      bool above = aff_coef(&A->flat, v) == aff_coef(&A->flat, slow) * kv[0]->ext && aff_coef(&B->flat, v) == aff_coef(&B->flat, slow) * kv[0]->ext;
      bool below = aff_coef(&A->flat, fast) == aff_coef(&A->flat, v) * u->ext && aff_coef(&B->flat, fast) == aff_coef(&B->flat, v) * u->ext;
      if (above) {
        memmove(kv + 1, kv, (size_t)n * sizeof *kv);
        kv[0] = u;
      } else if (below)
        kv[n] = u;
      else
        continue;
      n++;
      c->kd.n = n;
      c->kd.linear = true;
      c->kext = 1;
      for (int t = 0; t < n; t++) c->kd.var[t] = kv[t]->var, c->kd.ext[t] = kv[t]->ext, c->kext *= kv[t]->ext;
      c->k = kv[n - 1]->var;
      grew = true;
    }
  }
}

/* Roles whose guards the kernel can test (guard_ok). */
static bool pick_testable(Contraction *c, Stmt **loops, int nl, const Access *acc[3], bool composite) {
  if (!pick_roles(c, loops, nl, acc, composite)) return false;
  for (int g = 0; g < c->nguards; g++)
    if (!guard_ok(c, &c->guards[g], composite)) return false;
  return true;
}

bool sched_contraction(Stmt *nest, const IrModule *m, Contraction *c) {
  Stmt *loops[64];
  int nl;
  Stmt *st = perfect_nest(nest, loops, &nl);
  memset(c, 0, sizeof *c);
  if (st && st->kind == S_IF && st->body.len == 1) {
    c->nguards = st->nguards;
    c->guards = st->guards;
    st = st->body.items[0];
  }
  if (!st || st->kind != S_STORE || st->accum != OP_ADD) return false;
  const IrExpr *v = st->val;
  if (v->kind != X_OP || v->op != OP_MUL || v->a[0]->kind != X_LOAD || v->a[1]->kind != X_LOAD) return false;
  const Access *acc[3] = {&st->dst, &v->a[0]->acc, &v->a[1]->acc};
  int maxvar = 0;
  for (int l = 0; l < nl; l++) maxvar = loops[l]->var > maxvar ? loops[l]->var : maxvar;
  long *var_ext = calloc((size_t)maxvar + 1, sizeof(long));
  if (!var_ext) return false;
  for (int l = 0; l < nl; l++) var_ext[loops[l]->var] = loops[l]->ext;
  bool ok = true;
  Elem el = VEC_AT(m->bufs, IrBuf, acc[0]->buf)->elem;
  for (int i = 0; i < 3 && ok; i++) {
    ok = !has_symbol(acc[i]) && in_bounds(acc[i], m, var_ext, c->guards, c->nguards) && VEC_AT(m->bufs, IrBuf, acc[i]->buf)->elem == el;
    if (i) ok = ok && acc[i]->buf != acc[0]->buf;
  }
  free(var_ext);
  if (!ok) return false;
  /* Tile loops of a transpose-like nest only split a variable's range: the kernel
   * blocks for itself, so drop them and keep the variables' whole ranges. */
  Stmt *real[64];
  int nr = 0;
  for (int l = 0; l < nl; l++)
    if (!is_tile_controller(loops, nl, loops[l]->var)) real[nr++] = loops[l];
  /* one n and one k variable unless a guard needs several */
  if (!pick_testable(c, real, nr, acc, false) && !pick_testable(c, real, nr, acc, true)) return false;
  c->store = st;
  merge_k(c, real, nr, acc[0], acc[1 + c->a_arg], acc[2 - c->a_arg]);
  for (int l = 0; l < nr; l++) {
    int var = real[l]->var;
    if (!is_m_var(c, var) && !in_dim(&c->nd, var) && !in_dim(&c->kd, var)) c->outer[c->nouter++] = real[l];
  }
  return true;
}

/* ---- rewriting ---- */

static Stmt *copy_loop(Arena *a, const Stmt *lp, Stmt *body) {
  Stmt *n = ANEW(a, Stmt);
  *n = *lp;
  n->body = (PtrVec){0};
  vec_push(a, &n->body, body);
  return n;
}

static Stmt *make_kernel(Arena *a, const IrModule *m, const SchedOpts *o, const Contraction *c) {
  Kernel *k = ANEW(a, Kernel);
  k->store = c->store;
  k->a_arg = c->a_arg;
  k->var[0] = c->i, k->var[1] = c->j, k->var[2] = c->k;
  k->ext[0] = c->m, k->ext[1] = c->n, k->ext[2] = c->kext;
  k->nm = c->nm;
  memcpy(k->mvar, c->mvar, sizeof k->mvar);
  memcpy(k->mext, c->mext, sizeof k->mext);
  int esize = VEC_AT(m->bufs, IrBuf, c->store->dst.buf)->elem == ELEM_F64 ? 8 : 4;
  int vb = o->vec_bytes ? o->vec_bytes : 32;
  /* 12 accumulators in 16 registers (AVX2), 24 in 32 (AVX-512) */
  int MR_ = vb >= 64 ? 2 * MR : MR, KC_ = KC, MC_ = vb >= 64 ? 4 * MR_ : MC;
  /* the packed B block lives on the stack: at most 512 KiB */
  int NC_ = (int)(NC_BYTES / ((long)KC_ * esize)) / (2 * (vb / esize)) * (2 * (vb / esize));
  k->vw = vb / esize;
  k->mr = MR_;
  k->nr = c->n <= k->vw ? k->vw : 2 * k->vw; /* one vector of columns when that is all there is */
  /* Blocks no larger than the problem (rounded up to whole tiles): less scratch. */
  k->kc = c->kext < KC_ ? (int)c->kext : KC_;
  long mt = (c->m + MR_ - 1) / MR_ * MR_, nt = (c->n + k->nr - 1) / k->nr * k->nr;
  k->mc = mt < MC_ ? (int)mt : MC_;
  k->nc = nt < NC_ ? (int)nt : NC_;
  /* A read in place: its packed panel would be read once (one column tile), or A fits
   * in L1 (the small matrices where packing costs as much as the product). */
  k->nd = c->nd, k->kd = c->kd;
  Stmt *s = ANEW(a, Stmt);
  s->kind = S_KERNEL;
  s->kern = k;
  s->what = c->store->what;
  Stmt *inner = s;
  int nif = 0;
  k->row_guards = ANEWN(a, Guard, c->nguards + 1);
  k->a_guards = ANEWN(a, Guard, c->nguards + 1);
  k->b_guards = ANEWN(a, Guard, c->nguards + 1);
  Guard *ifg = ANEWN(a, Guard, c->nguards + 1);
  for (int g = 0; g < c->nguards; g++) {
    const Aff *f = &c->guards[g].aff;
    bool on_m = aff_uses(f, c->mvar, c->nm), on_n = aff_uses(f, c->nd.var, c->nd.n), on_k = aff_uses(f, c->kd.var, c->kd.n);
    if (on_k) { /* bounds A (with m), B (with n), or either (k alone: both read 0) */
      if (!on_n) k->a_guards[k->na_guards++] = c->guards[g];
      if (!on_m) k->b_guards[k->nb_guards++] = c->guards[g];
    } else if (on_m) k->row_guards[k->nrow_guards++] = c->guards[g];
    else ifg[nif++] = c->guards[g];
  }
  k->direct_a = (c->n <= k->nr || c->m * c->kext * esize <= A_IN_PLACE_BYTES) && (c->kd.n == 1 || c->kd.linear) && !k->na_guards &&
                aff_coef(&c->store->val->a[c->a_arg]->acc.flat, c->k) == 1;
  /* composite n whose fastest variable has stride 1: whole tiles never cross its digit */
  bool whole = c->nd.n > 1 && c->nd.ext[c->nd.n - 1] % k->nr == 0;
  bool b_guard_j = false;
  for (int g = 0; g < k->nb_guards; g++) b_guard_j |= aff_coef(&k->b_guards[g].aff, c->j) != 0;
  k->b_runs = whole && !b_guard_j && aff_coef(&c->store->val->a[1 - c->a_arg]->acc.flat, c->j) == 1;
  k->c_runs = whole && aff_coef(&c->store->dst.flat, c->j) == 1;
  if (nif) { /* the guards on outer variables only: around the kernel */
    Stmt *g = ANEW(a, Stmt);
    g->kind = S_IF;
    g->nguards = nif;
    g->guards = ifg;
    vec_push(a, &g->body, s);
    inner = g;
  }
  for (int d = c->nouter - 1; d >= 0; d--) {
    inner = copy_loop(a, c->outer[d], inner);
    inner->tile_var = -1, inner->tile = 0;
  }
  return inner;
}

static bool reads_buf(const IrExpr *e, int buf) {
  if (e->kind == X_LOAD) return e->acc.buf == buf;
  if (e->kind == X_OP)
    for (int i = 0; i < op_info[e->op].arity; i++)
      if (reads_buf(e->a[i], buf)) return true;
  return false;
}

/* The nest with its innermost loop summed in partial sums, or NULL. */
static Stmt *make_reduction(Arena *a, const IrModule *m, Stmt *nest) {
  Stmt *loops[64];
  int nl;
  Stmt *st = perfect_nest(nest, loops, &nl);
  if (!st || !nl || st->kind != S_STORE || st->accum != OP_ADD) return NULL;
  Stmt *in = loops[nl - 1];
  if (in->tile_var >= 0 || ext_guess(in) < REDUCE_MIN || aff_coef(&st->dst.flat, in->var) || reads_buf(st->val, st->dst.buf))
    return NULL;
  Stmt *r = copy_loop(a, in, st);
  r->accs = VEC_AT(m->bufs, IrBuf, st->dst.buf)->elem == ELEM_F64 ? 8 : 16;
  for (int d = nl - 2; d >= 0; d--) r = copy_loop(a, loops[d], r);
  return r;
}

/* ---- fills ---- */

/* The nest writes every cell of its target exactly once: each axis of the target is one
 * loop variable (coefficient 1, offset 0) over the axis' whole extent, each loop
 * variable indexes one axis, and no guard skips a point. */
static bool writes_each_cell_once(Stmt *nest, const IrModule *m, Stmt **store) {
  Stmt *loops[64];
  int nl;
  Stmt *st = perfect_nest(nest, loops, &nl);
  if (!st || st->kind != S_STORE) return false;
  int nreal = 0; /* tile loops only split the range of another loop */
  for (int l = 0; l < nl; l++) nreal += !is_tile_controller(loops, nl, loops[l]->var);
  const IrBuf *b = VEC_AT(m->bufs, IrBuf, st->dst.buf);
  int naxes = 0; /* axes a loop runs over (an axis of size 1 has index 0, no loop) */
  for (int ax = 0; ax < st->dst.rank; ax++) {
    const Aff *f = &st->dst.axis[ax];
    if (b->dims[ax] == 1 && !f->n && !f->off) continue;
    naxes++;
    if (f->off || f->n != 1 || f->t[0].coef != 1 || f->t[0].var < 0) return false;
    bool found = false;
    for (int l = 0; l < nl; l++)
      found |= loops[l]->var == f->t[0].var && loops[l]->ext == b->dims[ax] && !is_tile_controller(loops, nl, loops[l]->var);
    if (!found) return false;
    for (int k = 0; k < ax; k++)
      if (st->dst.axis[k].n && st->dst.axis[k].t[0].var == f->t[0].var) return false;
  }
  if (naxes != nreal) return false;
  *store = st;
  return !reads_buf(st->val, st->dst.buf);
}

/* `fill B v` then a nest accumulating into every cell of B once: the nest overwrites
 * B with accum(v, value), one pass instead of two (same result bit for bit). A nest
 * that overwrites every cell (an injective `=:+`, lower.c) leaves the fill dead. */
static Stmt *fuse_fill(Arena *a, const IrModule *m, const Stmt *fill, Stmt *nest) {
  Stmt *st;
  if (fill->kind != S_FILL || (nest->kind != S_LOOP && nest->kind != S_STORE) || !writes_each_cell_once(nest, m, &st) || st->dst.buf != fill->buf)
    return NULL;
  Stmt *ns = ANEW(a, Stmt);
  *ns = *st;
  if (st->accum != OP_ARG2) {
    IrExpr *v = ANEW(a, IrExpr), *x = ANEW(a, IrExpr);
    v->kind = X_CONST;
    v->value = fill->value;
    x->kind = X_OP;
    x->op = st->accum;
    x->a[0] = v;
    x->a[1] = st->val;
    ns->val = x;
    ns->accum = OP_ARG2;
  }
  Stmt *loops[64];
  int nl;
  perfect_nest(nest, loops, &nl);
  Stmt *r = ns;
  for (int d = nl - 1; d >= 0; d--) r = copy_loop(a, loops[d], r);
  return r;
}

/* ---- transposes ---- */

/* The first load in e whose access walks var contiguously. */
static const Access *contiguous_load(const IrExpr *e, int var) {
  if (e->kind == X_LOAD) return aff_coef(&e->acc.flat, var) == 1 ? &e->acc : NULL;
  if (e->kind == X_OP)
    for (int i = 0; i < op_info[e->op].arity; i++) {
      const Access *r = contiguous_load(e->a[i], var);
      if (r) return r;
    }
  return NULL;
}

/* A group of loops that walk one access as one longer contiguous axis: member 0 at
 * coefficient 1, each next member at the product of the extents before it. */
typedef struct AxisGroup {
  Stmt *m[8];
  int n;
  long span; /* the product of the members' extents */
} AxisGroup;

static bool in_group(const AxisGroup *g, const Stmt *l) {
  for (int i = 0; i < g->n; i++)
    if (g->m[i] == l) return true;
  return false;
}

/* The group of f starting at first, grown by the loops (not in `other`) that continue
 * it until it spans `want` cells: a 16-cell source axis alone reads half a 128-byte tile
 * per source row, two cells of the next source axis make it whole. */
static AxisGroup axis_group(Stmt **r, int nr, const Aff *f, Stmt *first, long want, const AxisGroup *other) {
  AxisGroup g = {.m = {first}, .n = 1, .span = first->ext};
  while (g.span < want && g.n < 8) {
    Stmt *next = NULL;
    for (int l = 0; l < nr && !next; l++)
      if (!in_group(&g, r[l]) && !in_group(other, r[l]) && aff_coef(f, r[l]->var) == g.span) next = r[l];
    if (!next) break;
    g.m[g.n++] = next;
    g.span *= next->ext;
  }
  return g;
}

/* A copy of loop l around body, untiled or (t > 0) tiled by t through controller c. */
static Stmt *group_loop(Arena *a, const Stmt *l, Stmt *body, int t, const Stmt *c) {
  Stmt *r = copy_loop(a, l, body);
  r->tile_var = t > 0 ? c->var : -1;
  r->tile = t > 0 ? t : 0;
  return r;
}

/* The tile of a group's last member for tiles of about `want` cells. */
static long group_tile(const AxisGroup *g, long want) {
  long inner = g->span / g->m[g->n - 1]->ext;
  return (want + inner - 1) / inner;
}

/* A group's members inside body, outermost first, its last member tiled by group_tile
 * (through *ctl, a new tile loop, when that takes more than one tile). */
static Stmt *group_loops(Arena *a, const AxisGroup *g, long want, Stmt *body, Stmt **ctl, int *nvars) {
  long t = group_tile(g, want);
  const Stmt *last = g->m[g->n - 1];
  *ctl = NULL;
  if (t < last->ext) {
    *ctl = ANEW(a, Stmt);
    **ctl = *last;
    (*ctl)->var = last->tile_var >= 0 ? last->tile_var : (*nvars)++; /* lowering's tile loop, if any */
    (*ctl)->ext = (last->ext + t - 1) / t;
    (*ctl)->tile_var = -1, (*ctl)->tile = 0;
  }
  Stmt *r = body;
  for (int i = 0; i < g->n; i++) r = group_loop(a, g->m[i], r, i == g->n - 1 && *ctl ? (int)t : 0, *ctl);
  return r;
}

/* The loop whose variable some load of st walks contiguously, other than p, and that
 * load (which walks p with a stride: a transpose, not a broadcast). */
static Stmt *source_axis(Stmt **r, int nr, const Stmt *st, const Stmt *p, const Access **src) {
  for (int l = nr - 1; l >= 0; l--) {
    const Access *s = r[l] == p ? NULL : contiguous_load(st->val, r[l]->var);
    if (s && labs(aff_coef(&s->flat, p->var)) > 1 && aff_coef(&st->dst.flat, r[l]->var) != 1) {
      *src = s;
      return r[l];
    }
  }
  return NULL;
}

/* A transpose (a nest storing, into each cell of its target once, cells it loads
 * through another layout; or a nest lowering tiled as one: tile(q) tile(p) q p) as
 * tiles: its target-contiguous axis p, grown into a group of loops that continue it in
 * the target (axis_group) up to 64 bytes, tiled by 64 bytes; the source's q grown up to
 * 128 bytes, tiled by 128; the tile loop of p's group and the other loops by decreasing
 * source stride (a reversal: the tile loop outermost), then the tile loop of q's group,
 * q's group, p's group. Each tile then reads and writes whole lines, and the source
 * rows stream in order (a 4-D permute dcba: 1.6x faster than 64-byte tiles in
 * lowering's order). Groups let short contiguous axes (lowering tiles an axis of 32
 * cells by 16, one of 16 not at all) make whole tiles: b,h,s,d => b,h,d,s with d = 32
 * 2.6x faster, abc=>cba with c = 16 much more (bench/RESULTS-cpu.md, 2026-11-27 22:50).
 * The innermost loop p reads one line of each of its source rows; when the source
 * stride is a large power of two those lines share one L1 set, so p's tile is kept to
 * 16 lines (a Zen 4, 8-way L1: dcba 64^4 2.1x faster than with 32; q's tile length
 * made no difference there). New tile loops are numbered from *nvars. NULL: not one. */
static Stmt *retile_transpose(Arena *a, const IrModule *m, Stmt *nest, int *nvars) {
  Stmt *loops[64], *r[64], *once;
  int nl, nr = 0;
  Stmt *st = perfect_nest(nest, loops, &nl);
  if (!st || st->kind != S_STORE || reads_buf(st->val, st->dst.buf)) return NULL;
  bool tiled = nl >= 4 && loops[nl - 2]->tile_var >= 0 && loops[nl - 1]->tile_var >= 0;
  if (!tiled && !writes_each_cell_once(nest, m, &once)) return NULL; /* loop order may not matter */
  for (int l = 0; l < nl; l++)
    if (!is_tile_controller(loops, nl, loops[l]->var)) r[nr++] = loops[l];
  Stmt *p = NULL;
  for (int l = 0; l < nr; l++)
    if (aff_coef(&st->dst.flat, r[l]->var) == 1) p = r[l];
  const Access *src = NULL;
  Stmt *q = p ? source_axis(r, nr, st, p, &src) : NULL;
  if (!q) return NULL;
  int esz = VEC_AT(m->bufs, IrBuf, st->dst.buf)->elem == ELEM_F64 ? 8 : 4, TQ = 128 / esz, TP = 64 / esz;
  AxisGroup ponly = {.m = {p}, .n = 1}, qg = axis_group(r, nr, &src->flat, q, TQ, &ponly), pg = axis_group(r, nr, &st->dst.flat, p, TP, &qg);
  /* a 64-byte source group still makes whole-line tiles (b,h,s,d => b,h,d,s, d = 16:
   * 1.3-1.7x faster than lowering's plan, which leaves it untiled) */
  if (qg.span < TQ / 2 || pg.span < TP) return NULL;
  Stmt *cq, *cp, *body = group_loops(a, &pg, TP, st, &cp, nvars);
  body = group_loops(a, &qg, TQ, body, &cq, nvars);
  if (cq) body = copy_loop(a, cq, body);
  Stmt *order[64];
  long stride[64];
  int no = 0;
  for (int l = 0; l <= nr; l++) { /* insertion by decreasing |source stride|, stable */
    Stmt *x = l < nr ? r[l] : cp;
    if (!x || (l < nr && (in_group(&qg, x) || in_group(&pg, x)))) continue;
    long sx = labs(aff_coef(&src->flat, l < nr ? x->var : pg.m[pg.n - 1]->var)) * (l < nr ? 1 : group_tile(&pg, TP));
    int at = no++;
    while (at > 0 && stride[at - 1] < sx) order[at] = order[at - 1], stride[at] = stride[at - 1], at--;
    order[at] = x, stride[at] = sx;
  }
  for (int d = no - 1; d >= 0; d--) body = order[d] == cp ? copy_loop(a, cp, body) : group_loop(a, order[d], body, 0, NULL);
  return body;
}

/* A retiled transpose (retile_transpose, perhaps marked parallel and block-transposed)
 * with a prefetch, per source row q, of the target row the iteration `dist` ahead of the
 * innermost middle loop writes (1; 4 measured 0.69x on a block-transposed 48^4 dcba):
 * the target rows of a tile lie far apart (a stride per q), so the hardware prefetcher
 * does not see them, and writing them waits for each line (a 4-D permute dcba 64^4:
 * 15-20% faster). The nest as it is when it has no middle loop. */
static Stmt *prefetch_rows(Arena *a, const IrModule *m, Stmt *nest, int dist) {
  Stmt *loops[64];
  int nl;
  Stmt *st = perfect_nest(nest, loops, &nl);
  if (!st || nl < 5) return nest;
  Stmt *cp = loops[0], *mid = loops[nl - 4], *q = loops[nl - 2], *p = loops[nl - 1];
  /* whole tiles only: every prefetched cell is a cell of the target */
  if (p->tile_var != cp->var || q->tile_var != loops[nl - 3]->var || p->ext % p->tile || aff_coef(&st->dst.flat, p->var) != 1 ||
      mid->tile_var >= 0 || mid->ext < 2)
    return nest;
  Stmt *pf = ANEW(a, Stmt);
  pf->kind = S_PREFETCH;
  pf->dst.buf = st->dst.buf;
  pf->ext = p->tile;
  /* the target cell at (mid + 1, p = the tile's first) */
  Aff f = aff_drop(a, &st->dst.flat, &p->var, 1);
  f.off += dist * aff_coef(&st->dst.flat, mid->var);
  f.t[f.n++] = (Term){.var = cp->var, .coef = p->tile};
  pf->dst.flat = f;
  Stmt *g = ANEW(a, Stmt);
  g->kind = S_IF;
  g->nguards = 1;
  g->guards = ANEW(a, Guard);
  g->guards->aff = (Aff){.off = dist, .n = 1, .t = ANEW(a, Term)};
  g->guards->aff.t[0] = (Term){.var = mid->var, .coef = 1};
  g->guards->ext = mid->ext;
  vec_push(a, &g->body, pf);
  Stmt *r = copy_loop(a, q, g);
  vec_push(a, &r->body, p);
  for (int d = nl - 3; d >= 0; d--) r = copy_loop(a, loops[d], r);
  return r;
}

static Stmt *mark_parallel(Arena *a, Stmt *nest);

/* A target at least this large is written around the caches by a transpose. A cached
 * store reads each target line before writing it, a third pass of memory traffic; a
 * streamed one does not, but the next statement then reads the target from memory, not
 * from cache. Measured on this machine (permute dcba alone / followed by a sum of its
 * result, GB/s, cached -> streamed): 16 MiB 14.5 -> 15.6 / 11.5 -> 9.5 (worse), 32 MiB
 * 10.8 -> 15.6 / 8.6 -> 9.4, 64 MiB 6.8 -> 14.1 / 6.0 -> 8.6. */
enum { STREAM_MIN_BYTES = 32 << 20 };

/* A value that only moves a cell: a load, perhaps through id or added to a constant 0
 * (a fused fill). Streamed loops build their groups lane by lane, which gcc does
 * not vectorize: computed values (a relu over 64 MiB: 0.95x -> 0.29x memcpy) lose more
 * than the skipped line reads save. */
static bool moves_cell(const IrExpr *e) {
  if (e->kind == X_LOAD) return true;
  if (e->kind != X_OP) return false;
  if (e->op == OP_ID) return moves_cell(e->a[0]);
  return e->op == OP_ADD && e->a[0]->kind == X_CONST && e->a[0]->value == 0 && moves_cell(e->a[1]);
}

/* Whether the innermost loop p of a nest storing st can write `lanes` cells at a time,
 * each group aligned to its size (a non-temporal store of a whole vector requires it). */
static bool stream_fits(const Stmt *st, const Stmt *p, int lanes) {
  const Aff *f = &st->dst.flat;
  if (p->dext || p->ext % lanes || (p->tile_var >= 0 && p->tile % lanes) || aff_coef(f, p->var) != 1 || f->off % lanes)
    return false;
  for (int i = 0; i < f->n; i++)
    if (f->t[i].var < 0 || f->t[i].dyn || (f->t[i].var != p->var && f->t[i].coef % lanes)) return false;
  return true;
}

/* A nest (a retiled transpose, a permute lowering left untiled; perhaps marked
 * parallel) that moves cells into every cell of a large target once: its innermost loop
 * streams the stores (Stmt.stream) and an S_FENCE ends each iteration of its outermost
 * loop, on the thread that ran it. NULL: not one. (No prefetch then: a line prefetched
 * for writing is read, which streaming avoids.) A group is the target's vector width
 * (at most a 64-byte line) where the loop allows, else 16 bytes: one whole-line store
 * instead of four 16-byte ones fills the write-combining buffer at once (a Zen 4: acbd
 * 64^4 1.5x faster with 64-byte stores in C; dcba, bound by its reads, unchanged). */
static Stmt *stream_stores(Arena *a, const IrModule *m, const SchedOpts *o, Stmt *nest) {
  Stmt *loops[64];
  int nl;
  Stmt *st = perfect_nest(nest, loops, &nl);
  Stmt *once;
  if (!st || st->kind != S_STORE || st->accum != OP_ARG2 || nl < 2 || !moves_cell(st->val) || !writes_each_cell_once(nest, m, &once))
    return NULL;
  const IrBuf *b = VEC_AT(m->bufs, IrBuf, st->dst.buf);
  int esize = b->elem == ELEM_F64 ? 8 : 4, vb = o->vec_bytes ? o->vec_bytes : 32, lanes = (vb < 64 ? vb : 64) / esize;
  Stmt *p = loops[nl - 1];
  if (ir_buf_bytes(b) < STREAM_MIN_BYTES) return NULL;
  if (!stream_fits(st, p, lanes)) lanes = 16 / esize;
  if (!stream_fits(st, p, lanes)) return NULL;
  Stmt *r = copy_loop(a, p, st);
  r->stream = lanes;
  for (int d = nl - 2; d >= 0; d--) r = copy_loop(a, loops[d], r);
  Stmt *fence = ANEW(a, Stmt);
  fence->kind = S_FENCE;
  vec_push(a, &r->body, fence);
  return r;
}

const IrExpr *ir_tblock_load(const Stmt *st, const IrExpr **addend) {
  const IrExpr *v = st->val;
  *addend = NULL;
  if (st->accum != OP_ARG2) return NULL;
  if (v->kind == X_OP && v->op == OP_ADD && v->a[0]->kind == X_CONST) *addend = v->a[0], v = v->a[1];
  while (v->kind == X_OP && v->op == OP_ID) v = v->a[0];
  return v->kind == X_LOAD ? v : NULL;
}

/* l runs over whole blocks of b cells: a static extent, start and trip count multiples of b. */
static bool whole_blocks(const Stmt *l, int b) {
  return !l->dext && l->ext % b == 0 && (l->tile_var < 0 || l->tile % b == 0);
}

/* A retiled transpose (perhaps parallel and streamed) whose two innermost loops q, p
 * move f32 cells from a source contiguous along q to a target contiguous along p in
 * whole blocks of a vector's lanes (Stmt.tblock on q): each block is a vector load per
 * source row, a register transpose, a vector store per target row, so every source line
 * is read once into a register instead of one cell per L1 fill (16 rows at a
 * power-of-two stride share one 8-way L1 set). The stored value may add a constant to
 * the moved cell (a permute's gradient with its zeroing fused in: add(0, cell), which
 * turns -0 into +0 and so stays an add). NULL: not one. Only with AVX (the renderer's
 * three-operand shuffles) and f32. */
static Stmt *block_transpose(Arena *a, const IrModule *m, const SchedOpts *o, Stmt *nest) {
  Stmt *loops[64];
  int nl, vb = o->vec_bytes ? o->vec_bytes : 32, b = (vb < 64 ? vb : 64) / 4;
  Stmt *st = perfect_nest(nest, loops, &nl);
  if (vb < 32 || !st || st->kind != S_STORE || nl < 2) return NULL;
  const IrExpr *addend, *v = ir_tblock_load(st, &addend);
  if (!v || has_symbol(&v->acc) || has_symbol(&st->dst)) return NULL;
  for (int i = 0; i < v->acc.flat.n; i++)
    if (v->acc.flat.t[i].dyn) return NULL;
  for (int i = 0; i < st->dst.flat.n; i++)
    if (st->dst.flat.t[i].dyn) return NULL;
  if (VEC_AT(m->bufs, IrBuf, st->dst.buf)->elem != ELEM_F32 || VEC_AT(m->bufs, IrBuf, v->acc.buf)->elem != ELEM_F32) return NULL;
  Stmt *q = loops[nl - 2], *p = loops[nl - 1];
  if (!whole_blocks(q, b) || !whole_blocks(p, b) || q->parallel || p->parallel || q->accs > 1 || p->accs > 1 || q->stream ||
      (p->stream && p->stream != b))
    return NULL;
  if (aff_coef(&v->acc.flat, q->var) != 1 || aff_coef(&st->dst.flat, p->var) != 1 || !aff_coef(&v->acc.flat, p->var) ||
      !aff_coef(&st->dst.flat, q->var))
    return NULL;
  Stmt *r = copy_loop(a, q, p);
  r->tblock = b;
  for (int d = nl - 3; d >= 0; d--) r = copy_loop(a, loops[d], r);
  return r;
}

/* A retiled transpose, perhaps parallel, then streamed or prefetched; block-transposed
 * where it can be (bench/RESULTS-cpu.md, 2026-11-28 04:00: dcba 64^4 1.8x, the
 * cache-resident permutes 1.6-3.7x; the prefetch still pays on cached targets: 48^4
 * dcba 1.2x with it). */
static Stmt *sched_transpose(Arena *a, const IrModule *m, const SchedOpts *o, Stmt *retiled) {
  Stmt *r = mark_parallel(a, retiled), *b = block_transpose(a, m, o, r), *s;
  if (b) { /* streamed only in whole blocks: a 16-byte fallback keeps the cell loop */
    if (!(s = stream_stores(a, m, o, b))) {
      /* A gradient's block (add(0, cell)) only where it streams: through the caches
       * the gradient step of a 4-21 MiB dcba measured 0.89-0.93x of the cell loop's. */
      Stmt *loops[64];
      int nl;
      const IrExpr *addend;
      ir_tblock_load(perfect_nest(b, loops, &nl), &addend);
      if (!addend) return prefetch_rows(a, m, b, 1);
    } else {
      const Stmt *q = s;
      while (!q->tblock) q = q->body.items[0];
      const Stmt *p = q->body.items[0];
      if (p->stream == q->tblock) return s;
    }
  }
  s = stream_stores(a, m, o, r);
  return s ? s : prefetch_rows(a, m, r, 1);
}

/* ---- parallel loops ---- */

/* var indexes an axis of acc alone (plus symbols and an offset): distinct values of var
 * write distinct cells. Not through a broadcast flag (a term scaled by a dynamic
 * product): every value of var hits index 0 while the flag is 0. */
static bool owns_axis(const Access *acc, int var) {
  for (int ax = 0; ax < acc->rank; ax++) {
    const Aff *f = &acc->axis[ax];
    bool has = false, other = false;
    for (int i = 0; i < f->n; i++) {
      if (f->t[i].var == var && !f->t[i].dyn) has = true;
      else if (f->t[i].var >= 0 || f->t[i].var == AFF_ONE) other = true;
    }
    if (has && !other) return true;
  }
  return false;
}


/* Does e read a cell of dst's buffer other than the one dst writes? */
static bool reads_other_cell(const IrExpr *e, const Access *dst) {
  if (e->kind == X_LOAD) return e->acc.buf == dst->buf && !aff_same(&e->acc.flat, &dst->flat);
  if (e->kind == X_OP)
    for (int i = 0; i < op_info[e->op].arity; i++)
      if (reads_other_cell(e->a[i], dst)) return true;
  return false;
}

/* The outer loop of a top-level nest runs in parallel when every iteration writes its
 * own cells and reads no cell another one writes, and there is enough work. */
static Stmt *mark_parallel(Arena *a, Stmt *nest) {
  Stmt *loops[64];
  int nl;
  Stmt *in = perfect_nest(nest, loops, &nl);
  if (!in || !nl || ext_guess(loops[0]) < 2) return nest;
  /* A tile loop splits the range of the loop it controls: disjoint tiles of that one. */
  int var = loops[0]->var;
  for (int l = 1; l < nl; l++)
    if (loops[l]->tile_var == loops[0]->var) var = loops[l]->var;
  long points = 1;
  for (int l = 0; l < nl; l++) points = mul_sat(points, ext_guess(loops[l]));
  const Stmt *st = in->kind == S_IF && in->body.len == 1 ? in->body.items[0] : in; /* padding guards */
  if (st->kind == S_KERNEL) {
    points = mul_sat(points, mul_sat(st->kern->ext[0], mul_sat(st->kern->ext[1], st->kern->ext[2])));
    st = st->kern->store;
  }
  if (st->kind != S_STORE || points < (in->kind == S_KERNEL ? PAR_MIN_WORK : PAR_MIN_POINTS)) return nest;
  if (!owns_axis(&st->dst, var) || reads_other_cell(st->val, &st->dst)) return nest;
  Stmt *n = ANEW(a, Stmt);
  *n = *nest;
  n->parallel = true;
  return n;
}

/* A nest whose outer loop adds into cells that an inner loop's variable picks (a column
 * sum b[j] += x[i, j] with i outer: the outer loop is a reduction) runs in parallel over
 * tiles of that inner variable instead, the tile loop outermost: whole cache lines of
 * the target per tile (no false sharing), at most 64 tiles. Each cell is still summed
 * by one thread in source order. NULL: not such a nest, or too small. */
static Stmt *split_inner(Arena *a, const IrModule *m, Stmt *nest, int *nvars) {
  Stmt *loops[64];
  int nl;
  Stmt *st = perfect_nest(nest, loops, &nl);
  if (!st || nl < 2 || st->kind != S_STORE || owns_axis(&st->dst, loops[0]->var) || reads_other_cell(st->val, &st->dst)) return NULL;
  long points = 1;
  int l = -1;
  for (int i = 0; i < nl; i++) {
    if (loops[i]->tile_var >= 0 || is_tile_controller(loops, nl, loops[i]->var) || loops[i]->accs > 1 || loops[i]->dext) return NULL;
    points = mul_sat(points, loops[i]->ext);
    if (l < 0 && owns_axis(&st->dst, loops[i]->var)) l = i;
  }
  long line = 64 / (VEC_AT(m->bufs, IrBuf, st->dst.buf)->elem == ELEM_F64 ? 8 : 4);
  if (l < 0 || points < PAR_MIN_POINTS || loops[l]->ext < 2 * line) return NULL;
  long w = (loops[l]->ext + 63) / 64;
  w = (w + line - 1) / line * line;
  Stmt *r = st;
  for (int d = nl - 1; d >= 0; d--) {
    r = copy_loop(a, loops[d], r);
    if (d == l) r->tile_var = *nvars, r->tile = (int)w;
  }
  Stmt *t = copy_loop(a, loops[l], r);
  t->var = (*nvars)++;
  t->ext = (loops[l]->ext + w - 1) / w;
  t->tile_var = -1, t->tile = 0;
  t->parallel = true;
  return t;
}

/* A kernel outside any loop is split among threads instead: by row tiles when every M
 * variable owns an axis of the target (distinct rows write distinct cells), by column
 * panels when j does and there are more panels than row tiles (a small m: each thread
 * packs all of A then, which is the small operand). */
static void kernel_parallel(Kernel *k) {
  bool rows = true;
  for (int t = 0; t < k->nm; t++) rows &= owns_axis(&k->store->dst, k->mvar[t]);
  long mt = (k->ext[0] + k->mr - 1) / k->mr, nt = ((k->ext[1] < k->nc ? k->ext[1] : k->nc) + k->nr - 1) / k->nr;
  bool cols = nt >= 2 && (!rows || mt < nt);
  for (int t = 0; t < k->nd.n; t++) cols &= owns_axis(&k->store->dst, k->nd.var[t]);
  rows &= mt >= 2 && !cols;
  k->parallel = (rows || cols) && k->ext[0] * k->ext[1] * k->ext[2] >= PAR_MIN_WORK;
  k->split_cols = k->parallel && cols;
}

/* The nest as a kernel inside its outer loops, or NULL when it is no contraction worth
 * one. Kernels reassociate sums: never under --strict-fp. */
static Stmt *kernel_nest(Arena *a, const IrModule *m, const SchedOpts *o, Stmt *nest, Contraction *c) {
  long min_work = o->kernel_min_work ? o->kernel_min_work : KERNEL_MIN_WORK;
  if (o->strict_fp || !sched_contraction(nest, m, c) || c->m * c->n * c->kext < min_work) return NULL;
  Stmt *r = make_kernel(a, m, o, c);
  if (r->kind == S_KERNEL) kernel_parallel(r->kern);
  return r;
}

/* A loop nest with several nests inside its common outer loops (routine fusion's row
 * fusion, sched_fuse.c: a softmax's passes over each row in turn): each inner nest
 * that is a reduction gets its partial sums (the outer loops keep the parallel mark
 * fusion gave them; nothing inner runs in parallel). */
static Stmt *sched_rows(Arena *a, const IrModule *m, const SchedOpts *o, Stmt *s) {
  if (s->kind != S_LOOP || o->strict_fp) return s;
  Stmt *r = ANEW(a, Stmt);
  *r = *s;
  r->body = (PtrVec){0};
  for (int i = 0; i < s->body.len; i++) {
    Stmt *b = s->body.items[i], *red = NULL;
    if (s->body.len == 1) red = sched_rows(a, m, o, b);
    else if (b->kind == S_LOOP) red = is_perfect(b) ? make_reduction(a, m, b) : sched_rows(a, m, o, b);
    vec_push(a, &r->body, red ? red : b);
  }
  return r;
}

/* The schedule of top-level statement s; a new loop variable (a tile loop) is numbered
 * from *nvars. */
static Stmt *sched_stmt(Arena *a, const IrModule *m, const SchedOpts *o, Stmt *s, int *nvars) {
  /* Threads and fused fills change no result; kernels and partial sums reassociate. */
  if (s->kind != S_LOOP || o->check_bounds) return s;
  Stmt *r = o->strict_fp ? NULL : kernel_nest(a, m, o, s, &(Contraction){0});
  if (!r && !o->strict_fp) r = make_reduction(a, m, s);
  if (r) return mark_parallel(a, r);
  if (!o->strict_fp && (r = retile_transpose(a, m, s, nvars))) return sched_transpose(a, m, o, r);
  r = mark_parallel(a, s);
  if (r == s && !is_perfect(s)) return sched_rows(a, m, o, s);
  Stmt *t = stream_stores(a, m, o, r);
  if (t) return t;
  t = r->parallel ? NULL : split_inner(a, m, s, nvars);
  return t ? t : r;
}

/* A nest over dynamic sizes: kernels, retiled transposes and fused fills are planned
 * from static sizes, so it keeps its loops; its innermost reduction may get partial
 * sums and its outer loop threads (the renderers read the extents at run time). */
static Stmt *sched_dyn_stmt(Arena *a, const IrModule *m, const SchedOpts *o, Stmt *s) {
  if (s->kind != S_LOOP || o->check_bounds) return s;
  Stmt *r = o->strict_fp ? NULL : make_reduction(a, m, s);
  return mark_parallel(a, r ? r : s);
}

/* A contraction without guards (but on k) whose target axes are its outer, M and N
 * variables, one each, over their whole extents: the kernel calls together write each
 * cell of the target in exactly one call, once per k block. */
static bool kernel_covers_target(const Contraction *c, const IrModule *m) {
  const Access *d = &c->store->dst;
  const IrBuf *b = VEC_AT(m->bufs, IrBuf, d->buf);
  for (int g = 0; g < c->nguards; g++) /* a guard on k only zeroes products */
    if (!aff_uses(&c->guards[g].aff, c->kd.var, c->kd.n)) return false;
  int naxes = 0; /* axes a loop runs over (an axis of size 1 has index 0, no loop) */
  for (int ax = 0; ax < d->rank; ax++) {
    const Aff *f = &d->axis[ax];
    if (b->dims[ax] == 1 && !f->n && !f->off) continue;
    naxes++;
    if (f->off || f->n != 1 || f->t[0].coef != 1) return false;
    int v = f->t[0].var;
    long ext = -1;
    for (int t = 0; t < c->nd.n; t++)
      if (c->nd.var[t] == v) ext = c->nd.ext[t];
    for (int t = 0; t < c->nm; t++)
      if (c->mvar[t] == v) ext = c->mext[t];
    for (int l = 0; l < c->nouter; l++)
      if (c->outer[l]->var == v) ext = c->outer[l]->ext;
    if (ext != b->dims[ax]) return false;
    for (int k = 0; k < ax; k++)
      if (d->axis[k].n && d->axis[k].t[0].var == v) return false;
  }
  return naxes == c->nouter + c->nm + c->nd.n;
}

/* `fill B v` then a contraction into every cell of B: a kernel whose first k block
 * stores v + its sum (Kernel.overwrite), one pass over B instead of three. */
static Stmt *fuse_fill_kernel(Arena *a, const IrModule *m, const SchedOpts *o, const Stmt *fill, Stmt *nest) {
  Contraction c;
  if (fill->kind != S_FILL || nest->kind != S_LOOP || !isfinite(fill->value)) return NULL;
  Stmt *r = kernel_nest(a, m, o, nest, &c);
  if (!r || c.store->dst.buf != fill->buf || !kernel_covers_target(&c, m)) return NULL;
  Stmt *k = r;
  while (k->kind == S_LOOP) k = k->body.items[0];
  k->kern->overwrite = true;
  k->kern->init = fill->value;
  return r;
}

/* The CPU's widest vectors by cpuid, for the unit tests; compiled code takes the width of
 * the gcc target it is built for (jit_host_target), which an old gcc may make narrower. */
int sched_host_vec_bytes(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) return 64;
  if (__builtin_cpu_supports("avx")) return 32;
#endif
  return 16;
}

/* ---- what fusion (sched_fuse.c) needs to know ---- */

/* SCHED_APART for a kernel, SCHED_SUMS for partial sums, in s. */
static int reshaped(const Stmt *s) {
  if (s->kind == S_KERNEL) return SCHED_APART;
  int r = s->kind == S_LOOP && s->accs > 1 ? SCHED_SUMS : 0;
  for (int i = 0; i < s->body.len; i++) r |= reshaped(s->body.items[i]);
  return r;
}

int sched_nest_plan(Arena *a, const IrModule *m, const SchedOpts *o, Stmt *nest) {
  int nvars = 0;
  Stmt *r = sched_stmt(a, m, o, nest, &nvars);
  if (nvars) return SCHED_APART; /* split over an inner loop's tiles */
  return reshaped(r) | (r->kind == S_LOOP && r->parallel ? SCHED_PAR : 0);
}

bool sched_reads_buf(const IrExpr *e, int buf) { return reads_buf(e, buf); }

void sched_each_load(const IrExpr *e, void (*fn)(int buf, void *arg), void *arg) {
  if (e->kind == X_LOAD) fn(e->acc.buf, arg);
  if (e->kind == X_OP)
    for (int i = 0; i < op_info[e->op].arity; i++) sched_each_load(e->a[i], fn, arg);
}

bool sched_epilogue_ok(Arena *a, const IrModule *m, const SchedOpts *o, Stmt *nest, const Stmt *next) {
  if (o->check_bounds || ir_stmt_dynamic(m, nest) || ir_stmt_dynamic(m, next)) return false;
  int nvars = 0;
  Stmt *k = sched_stmt(a, m, o, nest, &nvars); /* a throwaway copy */
  return k->kind == S_KERNEL && sched_fuse_epilogue(a, k, NULL, next);
}

bool sched_each_cell_once(Stmt *nest, const IrModule *m, Stmt **store) { return writes_each_cell_once(nest, m, store); }

Stmt *sched_fill_nest(Arena *a, const IrModule *m, const Stmt *fill, Stmt *nest) { return fuse_fill(a, m, fill, nest); }

bool sched_fill_into_kernel(Arena *a, const IrModule *m, const SchedOpts *o, const Stmt *fill, Stmt *nest) {
  return fuse_fill_kernel(a, m, o, fill, nest) != NULL;
}

IrModule *sched_module(Arena *a, const IrModule *m, const SchedOpts *o) {
  if (!o->check_bounds) m = sched_fuse_routines(a, m, o);
  IrModule *r = ANEW(a, IrModule);
  *r = *m;
  r->funcs = (PtrVec){0};
  for (int i = 0; i < m->funcs.len; i++) {
    const IrFunc *f = VEC_AT(m->funcs, IrFunc, i);
    IrFunc *nf = ANEW(a, IrFunc);
    *nf = *f;
    nf->body = (PtrVec){0};
    for (int k = 0; k < f->body.len; k++) {
      Stmt *s = f->body.items[k], *fused = NULL;
      if (ir_stmt_dynamic(m, s)) {
        vec_push(a, &nf->body, sched_dyn_stmt(a, m, o, s));
        continue;
      }
      /* fill, # comment, nest */
      if (!o->check_bounds && k + 2 < f->body.len && ((Stmt *)f->body.items[k + 1])->kind == S_COMMENT &&
          !ir_stmt_dynamic(m, f->body.items[k + 2])) {
        fused = fuse_fill(a, m, s, f->body.items[k + 2]);
        if (!fused) fused = fuse_fill_kernel(a, m, o, s, f->body.items[k + 2]);
      }
      Stmt *out;
      if (fused) {
        vec_push(a, &nf->body, f->body.items[k + 1]);
        Stmt *t = o->strict_fp || fused->kind != S_LOOP ? NULL : retile_transpose(a, m, fused, &nf->nvars);
        out = t ? sched_transpose(a, m, o, t) : mark_parallel(a, fused);
        Stmt *st = t ? NULL : stream_stores(a, m, o, out);
        if (st) out = st;
        k += 2;
      } else out = sched_stmt(a, m, o, s, &nf->nvars);
      vec_push(a, &nf->body, out);
      /* kernel, # comment, pointwise nest on its result: the nest in the epilogue */
      if (out->kind == S_KERNEL && k + 2 < f->body.len && ((Stmt *)f->body.items[k + 1])->kind == S_COMMENT &&
          !ir_stmt_dynamic(m, f->body.items[k + 2]) && sched_fuse_epilogue(a, out, f->body.items[k + 1], f->body.items[k + 2]))
        k += 2;
    }
    vec_push(a, &r->funcs, nf);
  }
  return r;
}
