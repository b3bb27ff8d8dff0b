/* infer_row.c: dimensions, rows and the constraint solver of shape inference (doc/inference.md,
 * "Solving"). See infer.h for the representation. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "infer.h"

/* Simplifications before we give up: a guard against divergence that grows with the
 * program. Valid programs take about 2 per constraint created (samples, conformance
 * cases, 7000 stacked tensors: testsuite/lit/infer/scale_stack.test); the base covers
 * small programs. */
enum { WORK_BASE = 1000 * 1000, WORK_PER_CONSTRAINT = 100 };

static bool over_work_limit(const Solver *s) {
  return s->work > WORK_BASE + WORK_PER_CONSTRAINT * s->made;
}
typedef enum { PENDING, PROGRESS, DONE, FAIL } Step;
/* RowVar.lub and row_lub_len's memo: not computed yet, being computed (a cycle). */
enum { LUB_UNSET = -2, LUB_ON_STACK = -3 };

/* A closing stage's pass over all n constraints, variables or dimensions. */
static void count_sweep(Solver *s, int n) {
  s->sweeps++;
  s->visits += n;
}

void solver_init(Solver *s, Arena *a, Diag *diag) {
  memset(s, 0, sizeof *s);
  s->a = a;
  s->diag = diag;
}

/* ---------------------------------------------------------------- dimensions */

DimNode *dim_find(DimNode *d) {
  DimNode *r = d;
  while (r->parent) r = r->parent;
  while (d != r) { /* path compression */
    DimNode *next = d->parent;
    d->parent = r;
    d = next;
  }
  return r;
}

static DimNode *dim_new(Solver *s) {
  DimNode *d = ANEW(s->a, DimNode);
  d->id = s->dims.len;
  vec_push(s->a, &s->dims, d);
  return d;
}

DimNode *dim_var(Solver *s) { return dim_new(s); }

DimNode *dim_known(Solver *s, int d, const char *label) {
  DimNode *n = dim_new(s);
  n->d = d;
  n->known = true;
  n->label = label;
  return n;
}

int dim_size(DimNode *d) { return dim_find(d)->d; }
bool dim_is_known(DimNode *d) { return dim_find(d)->known; }

const char *dim_str(Solver *s, int d) {
  if (!DIM_IS_DYN(d)) return arena_printf(s->a, "%d", d);
  int id = DIM_DYN_ID(d);
  const DimSym *ds = s->g && id < s->g->dimsyms.len ? VEC_AT(s->g->dimsyms, DimSym, id) : NULL;
  if (ds && ds->name) return ds->name;
  return arena_printf(s->a, "?%d", id); /* anonymous: numbered so two of them differ in messages */
}

/* A fresh variable standing for one more axis of row variable v. */
static DimNode *dim_for_rowvar(Solver *s, RowVar *v) {
  DimNode *d = dim_new(s);
  d->terminal = v->terminal;
  d->owner = v->owner;
  return d;
}

/* ---------------------------------------------------------------- rows */

static DimNode **dims_copy(Solver *s, int n, DimNode **src) {
  if (n == 0) return NULL;
  DimNode **p = ANEWN(s->a, DimNode *, n);
  memcpy(p, src, sizeof *p * (size_t)n);
  return p;
}

Row *row_closed(Solver *s, int n, DimNode **dims) {
  Row *r = ANEW(s->a, Row);
  r->nend = n;
  r->end = dims_copy(s, n, dims);
  return r;
}

Row *row_open(Solver *s, int nbeg, DimNode **beg, RowVar *v, int nend, DimNode **end) {
  if (!v) {
    DimNode *tmp[2 * MAX_RANK + 2];
    int n = 0;
    for (int i = 0; i < nbeg && n < 2 * MAX_RANK; i++) tmp[n++] = beg[i];
    for (int i = 0; i < nend && n < 2 * MAX_RANK + 2; i++) tmp[n++] = end[i];
    return row_closed(s, n, tmp);
  }
  Row *r = ANEW(s->a, Row);
  r->nbeg = nbeg;
  r->beg = dims_copy(s, nbeg, beg);
  r->var = v;
  r->nend = nend;
  r->end = dims_copy(s, nend, end);
  return r;
}

RowVar *row_var(Solver *s, int kind) {
  RowVar *v = ANEW(s->a, RowVar);
  v->id = s->rvars.len;
  v->kind = kind;
  v->lub = LUB_UNSET;
  vec_push(s->a, &s->rvars, v);
  return v;
}

static RowVar *row_var_like(Solver *s, RowVar *v) {
  RowVar *w = row_var(s, v->kind);
  w->terminal = v->terminal;
  w->owner = v->owner;
  return w;
}

Row *row_of_var(Solver *s, RowVar *v) { return row_open(s, 0, NULL, v, 0, NULL); }

int row_len(const Row *r) { return r->nbeg + r->nend; }

/* The unsolved variable a row ends up with (NULL: closed) and its number of known
 * axes, without building the normalized row. */
static RowVar *row_peek(const Row *r, int *len) {
  int n = r->nbeg + r->nend;
  RowVar *v = r->var;
  while (v && v->solved) {
    n += v->solved->nbeg + v->solved->nend;
    v = v->solved->var;
  }
  if (len) *len = n;
  return v;
}

/* beg ++ solution(var) ++ end, repeatedly, until the variable is unsolved. Rows longer
 * than MAX_RANK are cut (the solver reports divergence before that matters). */
Row *row_norm(Solver *s, Row *r) {
  if (!r->var || !r->var->solved) return r;
  DimNode *beg[MAX_RANK * 2], *end[MAX_RANK * 2];
  int nb = 0, ne = 0;
  for (int i = 0; i < r->nbeg && nb < MAX_RANK; i++) beg[nb++] = r->beg[i];
  for (int i = 0; i < r->nend && ne < MAX_RANK; i++) end[ne++] = r->end[i];
  RowVar *v = r->var;
  while (v && v->solved) {
    Row *sol = v->solved;
    for (int i = 0; i < sol->nbeg && nb < MAX_RANK * 2; i++) beg[nb++] = sol->beg[i];
    /* sol->end goes in front of what we already have at the end */
    int add = sol->nend;
    if (ne + add > MAX_RANK * 2) add = MAX_RANK * 2 - ne;
    memmove(end + add, end, sizeof *end * (size_t)ne);
    for (int i = 0; i < add; i++) end[i] = sol->end[i];
    ne += add;
    v = sol->var;
  }
  return row_open(s, nb, beg, v, ne, end);
}

/* ---------------------------------------------------------------- constraints */

static void enqueue(Solver *s, Constraint *c) {
  if (c->queued || c->done) return;
  c->queued = true;
  vec_push(s->a, &s->queue, c);
}

/* Queues what watches a dim root or a row variable that just changed. */
static void wake(Solver *s, PtrVec *watch) {
  for (int i = 0; i < watch->len; i++) enqueue(s, VEC_AT(*watch, Constraint, i));
  watch->len = 0;
}

Constraint *con_add(Solver *s, ConKind k, UpdateStep *step) {
  Constraint *c = ANEW(s->a, Constraint);
  c->kind = k;
  c->step = step;
  c->slot1 = c->slot2 = -1;
  c->seq = (int)s->made;
  vec_push(s->a, &s->cons, c);
  s->made++;
  if (k == C_DIM_INEQ) s->dim_epoch++;
  enqueue(s, c);
  return c;
}

static StepInfo *info_of(Solver *s, UpdateStep *st) {
  if (!st || !s->infos || st->id < 0 || st->id >= s->ninfos) return NULL;
  return s->infos[st->id];
}

static void record_pair(Solver *s, UpdateStep *st, DimNode *cur, DimNode *subr, bool eq, int cs, int ss) {
  StepInfo *in = info_of(s, st);
  if (!in) return;
  Pairing *p = ANEW(s->a, Pairing);
  p->cur = cur;
  p->subr = subr;
  p->eq = eq;
  p->cur_slot = cs;
  p->subr_slot = ss;
  vec_push(s->a, &in->pairs, p);
}

static Constraint *dim_con(Solver *s, ConKind k, DimNode *a, DimNode *b, UpdateStep *st, const char *w1,
                           const char *w2, int sa, int sb) {
  Constraint *c = con_add(s, k, st);
  c->d1 = a, c->d2 = b, c->what1 = w1, c->what2 = w2;
  record_pair(s, st, a, b, k == C_DIM_EQ, sa, sb);
  return c;
}

void con_dim_eq(Solver *s, DimNode *a, DimNode *b, UpdateStep *st, const char *w1, const char *w2) {
  dim_con(s, C_DIM_EQ, a, b, st, w1, w2, -1, -1);
}

void con_dim_ineq(Solver *s, DimNode *cur, DimNode *subr, UpdateStep *st, const char *w1, const char *w2) {
  dim_con(s, C_DIM_INEQ, cur, subr, st, w1, w2, -1, -1);
}

Constraint *con_row_eq(Solver *s, Row *a, Row *b, UpdateStep *st, const char *w1, const char *w2) {
  Constraint *c = con_add(s, C_ROW_EQ, st);
  c->r1 = a, c->r2 = b, c->what1 = w1, c->what2 = w2;
  return c;
}

Constraint *con_row_ineq(Solver *s, Row *cur, Row *subr, UpdateStep *st, const char *w1, const char *w2) {
  Constraint *c = con_add(s, C_ROW_INEQ, st);
  c->r1 = cur, c->r2 = subr, c->what1 = w1, c->what2 = w2;
  return c;
}

void con_at_least(Solver *s, DimNode *d, long long k, UpdateStep *st, const char *w) {
  Constraint *c = con_add(s, C_AT_LEAST, st);
  c->d1 = d, c->k = k, c->what1 = w;
}

Constraint *con_conv(Solver *s, DimNode *in, DimNode *out, DimNode *kernel, int stride, int dilation,
                     bool padded, UpdateStep *st, const char *w) {
  Constraint *c = con_add(s, C_CONV, st);
  c->d1 = in, c->d2 = out, c->d3 = kernel;
  c->stride = stride > 0 ? stride : 1;
  c->dilation = dilation > 0 ? dilation : 1;
  c->padded = padded;
  c->what1 = w;
  return c;
}

void con_total(Solver *s, Row *rows[3], RowVar *carrier, long long n, UpdateStep *st, const char *w) {
  Constraint *c = con_add(s, C_TOTAL, st);
  for (int k = 0; k < 3; k++) c->rows[k] = rows[k];
  c->total_var = carrier;
  c->k = n;
  c->what1 = w;
}

/* ---------------------------------------------------------------- errors */

static void note_origin(Solver *s, DimNode *d) {
  DimNode *r = dim_find(d);
  if (r->known && r->origin.has_loc)
    diag_note(s->diag, r->origin.loc, "dimension %s%s%s comes from %s", dim_str(s, r->d), r->label ? " labelled " : "",
              r->label ? r->label : "", r->origin.what ? r->origin.what : "here");
}

void solver_fail(Solver *s, const Constraint *c, const char *fmt, ...) {
  if (s->failed) return;
  s->failed = true;
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  Loc loc = {0};
  if (c && c->step) loc = c->step->loc;
  diag_error(s->diag, loc, "%s", buf);
  if (c && c->step && c->step->via.file)
    diag_note(s->diag, c->step->via, "in this application of '%s'", c->step->via_fn);
  if (c && c->step && c->step->stack_elem)
    diag_note(s->diag, c->step->loc, "a stack [ ...; ... ] puts its elements along a new axis: they must have one shape "
              "(broadcasting aside); element %d does not fit", c->step->stack_elem);
}

static const char *what(const char *w) { return w ? w : "an axis"; }

/* "einsum axis j" when d is an axis variable of a spec (spec_dim, src/infer_logic.c): the
 * name the user wrote, which "axis 0 of argument 2" only implies. */
static const char *spec_axis(const DimNode *d) {
  const char *w = d->origin.what;
  return w && !strncmp(w, "einsum axis ", 12) && !strchr(w + 12, ' ') ? w : NULL;
}

static Step fail_dims(Solver *s, Constraint *c, DimNode *a, DimNode *b) {
  DimNode *ra = dim_find(a), *rb = dim_find(b);
  const char *ax = spec_axis(a) ? spec_axis(a) : spec_axis(b);
  if ((c->what1 && strstr(c->what1, "captured label")) || (c->what2 && strstr(c->what2, "captured label")))
    ax = NULL; /* the description names it already */
  const char *of = ax ? arena_printf(s->a, " for %s", ax) : "";
  if (ra->d == rb->d)
    solver_fail(s, c, "label mismatch: %s vs %s for dimension %s%s (%s vs %s)", ra->label, rb->label,
                dim_str(s, ra->d), ax ? arena_printf(s->a, " of %s", ax) : "", what(c->what1), what(c->what2));
  else
    solver_fail(s, c, "dimension mismatch: %s vs %s%s (%s vs %s)", dim_str(s, ra->d), dim_str(s, rb->d), of,
                what(c->what1), what(c->what2));
  note_origin(s, a);
  note_origin(s, b);
  DimNode *one = ra->d == rb->d ? NULL : ra->d == 1 && ra->label ? ra : rb->d == 1 && rb->label ? rb : NULL;
  if (one && c->step)
    diag_note(s->diag, c->step->loc, "a labelled dimension 1 (%s=1) is an axis of its own: only an unlabelled 1 broadcasts",
              one->label);
  return FAIL;
}

/* ---------------------------------------------------------------- dim rules */

static bool labels_clash(DimNode *a, DimNode *b) { return a->label && b->label && strcmp(a->label, b->label); }

/* Links two roots. Known sizes and labels must agree; an unlabeled dim takes the label. */
static Step unify_dim(Solver *s, Constraint *c, DimNode *a, DimNode *b) {
  DimNode *ra = dim_find(a), *rb = dim_find(b);
  if (ra == rb) return DONE;
  if (ra->known && rb->known && (ra->d != rb->d || labels_clash(ra, rb))) return fail_dims(s, c, a, b);
  if (!ra->known && rb->known) { DimNode *t = ra; ra = rb; rb = t; } /* ra: the known one, if any */
  rb->parent = ra;
  s->dim_epoch++;
  wake(s, &ra->watch);
  wake(s, &rb->watch);
  if (!ra->label) ra->label = rb->label;
  ra->terminal = ra->terminal || rb->terminal;
  ra->meets_one = ra->meets_one || rb->meets_one;
  if (!ra->known && rb->at_least > ra->at_least) ra->at_least = rb->at_least;
  if (!ra->owner) ra->owner = rb->owner;
  if (!ra->result_only) ra->result_only = rb->result_only;
  if (!ra->lonely) ra->lonely = rb->lonely;
  if (!ra->known && !ra->origin.what) ra->origin = rb->origin;
  return DONE;
}

/* Solves d := n (a size computed by a rule; the note points at the operation). */
static Step set_dim(Solver *s, Constraint *c, DimNode *d, long long n, const char *why) {
  if (n < 0 || n > INT32_MAX) { /* 0 is a size (an empty axis: set_scale of one, a total of 0) */ /* tdsl(7), SHAPES AND INFERENCE: sizes are checked, never truncated */
    solver_fail(s, c, "a dimension of %lld is out of range (1 to 2147483647) (%s)", n, what(why ? why : c ? c->what1 : NULL));
    return FAIL;
  }
  DimNode *k = dim_known(s, (int)n, NULL);
  if (c && c->step) {
    k->origin.loc = c->step->loc;
    k->origin.has_loc = true;
  }
  k->origin.what = why;
  return unify_dim(s, c, d, k) == FAIL ? FAIL : PROGRESS;
}

/* Records the run-time check `size == expect (or 1 when or_one)` of constraint c, once;
 * sub_is_size: the size is c's subr side (else its cur side), for the message. */
static void record_check(Solver *s, Constraint *c, int size, int expect, bool or_one, bool sub_is_size) {
  for (int i = 0; i < s->checks.len; i++) {
    DimCheck *k = VEC_AT(s->checks, DimCheck, i);
    if (k->size == size && k->expect == expect && k->or_one == or_one) return;
  }
  DimCheck *k = ANEW(s->a, DimCheck);
  k->size = size, k->expect = expect, k->or_one = or_one;
  if (c && c->step) k->loc = c->step->loc;
  const char *ws = c ? (sub_is_size ? c->what2 : c->what1) : NULL, *we = c ? (sub_is_size ? c->what1 : c->what2) : NULL;
  k->msg = arena_printf(s->a, "%s (%s) must be %s%s (%s)", what(ws), dim_str(s, size), or_one ? "1 or " : "",
                        dim_str(s, expect), what(we));
  vec_push(s->a, &s->checks, k);
}

/* cur >= subr where both sizes are known, at least one dynamic and they differ
 * (doc/inference.md, "Dynamic dimensions"): the seed's table decides at run time. */
static Step dyn_ineq(Solver *s, Constraint *c, DimNode *cur, DimNode *sub) {
  if (DIM_IS_DYN(sub->d)) { /* ? vs >1, ? vs ?: sub broadcasts (projections index it 0 when it is 1) */
    record_check(s, c, sub->d, cur->d, cur->d != 1, true);
    return DONE;
  }
  /* a static sub above 1 under a dynamic cur: cur must be exactly that size, so two
   * different static sizes under one dynamic size can never both hold */
  for (int i = 0; i < s->checks.len; i++) {
    DimCheck *k = VEC_AT(s->checks, DimCheck, i);
    if (k->size == cur->d && !k->or_one && !DIM_IS_DYN(k->expect) && k->expect != sub->d) {
      solver_fail(s, c, "dimension mismatch: %d vs %d under dynamic dimension %s (%s vs %s)", k->expect, sub->d,
                  dim_str(s, cur->d), what(c->what1), what(c->what2));
      diag_note(s->diag, k->loc, "here %s", k->msg);
      return FAIL;
    }
  }
  record_check(s, c, cur->d, sub->d, false, false);
  return DONE;
}

static Step simp_dim_ineq(Solver *s, Constraint *c) {
  DimNode *cur = dim_find(c->d1), *sub = dim_find(c->d2);
  if (cur == sub) return DONE;
  /* as OCANNL, a fixed index above 0 in an argument's spec reads that argument's own axis */
  if (c->d1->arg_fixed > 1) return unify_dim(s, c, cur, sub) == FAIL ? FAIL : PROGRESS;
  if (sub->known) {
    /* Only an unlabelled 1 broadcasts: 0 is an empty axis, an ordinary size, and a labelled
     * one ('q' 2.0, q=1) is a size like any other, so its label reaches the axes it meets
     * (seed: labels propagate through inference; OCANNL's solve_dim_ineq broadcasts
     * `Dim {d = 1; label = None}` only). */
    if (sub->d == 1 && !sub->label) { /* broadcast */
      cur->meets_one = true;
      return DONE;
    }
    if (!cur->known && DIM_IS_DYN(sub->d)) { /* a static bound may still come: decided at the fixpoint */
      vec_push(s->a, &s->dyn_lower, c);
      return PENDING;
    }
    if (!cur->known) return unify_dim(s, c, cur, sub) == FAIL ? FAIL : PROGRESS;
    if (cur->d != sub->d && (DIM_IS_DYN(cur->d) || DIM_IS_DYN(sub->d))) return dyn_ineq(s, c, cur, sub);
    if (cur->d != sub->d || labels_clash(cur, sub)) return fail_dims(s, c, c->d1, c->d2);
    if (!cur->label) cur->label = sub->label;
    else if (!sub->label) sub->label = cur->label;
    s->dim_epoch++;
    return DONE;
  }
  /* under an unlabelled 1, sub is 1; under q=1 it may still be 1 (which broadcasts) or
   * q=1: an upper bound, decided with the others (dim_lub) */
  if (cur->known && cur->d == 1 && !cur->label)
    return unify_dim(s, c, sub, cur) == FAIL ? FAIL : PROGRESS;
  /* A fixed index above 0 reads sub, so sub is not 1 and cannot broadcast: as OCANNL,
   * `ti ++ "i=>i2"` and `tj ++ "j=>j1"` both under one axis make one dimension (>= 3). */
  if (sub->at_least > 1) return unify_dim(s, c, cur, sub) == FAIL ? FAIL : PROGRESS;
  return PENDING; /* sub is bounded above by cur */
}

static Step simp_at_least(Solver *s, Constraint *c) {
  DimNode *d = dim_find(c->d1);
  if (!d->known) {
    if (c->k > d->at_least) {
      d->at_least = c->k;
      wake(s, &d->watch); /* the inequalities below d may now be equalities */
    }
    return PENDING;
  }
  if (DIM_IS_DYN(d->d) && c->k > 1) { /* index 0 is in every size (sizes are at least 1) */
    solver_fail(s, c, "fixed index %lld reads an axis of dynamic dimension %s (%s): a fixed index needs a static size",
                c->k - 1, dim_str(s, d->d), what(c->what1));
    note_origin(s, c->d1);
    return FAIL;
  }
  if (d->d >= 0 && d->d < c->k) { /* an axis of size 0 has no index at all */
    /* what1 is "fixed index K in SPEC": say it once, with the indices the axis has */
    const char *w = c->what1 ? c->what1 : "";
    const char *has = d->d == 0   ? "the axis is empty: it has no index"
                    : d->d == 1   ? "the axis has size 1: index 0 only"
                                  : arena_printf(s->a, "the axis has size %d: indices 0 to %d", d->d, d->d - 1);
    if (!strncmp(w, "fixed index ", 12)) solver_fail(s, c, "%s is out of range: %s", w, has);
    else
      solver_fail(s, c, "fixed index %lld is out of range%s%s%s: %s", c->k - 1, *w ? " (" : "", w, *w ? ")" : "", has);
    note_origin(s, c->d1);
    return FAIL;
  }
  return DONE;
}

/* `set_scale ~factor:f h i` (a padded convolution's constraint with c->scale): h = f * i. Not a
 * window: 0 is an ordinary size here, so a label captured on an empty axis scales to 0 (it
 * used to be refused as a "convolution over an empty axis"), and the messages name the
 * set_scale. In 64 bits: sizes and the factor are each below 2^31. */
static Step simp_scale(Solver *s, Constraint *c) {
  bool kh = dim_is_known(c->d1), ki = dim_is_known(c->d2);
  long long h = dim_size(c->d1), i = dim_size(c->d2), f = c->stride;
  if ((kh && h < 0) || (ki && i < 0)) {
    solver_fail(s, c, "%s over dynamic dimension %s: set_scale needs static sizes", what(c->what1),
                dim_str(s, (int)(kh && h < 0 ? h : i)));
    return FAIL;
  }
  if (kh && ki) {
    if (h == f * i) return DONE;
    solver_fail(s, c, "%s: %lld is not %lld times %lld", what(c->what1), h, f, i);
  } else if (kh) {
    if (h % f == 0) return set_dim(s, c, c->d2, h / f, NULL);
    solver_fail(s, c, "%s: %lld is not a multiple of %lld", what(c->what1), h, f);
  } else if (ki) {
    return set_dim(s, c, c->d1, f * i, NULL);
  } else
    return PENDING;
  note_origin(s, c->d1);
  note_origin(s, c->d2);
  return FAIL;
}

/* Valid:  in = stride*(out-1) + dilation*(kernel-1) + 1.  Padded: in = stride*out.
 * In 64 bits: sizes, strides and dilations are each below 2^31. */
static Step simp_conv(Solver *s, Constraint *c) {
  if (c->scale) return simp_scale(s, c);
  DimNode *side[3] = {c->d1, c->d2, c->d3};
  static const char *side_name[3] = {"input", "output", "kernel"};
  for (int i = 0; i < 3; i++) /* a window needs positions: an empty axis stays an error, as a too small input */
    if (side[i] && dim_is_known(side[i]) && dim_size(side[i]) == 0) {
      solver_fail(s, c, "convolution (%s) over an empty %s axis (size 0)", what(c->what1), side_name[i]);
      note_origin(s, side[i]);
      return FAIL;
    }
  /* below, 0 stands for unknown: no known size is 0 */
  long long in = dim_size(c->d1), out = dim_size(c->d2), ker = c->d3 ? dim_size(c->d3) : 0;
  if (in < 0 || out < 0 || ker < 0) {
    solver_fail(s, c, "convolution (%s) over dynamic dimension %s: a convolution needs static sizes", what(c->what1),
                dim_str(s, (int)(in < 0 ? in : out < 0 ? out : ker)));
    return FAIL;
  }
  long long st = c->stride, dl = c->dilation;
  if (c->padded) {
    if (in && out) {
      if (in == st * out) return DONE;
    } else if (in) {
      if (in % st == 0) return set_dim(s, c, c->d2, in / st, "a padded convolution");
    } else if (out) {
      return set_dim(s, c, c->d1, st * out, "a padded convolution");
    } else
      return PENDING;
    solver_fail(s, c, "padded convolution (%s): input size %lld is not stride %lld times output size %lld",
                what(c->what1), in, st, out ? out : in / st);
    note_origin(s, c->d1);
    note_origin(s, c->d2);
    return FAIL;
  }
  in -= in ? c->k : 0; /* a constant offset (`o+1`) shifts the window */
  if (in && out && ker) {
    if (in == st * (out - 1) + dl * (ker - 1) + 1) return DONE;
  } else if (in && ker) {
    long long num = in - dl * (ker - 1) - 1;
    if (num >= 0 && num % st == 0) return set_dim(s, c, c->d2, num / st + 1, "a valid convolution");
  } else if (out && ker) {
    return set_dim(s, c, c->d1, st * (out - 1) + dl * (ker - 1) + 1 + c->k, "a valid convolution");
  } else if (in && out) {
    long long num = in - st * (out - 1) - 1;
    if (num >= 0 && num % dl == 0) return set_dim(s, c, c->d3, num / dl + 1, "a valid convolution");
    ker = 0;
  } else
    return PENDING;
  bool first = !s->failed;
  if (ker)
    solver_fail(s, c,
                "valid convolution (%s): input size %lld does not satisfy input = %lld*(output-1) + %lld*(%lld-1) + 1 "
                "for kernel size %lld",
                what(c->what1), in, st, dl, ker, ker);
  else
    solver_fail(s, c, "valid convolution (%s): input size %lld and output size %lld fit no kernel size",
                what(c->what1), in, out);
  note_origin(s, c->d1);
  if (ker) {
    note_origin(s, c->d3);
    /* the sizes that fit around the given input, as torch's "(in - k) / s + 1 must be
     * whole" users expect: a valid window leaves no partial step */
    long long base = dl * (ker - 1) + 1, lo = in >= base ? (in - base) / st : -1;
    if (first && c->step && lo >= 0)
      diag_note(s->diag, c->step->loc,
                "input sizes that fit this stride and kernel: %lld (output %lld) or %lld (output %lld); a padded "
                "convolution (=+ instead of <+) takes any input",
                st * lo + base + c->k, lo + 1, st * (lo + 1) + base + c->k, lo + 2);
  }
  return FAIL;
}

/* ---------------------------------------------------------------- row rules */

static void rowvar_set(Solver *s, RowVar *v, Row *val) {
  v->solved = val;
  wake(s, &v->watch);
}

static bool solve_rowvar(Solver *s, Constraint *c, RowVar *v, Row *val) {
  Row *n = row_norm(s, val);
  if (n->var == v) {
    solver_fail(s, c, "cyclic shape constraint: a row would contain itself (%s vs %s)", what(c->what1),
                what(c->what2));
    return false;
  }
  if (row_len(n) > MAX_RANK) {
    /* A closed row of too many axes is a shape written too big (a spec of 70 axes), not
     * a row that grows without end: say which. */
    if (!n->var)
      solver_fail(s, c, "a row would have %d axes, more than the %d a shape may have (%s vs %s)", row_len(n), MAX_RANK,
                  what(c->what1), what(c->what2));
    else
      solver_fail(s, c, "shape constraints do not converge: a row grows beyond %d axes (%s vs %s)", MAX_RANK,
                  what(c->what1), what(c->what2));
    return false;
  }
  rowvar_set(s, v, val);
  return true;
}

static bool set_row_empty(Solver *s, Constraint *c, RowVar *v) { return solve_rowvar(s, c, v, row_closed(s, 0, NULL)); }

static const char *axis_what(Solver *s, const char *roww, int pos) {
  if (!roww) roww = "a row";
  if (pos == -1) return arena_printf(s->a, "the last axis of %s", roww);
  if (pos < 0) return arena_printf(s->a, "axis %d from the end of %s", -pos, roww);
  return arena_printf(s->a, "axis %d of %s", pos, roww);
}

/* Pairs a[i] with b[i] for i < n; positions are reported from `pos0` (negative: from the right). */
static void pair_dims(Solver *s, Constraint *c, bool eq, DimNode **a, DimNode **b, int n, int pos0) {
  for (int i = 0; i < n; i++) {
    const char *w1 = axis_what(s, c->what1, pos0 + i), *w2 = axis_what(s, c->what2, pos0 + i);
    dim_con(s, eq ? C_DIM_EQ : C_DIM_INEQ, a[i], b[i], c->step, w1, w2, c->slot1, c->slot2);
  }
}

/* "no axes", "1 axis", "3 axes": the first count of a rank error. */
static const char *axis_count(Solver *s, int n) {
  return n == 0 ? "no axes" : arena_printf(s->a, "%d %s", n, n == 1 ? "axis" : "axes");
}

/* A PyTorch user's `x * 2` or `h * h`: `*` composes, so an operand without the axes
 * composition pairs fails by rank; say what `*` is. Only after the error was printed. */
static void note_compose(Solver *s, const Constraint *c, bool first, int n1, int n2) {
  if (!first || !c->step || c->step->kind != LOGIC_COMPOSE || (n1 && n2)) return;
  diag_note(s->diag, c->step->loc, "'*' multiplies matrices: the input axes of its left operand meet the output axes "
            "of its right one; a pointwise product (or scaling by a number) is '*.'");
}

static Step fail_rank(Solver *s, Constraint *c, Row *a, Row *b, const char *rel) {
  const char *has = axis_count(s, row_len(a));
  /* `x @| i` on a tensor without batch axes is a PyTorch user's x[i]: say what @| takes. */
  bool slice = c->step && c->step->kind == LOGIC_BATCH_SLICE, first = !s->failed;
  if (slice && row_len(c->slot1 == 1 ? a : b) == 0)
    solver_fail(s, c, "'@|' has no batch axis to slice: %s has no axes", what(c->slot1 == 1 ? c->what1 : c->what2));
  else
    solver_fail(s, c, "shape mismatch: %s has %s, %s %s%d", what(c->what1), has, what(c->what2), rel, row_len(b));
  if (slice && first)
    diag_note(s->diag, c->step->loc,
              "'@|' removes the leftmost batch axis of %s: give it one (b = [ N ] where it is declared), or "
              "index another axis with a fixed index in an einsum spec",
              c->step->rhs[0]->name ? c->step->rhs[0]->name : "its argument");
  note_compose(s, c, first, row_len(a), row_len(b));
  return FAIL;
}

/* r1 = r2. */
static Step simp_row_eq(Solver *s, Constraint *c) {
  Row *a = row_norm(s, c->r1), *b = row_norm(s, c->r2);
  if (!a->var && b->var) { /* a: the open one; the sides' descriptions follow */
    Row *t = a; a = b; b = t;
    const char *w = c->what1; c->what1 = c->what2; c->what2 = w;
    int sl = c->slot1; c->slot1 = c->slot2; c->slot2 = sl;
  }
  if (!a->var) { /* both closed */
    if (a->nend != b->nend) return fail_rank(s, c, a, b, "has ");
    pair_dims(s, c, true, a->end, b->end, a->nend, 0);
    return DONE;
  }
  if (!b->var) { /* a open, b closed */
    int n = b->nend;
    if (n < row_len(a)) return fail_rank(s, c, a, b, "has only ");
    pair_dims(s, c, true, a->beg, b->end, a->nbeg, 0);
    pair_dims(s, c, true, a->end, b->end + n - a->nend, a->nend, -a->nend);
    if (!solve_rowvar(s, c, a->var, row_closed(s, n - a->nbeg - a->nend, b->end + a->nbeg))) return FAIL;
    return DONE;
  }
  int kb = a->nbeg < b->nbeg ? a->nbeg : b->nbeg;
  int ke = a->nend < b->nend ? a->nend : b->nend;
  pair_dims(s, c, true, a->beg, b->beg, kb, 0);
  pair_dims(s, c, true, a->end + a->nend - ke, b->end + b->nend - ke, ke, -ke);
  int ab = a->nbeg - kb, bb = b->nbeg - kb, ae = a->nend - ke, be = b->nend - ke;
  if (a->var == b->var) {
    if (!ab && !bb && !ae && !be) return DONE;
    /* x ++ t = s ++ x: wait; other constraints may solve x, else closing empties it
     * and the flanks are compared directly (the least material solution) */
    c->r1 = row_open(s, ab, a->beg + kb, a->var, ae, a->end);
    c->r2 = row_open(s, bb, b->beg + kb, b->var, be, b->end);
    return kb || ke ? PROGRESS : PENDING;
  }
  /* a = Ab' a.var Ae', b = Bb' b.var Be' with one of Ab',Bb' and one of Ae',Be' empty:
   * a.var := Bb' R Be', b.var := Ab' R Ae'. */
  RowVar *r = row_var_like(s, a->var);
  int ga = a->var->axes_before + bb + be, gb = b->var->axes_before + ab + ae;
  r->axes_before = ga > gb ? ga : gb;
  if (r->axes_before > MAX_RANK) {
    solver_fail(s, c, "shape constraints do not converge: a row grows beyond %d axes (%s vs %s)", MAX_RANK,
                what(c->what1), what(c->what2));
    return FAIL;
  }
  r->terminal = a->var->terminal || b->var->terminal;
  if (!r->owner) r->owner = b->var->owner;
  Row *va = row_open(s, bb, b->beg + kb, r, be, b->end);
  Row *vb = row_open(s, ab, a->beg + kb, r, ae, a->end);
  RowVar *av = a->var, *bv = b->var;
  if (!solve_rowvar(s, c, av, va) || !solve_rowvar(s, c, bv, vb)) return FAIL;
  return DONE;
}

/* Replaces v by `front ++ v' ++ back` with fresh variables; true on success. */
static bool expand_rowvar(Solver *s, Constraint *c, RowVar *v, int front, int back) {
  DimNode *f[MAX_RANK], *b[MAX_RANK];
  if (front > MAX_RANK || back > MAX_RANK || v->axes_before + front + back > MAX_RANK) {
    solver_fail(s, c, "shape constraints do not converge: a row grows beyond %d axes (%s vs %s)", MAX_RANK,
                what(c->what1), what(c->what2));
    return false;
  }
  for (int i = 0; i < front; i++) f[i] = dim_for_rowvar(s, v);
  for (int i = 0; i < back; i++) b[i] = dim_for_rowvar(s, v);
  RowVar *rest = row_var_like(s, v);
  rest->axes_before = v->axes_before + front + back;
  return solve_rowvar(s, c, v, row_open(s, front, f, rest, back, b));
}

/* ---------------------------------------------------------------- row inequalities
 *
 * cur >= subr (doc/inference.md, "Row inequalities"): subr's leftmost axes meet cur's
 * leftmost, its rightmost meet cur's rightmost, and what one side has between the
 * other's flanks faces the other's row variable, where broadcasting happens. A side is
 * read level by level of its structure (a solved variable's solution is the next
 * level), not as its flattened normal form, so that the alignment does not depend on
 * whether a variable was solved yet, that is on the order of the constraints. */

/* A row inequality being simplified: the part of each side not paired yet, a view of
 * the side's current level (leftmost axes, variable, rightmost axes; a closed side
 * has only rightmost axes), and how many axes were paired at each end, which name the
 * axes in diagnostics (from the nearer end). */
typedef struct RowIneq {
  Solver *s;
  Constraint *c;
  Row cur, subr;
  int left, right;
} RowIneq;

/* The first / last n axes of a closed view, which then no longer has them. */
static DimNode **take_left(Row *closed, int n) {
  DimNode **p = closed->end;
  closed->end += n, closed->nend -= n;
  return p;
}

static DimNode **take_right(Row *closed, int n) {
  closed->nend -= n;
  return closed->end + closed->nend;
}

/* cur[i] >= subr[i] for the next n axes from the left / from the right. */
static void pair_left(RowIneq *q, DimNode **cur, DimNode **subr, int n) {
  pair_dims(q->s, q->c, false, cur, subr, n, q->left);
  q->left += n;
}

static void pair_right(RowIneq *q, DimNode **cur, DimNode **subr, int n) {
  pair_dims(q->s, q->c, false, cur, subr, n, -(n + q->right));
  q->right += n;
}

/* The axis counts in a rank error are the whole sides': what was paired plus the
 * current level's. */
static Step fail_count(RowIneq *q, int ncur, int nsub, bool at_least) {
  bool first = !q->s->failed;
  solver_fail(q->s, q->c, "shape mismatch: %s has %s, %s has %s%d", what(q->c->what1),
              axis_count(q->s, q->left + ncur + q->right), what(q->c->what2), at_least ? "at least " : "",
              q->left + nsub + q->right);
  note_compose(q->s, q->c, first, q->left + ncur + q->right, q->left + nsub + q->right);
  return FAIL;
}

/* Both views closed: subr's axes meet cur's last ones. While nothing was paired the
 * axes are named by cur's index, as written. */
static Step pair_closed(RowIneq *q) {
  int ncur = q->cur.nend, nsub = q->subr.nend;
  if (ncur < nsub) return fail_count(q, ncur, nsub, false);
  int pos = q->left || q->right ? -(nsub + q->right) : ncur - nsub;
  pair_dims(q->s, q->c, false, q->cur.end + ncur - nsub, q->subr.end, nsub, pos);
  return DONE;
}

/* A closed subr with fewer axes left than cur's flanks: aligned to the right over
 * them (cur's variable and leftmost axes broadcast). */
static Step subr_within_flanks(RowIneq *q) {
  Row *cur = &q->cur, *sub = &q->subr;
  int nright = sub->nend < cur->nend ? sub->nend : cur->nend, nleft = sub->nend - nright;
  pair_right(q, cur->end + cur->nend - nright, take_right(sub, nright), nright);
  pair_left(q, cur->beg + cur->nbeg - nleft, take_left(sub, nleft), nleft);
  return DONE;
}

/* What a closed subr has between cur's flanks goes to cur's unsolved variable, which
 * grows as many axes for it. */
static Step subr_into_curvar(RowIneq *q) {
  int n = q->subr.nend;
  if (!expand_rowvar(q->s, q->c, q->cur.var, 0, n)) return FAIL;
  Row *grown = row_norm(q->s, row_of_var(q->s, q->cur.var)); /* v' ++ fresh(n) */
  pair_left(q, grown->end, q->subr.end, n);
  return DONE;
}

/* subr closed. cur's variable takes subr's middle whether or not it is solved yet, so
 * `"ij...;j..."` pairs j with b's only axis even after `...` took a's last axis. */
static Step ineq_closed_subr(RowIneq *q) {
  Row *sub = &q->subr;
  for (;;) {
    Row *cur = &q->cur;
    if (!cur->var) return pair_closed(q);
    if (sub->nend < row_len(cur)) return subr_within_flanks(q);
    pair_left(q, cur->beg, take_left(sub, cur->nbeg), cur->nbeg);
    pair_right(q, cur->end, take_right(sub, cur->nend), cur->nend);
    if (sub->nend == 0) return DONE;
    if (!cur->var->solved) return subr_into_curvar(q);
    q->cur = *cur->var->solved;
  }
}

/* What subr's flanks leave of a closed cur bounds subr's unsolved variable. `as_written`:
 * this level is the constraint itself, which then already reads `cur >= variable`. */
static Step cur_over_subrvar(RowIneq *q, bool as_written) {
  RowVar *v = q->subr.var;
  if (q->cur.nend == 0) return set_row_empty(q->s, q->c, v) ? DONE : FAIL;
  if (as_written && !row_len(&q->subr)) return PENDING;
  q->c->r1 = row_closed(q->s, q->cur.nend, q->cur.end);
  q->c->r2 = row_of_var(q->s, v);
  return PROGRESS;
}

/* cur closed: the mirror image. subr's flanks must fit in cur at every level. */
static Step ineq_closed_cur(RowIneq *q) {
  Row *cur = &q->cur;
  for (bool as_written = true;; as_written = false) {
    Row *sub = &q->subr;
    if (!sub->var) return pair_closed(q);
    if (cur->nend < row_len(sub)) return fail_count(q, cur->nend, row_len(sub), true);
    pair_left(q, take_left(cur, sub->nbeg), sub->beg, sub->nbeg);
    pair_right(q, take_right(cur, sub->nend), sub->end, sub->nend);
    if (!sub->var->solved) return cur_over_subrvar(q, as_written);
    q->subr = *sub->var->solved;
  }
}

/* A row's top level with variable-only levels skipped: its own leftmost and rightmost
 * axes around a variable that may be solved. */
static Row *row_level(Row *r) {
  while (r->var && r->var->solved && !r->nbeg && !r->nend) r = r->var->solved;
  return r;
}

/* Drops the first nbeg and the last nend axes of an open view. */
static void view_drop(Row *r, int nbeg, int nend) {
  r->beg += nbeg, r->nbeg -= nbeg;
  r->nend -= nend;
}

/* Both open: pairs the flank axes both views have at each end; true if there were any. */
static bool pair_common_flanks(RowIneq *q) {
  Row *cur = &q->cur, *sub = &q->subr;
  int nbeg = cur->nbeg < sub->nbeg ? cur->nbeg : sub->nbeg;
  int nend = cur->nend < sub->nend ? cur->nend : sub->nend;
  pair_left(q, cur->beg, sub->beg, nbeg);
  pair_right(q, cur->end + cur->nend - nend, sub->end + sub->nend - nend, nend);
  view_drop(cur, nbeg, nend);
  view_drop(sub, nbeg, nend);
  return nbeg || nend;
}

/* Both open, common flanks paired: what is left at each end decides. `wait` is the
 * answer when nothing can be concluded yet. */
static Step open_leftovers(RowIneq *q, Step wait) {
  Row *cur = &q->cur, *sub = &q->subr;
  if (cur->var == sub->var) /* shifted flanks around one variable: as for equations, wait */
    return row_len(cur) || row_len(sub) ? wait : DONE;
  /* subr's extra rightmost axes land in cur's variable, unless cur has extra leftmost
   * axes they could also reach (when both variables end up short); the same for
   * subr's extra leftmost axes */
  if ((sub->nend && cur->nbeg) || (sub->nbeg && cur->nend)) return wait;
  if (row_len(sub)) return expand_rowvar(q->s, q->c, cur->var, sub->nbeg, sub->nend) ? PROGRESS : FAIL;
  return wait; /* subr's variable is bounded above by cur */
}

/* Both open: subr normalized, cur level by level of its structure (as for a closed
 * subr: a solved variable's axes are not cur's flanks). The constraint keeps what is
 * left. */
static Step ineq_open(RowIneq *q) {
  bool paired = false;
  for (;;) {
    paired |= pair_common_flanks(q);
    if (row_len(&q->cur) || !q->cur.var->solved) break;
    q->cur = *row_level(q->cur.var->solved);
  }
  Row *cur = &q->cur, *sub = &q->subr;
  q->c->r1 = row_open(q->s, cur->nbeg, cur->beg, cur->var, cur->nend, cur->end);
  q->c->r2 = row_open(q->s, sub->nbeg, sub->beg, sub->var, sub->nend, sub->end);
  return open_leftovers(q, paired ? PROGRESS : PENDING);
}

/* cur >= subr: by which sides are closed once solved variables are read through. */
static Step simp_row_ineq(Solver *s, Constraint *c) {
  int ncur, nsub;
  RowVar *curvar = row_peek(c->r1, &ncur), *subvar = row_peek(c->r2, &nsub);
  if (ncur > MAX_RANK || nsub > MAX_RANK) {
    /* a closed side written with too many axes (a spec of 70 axes) is not divergence */
    bool big_cur = ncur > MAX_RANK && !curvar;
    if (big_cur || (nsub > MAX_RANK && !subvar))
      solver_fail(s, c, "%s has %d axes, more than the %d a shape may have", what(big_cur ? c->what1 : c->what2),
                  big_cur ? ncur : nsub, MAX_RANK);
    else
      solver_fail(s, c, "shape constraints do not converge: a row grows beyond %d axes", MAX_RANK);
    return FAIL;
  }
  RowIneq q = {.s = s, .c = c};
  if (!subvar) {
    q.cur = *c->r1, q.subr = *row_norm(s, c->r2);
    return ineq_closed_subr(&q);
  }
  if (!curvar) {
    q.cur = *row_norm(s, c->r1), q.subr = *c->r2;
    return ineq_closed_cur(&q);
  }
  q.subr = *(c->r2 = row_norm(s, c->r2)), q.cur = *row_level(c->r1);
  return ineq_open(&q);
}

/* Total_elems over three rows: solves the last unknown dimension when it is alone. */
static Step simp_total(Solver *s, Constraint *c) {
  long long prod = 1;
  int nunknown = 0, nvars = 0;
  DimNode *unknown = NULL;
  for (int k = 0; k < 3; k++) {
    Row *r = c->rows[k] = row_norm(s, c->rows[k]);
    if (r->var) nvars++;
    for (int pass = 0; pass < 2; pass++) {
      int n = pass ? r->nend : r->nbeg;
      DimNode **d = pass ? r->end : r->beg;
      for (int i = 0; i < n; i++) {
        int sz = dim_size(d[i]);
        if (DIM_IS_DYN(sz)) {
          solver_fail(s, c, "%s has dynamic dimension %s: a literal or a file needs static sizes", what(c->what1),
                      dim_str(s, sz));
          return FAIL;
        }
        if (dim_is_known(d[i])) prod *= sz;
        else nunknown++, unknown = d[i];
        if (prod > (1LL << 40)) prod = 1LL << 40;
      }
    }
  }
  if (nvars) return PENDING;
  if (nunknown == 0) {
    if (prod == c->k) return DONE;
    solver_fail(s, c, "%s has %lld elements but its shape has %lld", what(c->what1), c->k, prod);
    return FAIL;
  }
  if (nunknown > 1 || (prod == 0 && c->k == 0)) return PENDING; /* 0 elements: any unknown fits */
  if (prod > 0 && c->k % prod == 0) return set_dim(s, c, unknown, c->k / prod, c->what1);
  solver_fail(s, c, "%s has %lld elements, not a multiple of %lld", what(c->what1), c->k, prod);
  return FAIL;
}

static Step simplify(Solver *s, Constraint *c) {
  switch (c->kind) {
  case C_DIM_EQ: return unify_dim(s, c, c->d1, c->d2);
  case C_DIM_INEQ: return simp_dim_ineq(s, c);
  case C_ROW_EQ: return simp_row_eq(s, c);
  case C_ROW_INEQ: return simp_row_ineq(s, c);
  case C_AT_LEAST: return simp_at_least(s, c);
  case C_TOTAL: return simp_total(s, c);
  case C_CONV: return simp_conv(s, c);
  }
  return PENDING;
}

/* ---------------------------------------------------------------- bounds */

/* An index of the pending dim inequalities by their subr root: the edges "subr <= cur"
 * between variables, rebuilt whenever bounds are queried (a snapshot). */
static void bounds_index(Solver *s) {
  int n = s->dims.len;
  s->up_head = realloc(s->up_head, sizeof *s->up_head * (size_t)(n + 1));
  s->up_mark = realloc(s->up_mark, sizeof *s->up_mark * (size_t)(n + 1));
  s->up_memo = realloc(s->up_memo, sizeof *s->up_memo * (size_t)(n + 1));
  s->up_lbl = realloc(s->up_lbl, sizeof *s->up_lbl * (size_t)(n + 1));
  for (int i = 0; i <= n; i++) s->up_head[i] = -1, s->up_mark[i] = 0;
  s->up_stamp = 0;
  s->up_n = 0;
  s->up_nodes = n;
  count_sweep(s, s->cons.len);
  for (int i = 0; i < s->cons.len; i++) {
    Constraint *c = VEC_AT(s->cons, Constraint, i);
    if (c->done || c->kind != C_DIM_INEQ) continue;
    DimNode *sub = dim_find(c->d2);
    if (sub->known) continue;
    if (s->up_n == s->up_cap) {
      s->up_cap = s->up_cap ? 2 * s->up_cap : 256;
      s->up_next = realloc(s->up_next, sizeof *s->up_next * (size_t)s->up_cap);
      s->up_to = realloc(s->up_to, sizeof *s->up_to * (size_t)s->up_cap);
    }
    s->up_to[s->up_n] = c->d1;
    s->up_next[s->up_n] = s->up_head[sub->id];
    s->up_head[sub->id] = s->up_n++;
  }
}

static void bounds_free(Solver *s) {
  free(s->up_head), free(s->up_mark), free(s->up_next), free(s->up_to), free(s->up_memo), free(s->up_lbl);
  s->up_lbl = NULL;
  s->up_head = s->up_mark = s->up_next = s->up_memo = NULL;
  s->up_to = NULL;
  s->up_n = s->up_cap = 0;
}

/* The upper bound of an unknown dim root through the indexed inequalities (transitive):
 * LUB_NONE none, n > 1, 0 (an empty axis) or a labelled 1 (q=1) a unique bound, an
 * unlabelled 1 when two different bounds force dimension 1.
 * *label receives the bound's label, if any. */
enum { LUB_NONE = INT_MIN }; /* not a size: 0 is one, negatives are DIM_DYN */

static int dim_lub_rec(Solver *s, DimNode *r) {
  if (r->id >= s->up_nodes) return LUB_NONE; /* created after the snapshot: no bound recorded */
  if (s->up_mark[r->id] == s->up_stamp) return s->up_memo[r->id]; /* done, or on the stack */
  s->up_mark[r->id] = s->up_stamp;
  s->up_memo[r->id] = LUB_NONE;
  s->up_lbl[r->id] = NULL;
  int lub = LUB_NONE;
  const char *label = NULL;
  for (int e = s->up_head[r->id]; e >= 0; e = s->up_next[e]) {
    DimNode *cur = dim_find(s->up_to[e]);
    int b;
    const char *bl = NULL;
    if (cur->known) {
      b = cur->d;
      if (b >= 0) bl = cur->label; /* a dynamic bound is checked at run time, unlabelled */
    } else {
      b = dim_lub_rec(s, cur);
      if (cur->id < s->up_nodes) bl = s->up_lbl[cur->id];
    }
    if (b == LUB_NONE) continue;
    if (lub == LUB_NONE) {
      lub = b;
      label = bl;
      continue;
    }
    /* Labels are part of the dimension (seed, "Representing shapes"): a3 and b3 are two
     * different bounds, and only 1 broadcasts into both, as for 3 and 5. An unlabelled 3
     * meeting a3 takes the label; a labelled 1 is no broadcast, so q=1 and 1 (or p=1)
     * leave the unlabelled 1, which broadcasts into both. */
    bool clash = bl && label && strcmp(bl, label);
    if (lub != b || clash) lub = 1, label = NULL;
    else if (b == 1) label = bl && label ? label : NULL;
    else if (!label) label = bl;
  }
  if (lub == LUB_NONE || DIM_IS_DYN(lub)) label = NULL;
  s->up_memo[r->id] = lub;
  s->up_lbl[r->id] = label;
  return lub;
}

/* One query; the memo (sizes and labels) lasts until the next bounds_index or a query
 * with `fresh` (after dims were solved). */
static int dim_lub_q(Solver *s, DimNode *d, const char **label, bool fresh) {
  if (label) *label = NULL;
  DimNode *r = dim_find(d);
  if (!s->up_head) return LUB_NONE;
  if (fresh) s->up_stamp++;
  int lub = dim_lub_rec(s, r);
  if (label && r->id < s->up_nodes) *label = s->up_lbl[r->id];
  return lub;
}

static int dim_lub(Solver *s, DimNode *d, const char **label) { return dim_lub_q(s, d, label, true); }
/* Within one sweep over a snapshot in which nothing is solved. */
static int dim_lub_memo(Solver *s, DimNode *d, const char **label) { return dim_lub_q(s, d, label, false); }

/* The dim roots a pending fixed index or convolution constrains, marked by id. */
static char *constrained_dims(Solver *s) {
  char *mark = calloc((size_t)s->dims.len + 1, 1);
  for (int i = 0; i < s->cons.len; i++) {
    Constraint *c = VEC_AT(s->cons, Constraint, i);
    if (c->done || (c->kind != C_AT_LEAST && c->kind != C_CONV)) continue;
    mark[dim_find(c->d1)->id] = 1;
    if (c->kind == C_CONV) mark[dim_find(c->d2)->id] = mark[dim_find(c->d3)->id] = 1;
  }
  return mark;
}

/* Two different sizes above a variable force it to 1 (a dimension broadcasts only from 1). */
static bool force_conflicting_bounds(Solver *s) {
  if (s->fcb_epoch == s->dim_epoch + 1) return false; /* nothing it reads changed since it found nothing */
  bool progress = false;
  bounds_index(s);
  s->up_stamp++; /* one memo for the whole sweep: linear */
  count_sweep(s, s->dims.len);
  for (int i = 0; i < s->dims.len && !s->failed; i++) {
    DimNode *d = VEC_AT(s->dims, DimNode, i);
    if (d->parent || d->known || d->id >= s->up_nodes || s->up_head[d->id] < 0) continue;
    const char *label;
    if (dim_lub_q(s, d, &label, false) == 1 && !label) { /* q=1 alone is one bound, not two */
      set_dim(s, NULL, d, 1, "two different broadcast targets");
      progress = true;
    }
  }
  if (!progress) s->fcb_epoch = s->dim_epoch + 1;
  return progress;
}

/* The dims a dynamic size stands for: a join's parts, else itself (ids, into out). */
static int join_parts(const Solver *s, int d, int *out) {
  const DimSym *ds = VEC_AT(s->g->dimsyms, DimSym, DIM_DYN_ID(d));
  if (!ds->njoin) {
    out[0] = DIM_DYN_ID(d);
    return 1;
  }
  memcpy(out, ds->join, sizeof(int) * (size_t)ds->njoin);
  return ds->njoin;
}

static int cmp_int(const void *a, const void *b) { return *(const int *)a - *(const int *)b; }

/* The size of a result over the different dynamic sizes a and b (the seed's `? vs ?`):
 * their join, the largest of their parts at run time, made once per set of parts (so
 * the projections' second solve finds the first's). loc: the operation. */
static int dyn_join(Solver *s, int a, int b, Loc loc) {
  int *parts = ANEWN(s->a, int, 2 * s->g->dimsyms.len + 2);
  int n = join_parts(s, a, parts);
  n += join_parts(s, b, parts + n);
  qsort(parts, (size_t)n, sizeof(int), cmp_int);
  int k = 0;
  for (int i = 0; i < n; i++)
    if (!k || parts[k - 1] != parts[i]) parts[k++] = parts[i];
  if (k == 1) return DIM_DYN(parts[0]);
  for (int i = 0; i < s->g->dimsyms.len; i++) {
    const DimSym *o = VEC_AT(s->g->dimsyms, DimSym, i);
    if (o->njoin == k && !memcmp(o->join, parts, sizeof(int) * (size_t)k)) return DIM_DYN(i);
  }
  DimSym *j = ANEW(s->a, DimSym);
  j->id = s->g->dimsyms.len;
  j->loc = loc;
  j->njoin = k;
  j->join = parts;
  const char *name = "max(";
  for (int i = 0; i < k; i++) name = arena_printf(s->a, "%s%s%s", name, i ? "," : "", dim_str(s, DIM_DYN(parts[i])));
  j->name = arena_printf(s->a, "%s)", name);
  vec_push(s->a, &s->g->dimsyms, j);
  return DIM_DYN(j->id);
}

static void bounds_index(Solver *s);

/* dyn_lower_bounds' work: per dim id, whether it is to be decided (from: a dynamic
 * size below it, for messages), the join of the sizes below it so far, and how many
 * undecided dims below it it waits for. */
typedef struct DynPlan {
  int n, *size, *wait, *order, norder;
  DimNode **from;
} DynPlan;

static void dyn_below(Solver *s, DynPlan *p, int id, int d, DimNode *from, Loc loc) {
  if (!p->from[id]) p->order[p->norder++] = id, p->from[id] = from;
  if (!p->size[id]) p->size[id] = d;
  else if (p->size[id] != d && s->g) p->size[id] = dyn_join(s, p->size[id], d, loc);
}

/* The dims to decide: those over a pending dynamic lower bound, and every unknown dim
 * above one of them through pending bounds (it gets their sizes once they are decided);
 * each counts the ones below it. */
static void dyn_plan(Solver *s, DynPlan *p) {
  for (int i = 0; i < s->dyn_lower.len; i++) {
    Constraint *c = VEC_AT(s->dyn_lower, Constraint, i);
    DimNode *cur = dim_find(c->d1), *sub = dim_find(c->d2);
    if (!c->done && !cur->known && DIM_IS_DYN(sub->d)) dyn_below(s, p, cur->id, sub->d, sub, c->step ? c->step->loc : (Loc){0});
  }
  for (int i = 0; i < p->norder; i++) /* grows while it runs: the dims above */
    for (int e = s->up_head[p->order[i]]; e >= 0; e = s->up_next[e]) {
      DimNode *up = dim_find(s->up_to[e]);
      if (up->known || up->id >= p->n || up->id == p->order[i]) continue;
      if (!p->from[up->id]) p->order[p->norder++] = up->id, p->from[up->id] = p->from[p->order[i]];
      p->wait[up->id]++;
    }
}

/* An unknown dimension above a dynamic one and nothing static (doc/inference.md,
 * "Dynamic dimensions"): decided when stage 1 has seen every operation (so a later
 * operation's static bound still wins) and at each closing stage's fixpoint: it takes
 * the dynamic size, or the join of the different dynamic sizes below it, directly or
 * through other undecided dims, which are decided first (in topological order of the
 * pending bounds, operation order among the ready ones); each lower bound becomes a
 * check (1 or that size). */
static bool dyn_lower_bounds(Solver *s) {
  if (s->online || !s->dyn_lower.len) return false;
  bounds_index(s);
  int n = s->dims.len;
  DynPlan p = {.n = n, .size = calloc((size_t)n + 1, sizeof(int)), .wait = calloc((size_t)n + 1, sizeof(int)),
               .order = malloc(sizeof(int) * ((size_t)n + 1)), .from = calloc((size_t)n + 1, sizeof(DimNode *))};
  int *ready = malloc(sizeof(int) * ((size_t)n + 1)), nready = 0, head = 0;
  if (p.size && p.wait && p.order && p.from && ready) dyn_plan(s, &p);
  for (int i = 0; ready && i < p.norder; i++)
    if (!p.wait[p.order[i]]) ready[nready++] = p.order[i];
  while (ready && !s->failed) { /* each round decides one */
    int id = -1;
    while (head < nready && id < 0)
      if (!dim_find(VEC_AT(s->dims, DimNode, ready[head++]))->known) id = ready[head - 1];
    for (int i = 0; i < p.norder && id < 0; i++) /* a cycle of pending bounds: the first one left */
      if (!dim_find(VEC_AT(s->dims, DimNode, p.order[i]))->known && p.size[p.order[i]]) id = p.order[i];
    if (id < 0) break;
    DimNode *k = dim_known(s, p.size[id], NULL);
    k->origin = p.from[id]->origin;
    unify_dim(s, NULL, VEC_AT(s->dims, DimNode, id), k);
    for (int e = s->up_head[id]; e >= 0; e = s->up_next[e]) {
      DimNode *up = dim_find(s->up_to[e]);
      if (up->known || up->id >= n || !p.from[up->id]) continue;
      dyn_below(s, &p, up->id, p.size[id], p.from[id], (Loc){0});
      if (--p.wait[up->id] == 0) ready[nready++] = up->id;
    }
  }
  bool progress = p.norder > 0;
  free(p.size), free(p.wait), free(p.order), free(p.from), free(ready);
  s->dyn_lower.len = 0;
  return progress;
}

/* ---------------------------------------------------------------- fixpoint */

static void watch_dim(Solver *s, Constraint *c, DimNode *d) {
  if (d) vec_push(s->a, &dim_find(d)->watch, c);
}

static void watch_row(Solver *s, Constraint *c, Row *r) {
  RowVar *v = r ? row_peek(r, NULL) : NULL;
  if (v) vec_push(s->a, &v->watch, c);
}

/* A pending constraint's outcome depends only on these: the roots of its dims, the
 * unsolved variables of its rows (row rules look at the rows' structure, not at sizes). */
static void watch(Solver *s, Constraint *c) {
  switch (c->kind) {
  case C_DIM_EQ:
  case C_DIM_INEQ:
  case C_AT_LEAST:
  case C_CONV:
    watch_dim(s, c, c->d1), watch_dim(s, c, c->d2), watch_dim(s, c, c->d3);
    break;
  case C_ROW_EQ:
  case C_ROW_INEQ:
    watch_row(s, c, c->r1), watch_row(s, c, c->r2);
    break;
  case C_TOTAL:
    for (int k = 0; k < 3; k++) {
      Row *r = row_norm(s, c->rows[k]);
      watch_row(s, c, r);
      for (int i = 0; i < r->nbeg; i++) watch_dim(s, c, r->beg[i]);
      for (int i = 0; i < r->nend; i++) watch_dim(s, c, r->end[i]);
    }
    break;
  }
}

/* Drops discharged constraints from the list the closing stages scan (amortized). */
static void compact(Solver *s) {
  if (2 * s->ndone < s->cons.len) return;
  int j = 0;
  for (int i = 0; i < s->cons.len; i++) {
    Constraint *c = VEC_AT(s->cons, Constraint, i);
    if (!c->done) s->cons.items[j++] = c;
  }
  s->cons.len = j;
  s->ndone = 0;
}

/* A closing round's log (Solver.logging): c is about to change; the variables it has
 * now may lose their last role in it (closing rounds, below). */
static void log_touch(Solver *s, Constraint *c) {
  vec_push(s->a, &s->log_cons, c);
  RowVar *a = row_peek(c->r1, NULL), *b = row_peek(c->r2, NULL);
  if (a) vec_push(s->a, &s->log_vars, a);
  if (b) vec_push(s->a, &s->log_vars, b);
}

bool solver_run(Solver *s) {
  while (!s->failed) {
    while (s->qhead < s->queue.len && !s->failed) {
      Constraint *c = VEC_AT(s->queue, Constraint, s->qhead++);
      c->queued = false;
      if (c->done) continue;
      if (++s->work, over_work_limit(s)) {
        solver_fail(s, c, "shape inference does not converge (%s vs %s)", what(c->what1), what(c->what2));
        break;
      }
      if (s->logging && c->kind == C_ROW_INEQ) log_touch(s, c);
      Step r = simplify(s, c);
      if (r == DONE) c->done = true, s->ndone++, s->dim_epoch += c->kind == C_DIM_INEQ;
      else if (r == PENDING) watch(s, c);
      else if (r == PROGRESS) enqueue(s, c);
    }
    s->qhead = s->queue.len = 0;
    if (s->failed) break;
    compact(s);
    if (dyn_lower_bounds(s)) continue;
    if (s->online || !force_conflicting_bounds(s)) break;
  }
  return !s->failed;
}

/* ---------------------------------------------------------------- closing stages */

static void fail_result_only(Solver *s, const Origin *o) {
  s->failed = true;
  diag_error(s->diag, o->loc, "%s occurs in no argument and nothing determines its size", o->what);
  diag_note(s->diag, o->loc, "a misspelled axis? a new result axis needs a size from another use of the result");
}

/* An undetermined einsum result axis is the likelier root cause of an undetermined
 * parameter dimension (a misspelled axis leaves both). */
static const Origin *any_result_only(Solver *s) {
  for (int i = 0; i < s->dims.len; i++) {
    DimNode *d = VEC_AT(s->dims, DimNode, i);
    if (!d->parent && !d->known && d->result_only) return d->result_only;
  }
  return NULL;
}

/* A lonely einsum axis at or above r (through the pending inequalities), if any. */
static const Origin *lonely_above(Solver *s, DimNode *r) {
  if (r->lonely) return r->lonely;
  if (r->id >= s->up_nodes || s->up_mark[r->id] == s->up_stamp) return NULL;
  s->up_mark[r->id] = s->up_stamp;
  for (int e = s->up_head[r->id]; e >= 0; e = s->up_next[e]) {
    DimNode *cur = dim_find(s->up_to[e]); /* stage 7 may have closed it to 1 already */
    const Origin *o = cur->known ? cur->lonely : lonely_above(s, cur);
    if (o) return o;
  }
  return NULL;
}

/* Starts a parameter error: false when an error is already out or an undetermined einsum
 * result axis (the likelier root cause) was reported instead. */
static bool param_fail_begin(Solver *s) {
  if (s->failed) return false;
  const Origin *ro = any_result_only(s);
  if (ro) {
    fail_result_only(s, ro);
    return false;
  }
  s->failed = true;
  return true;
}

static void fail_param(Solver *s, DimNode *d) {
  if (!param_fail_begin(s)) return;
  Tensor *t = d->owner;
  bounds_index(s);
  s->up_stamp++;
  const Origin *lonely = lonely_above(s, dim_find(d));
  if (lonely) {
    diag_error(s->diag, lonely->loc, "%s and nothing determines its size (a dimension of parameter '%s')",
               lonely->what, t->name ? t->name : "?");
    diag_note(s->diag, lonely->loc, "a misspelled axis?");
    return;
  }
  diag_error(s->diag, t->loc, "cannot infer a dimension of parameter '%s': nothing determines it%s%s",
             t->name ? t->name : "?", d->origin.what ? " (" : "", d->origin.what ? d->origin.what : "");
  if (d->origin.what && d->origin.what[0]) diag_note(s->diag, t->loc, "declare it, e.g. with o = [ ... ] or i = [ ... ]");
}

/* A parameter's output row that nothing bounds would close to no axes (tdsl(7), SHAPES AND INFERENCE:
 * an error naming the parameter; a tensor's output row is never empty by default). */
static void fail_param_row(Solver *s, RowVar *v) {
  if (!param_fail_begin(s)) return;
  Tensor *t = v->owner;
  diag_error(s->diag, t->loc, "cannot infer the output axes of parameter '%s': nothing determines them",
             t->name ? t->name : "?");
  diag_note(s->diag, t->loc, "declare them, e.g. with o = [ ... ], or use the result where its shape is known");
}

/* Whether r or a variable above it (transitively) met a dimension-1 axis: then 1 is
 * what the program says (e.g. w3's output in the moons example of tdsl(7), broadcast with
 * moons_class's 1), not a guess. */
static bool meets_one_rec(Solver *s, DimNode *r) {
  if (r->meets_one) return true;
  if (r->id >= s->up_nodes) return false;
  s->up_mark[r->id] = s->up_stamp;
  for (int e = s->up_head[r->id]; e >= 0; e = s->up_next[e]) {
    DimNode *cur = dim_find(s->up_to[e]);
    if (s->up_mark[cur->id] != s->up_stamp && meets_one_rec(s, cur)) return true;
  }
  return false;
}

static bool meets_one(Solver *s, DimNode *r) {
  bounds_index(s);
  s->up_stamp++;
  return meets_one_rec(s, dim_find(r));
}

/* Sets an unknown dim root to 1 by default (parameters must be determined). */
static void default_dim_one(Solver *s, DimNode *r) {
  if (r->result_only && !s->failed && !meets_one(s, r)) {
    fail_result_only(s, r->result_only);
    return;
  }
  if (r->owner && r->owner->kind == TK_PARAM && !meets_one(s, r)) {
    fail_param(s, r);
    return;
  }
  set_dim(s, NULL, r, 1, NULL);
}

/* The row variables standing in a Total_elems constraint's place (stage 3 leaves them
 * to stage 5), marked by variable id. */
static char *total_carriers(Solver *s) {
  char *mark = calloc((size_t)s->rvars.len + 1, 1);
  count_sweep(s, s->cons.len);
  for (int i = 0; i < s->cons.len; i++) {
    Constraint *c = VEC_AT(s->cons, Constraint, i);
    if (c->done || c->kind != C_TOTAL || !c->total_var) continue;
    RowVar *t = row_peek(row_of_var(s, c->total_var), NULL);
    if (t) mark[t->id] = 1;
  }
  return mark;
}

/* The pending inequalities `cur >= v` with v a bare row variable, indexed by v: the
 * least upper bounds of rows (stage 3). memo: -2 not computed, -3 on the stack. */
typedef struct RowBounds {
  int *head, *next, *memo;
  bool strict; /* a bound with an open variable counts only once that variable's is known */
} RowBounds;

enum { ROW_UNDECIDED = -4 }; /* strict: a bound waits for a variable still open */

static RowBounds row_bounds(Solver *s, bool strict) {
  RowBounds b = {malloc(sizeof(int) * ((size_t)s->rvars.len + 1)), malloc(sizeof(int) * ((size_t)s->cons.len + 1)),
                 malloc(sizeof(int) * ((size_t)s->rvars.len + 1)), strict};
  count_sweep(s, s->cons.len + s->rvars.len);
  for (int i = 0; i < s->rvars.len; i++) b.head[i] = -1, b.memo[i] = -2;
  for (int i = 0; i < s->cons.len; i++) {
    Constraint *c = VEC_AT(s->cons, Constraint, i);
    int ns;
    RowVar *v = c->done || c->kind != C_ROW_INEQ ? NULL : row_peek(c->r2, &ns);
    if (!v || ns) continue;
    b.next[i] = b.head[v->id];
    b.head[v->id] = i;
  }
  return b;
}

static void row_bounds_free(RowBounds *b) { free(b->head), free(b->next), free(b->memo); }

/* Number of known axes of the least upper bound of row variable v: -1 when none. Not
 * strict, a bound `beg ++ w ++ end` with w open counts its known axes (w as if empty);
 * strict, it counts w's bound too, and one that waits for w makes v's ROW_UNDECIDED. */
static int row_lub_len(Solver *s, RowBounds *b, RowVar *v) {
  if (b->memo[v->id] != -2) return b->memo[v->id] == -3 ? (b->strict ? ROW_UNDECIDED : -1) : b->memo[v->id];
  b->memo[v->id] = -3;
  int best = -1;
  bool empty = false; /* bounded by a row of no axes: the least upper bound of none */
  bool undecided = false;
  for (int e = b->head[v->id]; e >= 0; e = b->next[e]) {
    Constraint *c = VEC_AT(s->cons, Constraint, e);
    int n;
    RowVar *cv = row_peek(c->r1, &n);
    if (cv && b->strict) {
      int m = row_lub_len(s, b, cv);
      if (m < 0) {
        undecided = true;
        continue;
      }
      n += m;
    } else if (n == 0 && cv) n = row_lub_len(s, b, cv);
    empty = empty || n == 0;
    if (n <= 0) continue;
    if (best < 0 || n < best) best = n;
  }
  if (undecided) return b->memo[v->id] = ROW_UNDECIDED;
  return b->memo[v->id] = best < 0 && empty ? 0 : best;
}

static DimNode *root_or_null(DimNode *d) {
  DimNode *r = dim_find(d);
  return r->known ? NULL : r;
}

/* Stage 2: terminal dims with no upper bound and no other constraint become 1. A pending
 * inequality with an unknown dim below is such a constraint: `{ w } * p` makes w's input
 * axis the larger side over p's output axis, and while p's axis waits for a row variable
 * that closes only later (stage 6: `y ++ "a, ..c.. => a, ..c.."` over a computed y), the
 * size it gets is w's, not 1 (closing w's axis to 1 here forced p's to 1: a rank error
 * on a valid program, or "nothing determines" a parameter's dimension). */
static bool stage2(Solver *s) {
  PtrVec todo = {0};
  bounds_index(s);
  s->up_stamp++;
  char *constrained = constrained_dims(s);
  count_sweep(s, s->cons.len + s->dims.len);
  for (int i = 0; i < s->cons.len; i++) {
    Constraint *c = VEC_AT(s->cons, Constraint, i);
    if (!c->done && c->kind == C_DIM_INEQ && !dim_find(c->d2)->known) constrained[dim_find(c->d1)->id] = 1;
  }
  for (int i = 0; i < s->dims.len; i++) {
    DimNode *d = VEC_AT(s->dims, DimNode, i);
    DimNode *r = root_or_null(d);
    if (!r || r != d || !r->terminal) continue;
    if (dim_lub_memo(s, r, NULL) != LUB_NONE || constrained[r->id]) continue;
    vec_push(s->a, &todo, r);
  }
  free(constrained);
  for (int i = 0; i < todo.len && !s->failed; i++)
    if (root_or_null(VEC_AT(todo, DimNode, i))) default_dim_one(s, VEC_AT(todo, DimNode, i));
  return todo.len > 0;
}

/* Whether v, about to close to no axes, is all a parameter's output row would have. */
static bool param_output_unbounded(Solver *s, RowVar *v) {
  Tensor *t = v->owner;
  if (v->kind != KIND_OUTPUT || !t || t->kind != TK_PARAM || t->decl[KIND_OUTPUT].given) return false;
  StepInfo *in = info_of(s, t->step);
  int n;
  return in && in->slot_row[0][KIND_OUTPUT] && row_peek(in->slot_row[0][KIND_OUTPUT], &n) == v && n == 0;
}

/* Stage 3: terminal dims and rows take their least upper bounds; rows without one
 * get no further axes (except the carrier of a Total_elems constraint). */
static bool stage3_rows(Solver *s, bool strict);

static bool stage3(Solver *s) {
  bool changed = false;
  int n = s->dims.len;
  int *lub = malloc(((size_t)n + 1) * sizeof *lub);
  const char **labels = calloc((size_t)n + 1, sizeof *labels);
  count_sweep(s, n);
  bounds_index(s);
  s->up_stamp++;
  for (int i = 0; i < n; i++) {
    DimNode *d = VEC_AT(s->dims, DimNode, i);
    lub[i] = LUB_NONE;
    if (!d->parent && !d->known && d->terminal) lub[i] = dim_lub_memo(s, d, &labels[i]);
  }
  for (int i = 0; i < n && !s->failed; i++) {
    DimNode *d = VEC_AT(s->dims, DimNode, i);
    if (lub[i] == LUB_NONE || !root_or_null(d)) continue;
    const char *label = lub[i] >= 0 ? labels[i] : NULL; /* q=1 too: a bound of its own */
    if (DIM_IS_DYN(lub[i]) || lub[i] == 0) unify_dim(s, NULL, d, dim_known(s, lub[i], NULL));
    else set_dim(s, NULL, d, lub[i], NULL);
    if (label && !dim_find(d)->label) dim_find(d)->label = label, s->dim_epoch++;
    changed = true;
  }
  free(lub);
  free(labels);
  return stage3_rows(s, false) || changed;
}

/* Stage 3's rows. Strict (stage 3a): only the rows whose least upper bound is fully
 * known close, and none closes for want of one. */
static bool stage3_rows(Solver *s, bool strict) {
  bool changed = false;
  int nr = s->rvars.len;
  RowBounds rb = row_bounds(s, strict);
  char *carrier = total_carriers(s);
  count_sweep(s, 2 * nr);
  /* Rows with a least upper bound close first; those without one wait for the next
   * round's fixpoint. Closed from one snapshot, `{ d } =: p` emptied d's open row
   * while p's took its bound (p broadcast into an einsum), and d >= p then failed. */
  bool bounded = false;
  for (int i = 0; i < nr && !bounded; i++) {
    RowVar *v = VEC_AT(s->rvars, RowVar, i);
    bounded = !v->solved && v->terminal && row_lub_len(s, &rb, v) >= 0;
  }
  for (int i = 0; i < nr && !s->failed; i++) {
    RowVar *v = VEC_AT(s->rvars, RowVar, i);
    if (v->solved || !v->terminal) continue;
    int len = row_lub_len(s, &rb, v);
    if (strict && len < 0) continue;
    if (len < 0 && bounded) continue;
    if (len < 0 && carrier[v->id]) continue;
    if (len < 0 && param_output_unbounded(s, v)) {
      fail_param_row(s, v);
      break;
    }
    if (len < 0) len = 0;
    DimNode *dims[MAX_RANK];
    for (int j = 0; j < len && j < MAX_RANK; j++) dims[j] = dim_for_rowvar(s, v);
    rowvar_set(s, v, row_closed(s, len < MAX_RANK ? len : MAX_RANK, dims));
    changed = true;
  }
  row_bounds_free(&rb);
  free(carrier);
  return changed;
}

/* Stage 4: dims read at fixed indices take their LUB, else the lower bound. */
static bool stage4(Solver *s) {
  bool changed = false;
  count_sweep(s, s->cons.len);
  for (int i = 0; i < s->cons.len && !s->failed; i++) {
    Constraint *c = VEC_AT(s->cons, Constraint, i);
    if (c->done || c->kind != C_AT_LEAST) continue;
    DimNode *r = root_or_null(c->d1);
    if (!r) continue;
    bounds_index(s);
    int lub = dim_lub(s, r, NULL);
    set_dim(s, c, r, lub > 1 && lub >= c->k ? lub : c->k, "a fixed index");
    changed = true;
  }
  return changed;
}

/* Stage 5: Total_elems with a still-unknown carrier row. */
static bool stage5(Solver *s) {
  bool changed = false;
  count_sweep(s, s->cons.len);
  for (int i = 0; i < s->cons.len && !s->failed; i++) {
    Constraint *c = VEC_AT(s->cons, Constraint, i);
    if (c->done || c->kind != C_TOTAL || !c->total_var) continue;
    RowVar *v = row_norm(s, row_of_var(s, c->total_var))->var;
    if (!v) continue;
    long long prod = 1;
    bool known = true;
    for (int k = 0; k < 3; k++) {
      Row *r = row_norm(s, c->rows[k]);
      if (r->var && r->var != v) known = false;
      for (int j = 0; j < row_len(r); j++) { /* capped: the element count is below 2^63 */
        long long d = dim_size(j < r->nbeg ? r->beg[j] : r->end[j - r->nbeg]);
        if (__builtin_mul_overflow(prod, d, &prod) || prod > (1LL << 62)) prod = 1LL << 62;
      }
    }
    if (!known || prod <= 0) continue;
    if (prod == c->k) set_row_empty(s, c, v);
    else if (c->k % prod == 0) {
      DimNode *d = dim_for_rowvar(s, v);
      solve_rowvar(s, c, v, row_closed(s, 1, &d));
      set_dim(s, c, d, c->k / prod, c->what1);
    } else {
      solver_fail(s, c, "%s has %lld elements, not a multiple of %lld", what(c->what1), c->k, prod);
    }
    changed = true;
  }
  return changed;
}

/* Stage 3a (solver_close): per row variable, whether it may still gain axes from below
 * (a smaller side with axes beyond its flanks, or a variable that may), propagated up
 * the inequalities between variables by a work list; a variable that is all of its row
 * over another is kept too, without propagating (w * x's output over w's: w takes its
 * bound from above through it). calloc'd, one flag per variable. */
static char *may_gain_axes(Solver *s) {
  int nv = s->rvars.len, nc = s->cons.len;
  char *grows = calloc((size_t)nv + 1, 1), *blocked = calloc((size_t)nv + 1, 1);
  int *head = malloc(sizeof(int) * ((size_t)nv + 1)), *next = malloc(sizeof(int) * ((size_t)nc + 1));
  int *to = malloc(sizeof(int) * ((size_t)nc + 1)), *work = malloc(sizeof(int) * ((size_t)nv + 1));
  int nwork = 0;
  s->nseeds = 0; /* recounted: the closing rounds keep it up to date from here */
  for (int i = 0; i < nv; i++) head[i] = -1;
  count_sweep(s, nv + nc);
  for (int i = 0; i < nc; i++) {
    Constraint *c = VEC_AT(s->cons, Constraint, i);
    if (c->done || c->kind != C_ROW_INEQ) continue;
    Row *r = row_norm(s, c->r1), *sub = row_norm(s, c->r2);
    c->seed = r->var && row_len(sub) > row_len(r);
    s->nseeds += c->seed;
    if (!r->var) continue;
    if (c->seed && !grows[r->var->id]) grows[r->var->id] = 1, work[nwork++] = r->var->id;
    if (!row_len(r) && sub->var) blocked[r->var->id] = 1;
    if (sub->var && sub->var != r->var) { /* an edge sub -> cur */
      to[i] = r->var->id, next[i] = head[sub->var->id];
      head[sub->var->id] = i;
    }
  }
  while (nwork > 0) {
    int v = work[--nwork];
    for (int e = head[v]; e >= 0; e = next[e])
      if (!grows[to[e]]) grows[to[e]] = 1, work[nwork++] = to[e];
  }
  for (int i = 0; i < nv; i++) grows[i] = grows[i] || blocked[i];
  free(head), free(next), free(to), free(work), free(blocked);
  return grows;
}

/* Stage 6: row variables in remaining inequalities get no further axes. First those
 * that only ever appear on the smaller (subr) side, which lets the larger sides grow to
 * fit them, repeatedly; then all the others. `leftovers` (stage 3a): only computed
 * rows' variables, and "only subr" widens to "nothing can give it axes" (below). */
static PtrVec stage6_todo(Solver *s, bool only_subr, bool leftovers) {
  char *on_cur = calloc((size_t)s->rvars.len + 1, 1);
  PtrVec todo = {0};
  count_sweep(s, 2 * s->cons.len);
  for (int i = 0; i < s->cons.len; i++) {
    Constraint *c = VEC_AT(s->cons, Constraint, i);
    if (c->done || c->kind != C_ROW_INEQ) continue;
    Row *r = row_norm(s, c->r1);
    if (r->var) on_cur[r->var->id] = 1;
  }
  if (leftovers) {
    free(on_cur);
    on_cur = may_gain_axes(s);
  }
  for (int i = 0; i < s->cons.len; i++) {
    Constraint *c = VEC_AT(s->cons, Constraint, i);
    if (c->done || c->kind != C_ROW_INEQ) continue;
    for (int side = 0; side < 2; side++) {
      Row *r = row_norm(s, side ? c->r2 : c->r1);
      if (r->var && (!only_subr || (side == 1 && !on_cur[r->var->id])) && !(leftovers && r->var->terminal))
        vec_push(s->a, &todo, c);
    }
  }
  free(on_cur);
  return todo;
}

/* Closes the variables of the sides of todo's constraints that stage6_todo chose. */
static bool stage6_close(Solver *s, const PtrVec *todo, bool only_subr, bool leftovers) {
  bool changed = false;
  for (int i = 0; i < todo->len && !s->failed; i++) {
    Constraint *c = VEC_AT(*todo, Constraint, i);
    for (int side = 1; side >= 0; side--) {
      if (only_subr && side == 0) continue;
      Row *r = row_norm(s, side ? c->r2 : c->r1);
      if (r->var && !r->var->solved && !(leftovers && r->var->terminal)) {
        set_row_empty(s, c, r->var);
        changed = true;
      }
    }
  }
  return changed;
}

static bool stage6_pass(Solver *s, bool only_subr, bool leftovers) {
  PtrVec todo = stage6_todo(s, only_subr, leftovers);
  return stage6_close(s, &todo, only_subr, leftovers);
}

/* ---------------------------------------------------------------- closing rounds
 *
 * Stages 3a and 6 close a chain of row variables one layer per round (a stack of d
 * layers: ~3d rounds), and each round decides from the whole state. Sweeping every
 * constraint per round made them O(depth x constraints). A round after the first
 * re-examines only what can have changed since the previous one: the row inequalities
 * simplified since then (Solver.log_cons: a solved variable wakes every constraint
 * that reads it) and the constraints watching a variable one of them had before
 * (log_vars: it may have lost its last role in them). Everything else is as that
 * round left it, and that round closed whatever qualified. Decisions are then taken in
 * creation order (Constraint.seq) and by variable id, as the sweeps took them, so fresh
 * ids, later constraints and messages come out the same. */

typedef struct Round {
  bool swept;        /* the first round sweeps; later ones read the log from here: */
  int cons, vars;
  bool seeded;       /* 3a: the last round's may_gain_axes had seeds, whose reach is not
                        local: the next round sweeps too */
} Round;

static void rounds_begin(Solver *s) {
  s->logging = true;
  s->log_cons.len = s->log_vars.len = 0;
}

static void round_swept(Solver *s, Round *rd) {
  rd->swept = true;
  rd->cons = s->log_cons.len, rd->vars = s->log_vars.len;
}

static void round_add(Solver *s, PtrVec *out, Constraint *c) {
  s->visits++;
  if (c->stamp == s->stamp || c->done || c->kind != C_ROW_INEQ) return;
  c->stamp = s->stamp;
  vec_push(s->a, out, c);
}

/* Whether c gives its larger side's variable axes (may_gain_axes' seeds); keeps
 * Solver.nseeds, the pending ones, up to date. */
static void seed_update(Solver *s, Constraint *c) {
  bool now = false;
  if (!c->done) {
    Row *r = row_norm(s, c->r1), *sub = row_norm(s, c->r2);
    now = r->var && row_len(sub) > row_len(r);
  }
  s->nseeds += now - c->seed;
  c->seed = now;
}

/* The pending row inequalities a round re-examines (the log since rd, deduplicated). */
static PtrVec round_cands(Solver *s, Round *rd) {
  PtrVec out = {0};
  s->stamp++;
  for (int i = rd->cons; i < s->log_cons.len; i++) {
    Constraint *c = VEC_AT(s->log_cons, Constraint, i);
    seed_update(s, c);
    round_add(s, &out, c);
  }
  for (int i = rd->vars; i < s->log_vars.len; i++) {
    RowVar *v = VEC_AT(s->log_vars, RowVar, i);
    if (v->stamp == s->stamp) continue;
    v->stamp = s->stamp;
    for (int j = 0; j < v->watch.len; j++) round_add(s, &out, VEC_AT(v->watch, Constraint, j));
  }
  rd->cons = s->log_cons.len, rd->vars = s->log_vars.len;
  return out;
}

/* Whether a pending row inequality has v as its larger side's variable (stage6_pass's
 * on_cur) or, `bare`, as all of its larger side over a side with a variable
 * (may_gain_axes' blocked). Such constraints watch v: a pending constraint watches the
 * unsolved variables of its rows. */
static bool v_on_cur(Solver *s, RowVar *v, bool bare) {
  for (int j = 0; j < v->watch.len; j++) {
    Constraint *c = VEC_AT(v->watch, Constraint, j);
    int n;
    s->visits++;
    if (c->done || c->kind != C_ROW_INEQ || row_peek(c->r1, &n) != v) continue;
    if (!bare || (n == 0 && row_peek(c->r2, NULL))) return true;
  }
  return false;
}

static int cmp_seq(const void *a, const void *b) {
  const Constraint *x = *(Constraint *const *)a, *y = *(Constraint *const *)b;
  return (x->seq > y->seq) - (x->seq < y->seq);
}

/* stage6_pass(s, true, leftovers) after the first round: the candidates' smaller side's
 * variable closes when nothing above it still waits (stage 6: it is on no larger side;
 * 3a: it may gain no axes, which without seeds is "not blocked", else a sweep). */
static bool close_subr_round(Solver *s, Round *rd, bool leftovers) {
  PtrVec cand = {0}, todo = {0};
  if (rd->swept) cand = round_cands(s, rd);
  if (!rd->swept || (leftovers && (s->nseeds > 0 || rd->seeded))) {
    round_swept(s, rd);
    bool changed = stage6_pass(s, true, leftovers);
    rd->seeded = leftovers && s->nseeds > 0;
    return changed;
  }
  for (int i = 0; i < cand.len; i++) {
    Constraint *c = VEC_AT(cand, Constraint, i);
    RowVar *v = row_norm(s, c->r2)->var;
    if (v && !(leftovers && v->terminal) && !v_on_cur(s, v, leftovers)) vec_push(s->a, &todo, c);
  }
  if (todo.len) qsort(todo.items, (size_t)todo.len, sizeof *todo.items, cmp_seq);
  return stage6_close(s, &todo, true, leftovers);
}

/* row_lub_len, strict, reading v's bounds from its watch list; RowVar.lub keeps the
 * result between rounds (stage3_strict_round recomputes where it may change). */
static int lub_strict(Solver *s, RowVar *v) {
  if (v->lub != LUB_UNSET) return v->lub == LUB_ON_STACK ? ROW_UNDECIDED : v->lub;
  v->lub = LUB_ON_STACK;
  int best = -1;
  bool empty = false, undecided = false;
  for (int j = 0; j < v->watch.len; j++) {
    Constraint *c = VEC_AT(v->watch, Constraint, j);
    int n, ns;
    s->visits++;
    if (c->done || c->kind != C_ROW_INEQ || row_peek(c->r2, &ns) != v || ns) continue;
    RowVar *cv = row_peek(c->r1, &n);
    if (cv) {
      int m = lub_strict(s, cv);
      if (m < 0) {
        undecided = true;
        continue;
      }
      n += m;
    }
    empty = empty || n == 0;
    if (n > 0 && (best < 0 || n < best)) best = n;
  }
  if (undecided) return v->lub = ROW_UNDECIDED;
  return v->lub = best < 0 && empty ? 0 : best;
}

static void lub_forget_one(Solver *s, RowVar *v, PtrVec *out) {
  if (!v || v->stamp == s->stamp) return;
  v->stamp = s->stamp;
  v->lub = LUB_UNSET;
  vec_push(s->a, out, v);
}

/* v and the variables whose bound reads v's, transitively (their RowVar.lub may have
 * changed), marked with the current stamp, forgotten and added to out (a work list:
 * a chain may be deep). */
static void lub_forget(Solver *s, RowVar *v, PtrVec *out) {
  int from = out->len;
  lub_forget_one(s, v, out);
  for (int i = from; i < out->len; i++) {
    RowVar *u = VEC_AT(*out, RowVar, i);
    for (int j = 0; j < u->watch.len; j++) {
      Constraint *c = VEC_AT(u->watch, Constraint, j);
      int ns;
      s->visits++;
      if (c->done || c->kind != C_ROW_INEQ || row_peek(c->r1, NULL) != u) continue;
      RowVar *w = row_peek(c->r2, &ns);
      if (!ns) lub_forget_one(s, w, out);
    }
  }
}

static int cmp_rvar_id(const void *a, const void *b) {
  const RowVar *x = *(RowVar *const *)a, *y = *(RowVar *const *)b;
  return (x->id > y->id) - (x->id < y->id);
}

/* stage3_rows(s, true) after the first round: a terminal row closes to its least upper
 * bound once that is fully known. Only a variable below what the log touched can have
 * a new one; the others did not qualify last round and still do not. */
static bool stage3_strict_round(Solver *s, Round *rd) {
  if (!rd->swept) {
    round_swept(s, rd);
    return stage3_rows(s, true);
  }
  PtrVec dirty = {0};
  s->stamp++;
  for (int i = rd->cons; i < s->log_cons.len; i++) {
    Constraint *c = VEC_AT(s->log_cons, Constraint, i);
    if (!c->done) lub_forget(s, row_peek(c->r2, NULL), &dirty);
  }
  for (int i = rd->vars; i < s->log_vars.len; i++) lub_forget(s, VEC_AT(s->log_vars, RowVar, i), &dirty);
  rd->cons = s->log_cons.len, rd->vars = s->log_vars.len;
  if (dirty.len) qsort(dirty.items, (size_t)dirty.len, sizeof *dirty.items, cmp_rvar_id);
  bool changed = false;
  for (int i = 0; i < dirty.len && !s->failed; i++) {
    RowVar *v = VEC_AT(dirty, RowVar, i);
    if (v->solved || !v->terminal) continue;
    int len = lub_strict(s, v);
    if (len < 0) continue;
    DimNode *dims[MAX_RANK];
    for (int j = 0; j < len && j < MAX_RANK; j++) dims[j] = dim_for_rowvar(s, v);
    rowvar_set(s, v, row_closed(s, len < MAX_RANK ? len : MAX_RANK, dims));
    changed = true;
  }
  return changed;
}

static bool stage6(Solver *s) {
  bool changed = false;
  Round rd = {0};
  rounds_begin(s);
  for (int round = 0; round < 4 * MAX_RANK && close_subr_round(s, &rd, false); round++) {
    changed = true;
    if (!solver_run(s)) return true;
  }
  s->logging = false;
  return stage6_pass(s, false, false) || changed;
}

/* Before stage 7: the kernel of a valid convolution whose output is still open closes
 * first. A kernel argument's axis of size 1 (a 1x1 convolution) only bounds the kernel
 * from below (broadcasting), so the output and the kernel are both open; closing the
 * kernel to 1, what the argument says, lets the input fix the output, whereas closing
 * whichever comes first would give output 1 and a contradiction. (A kernel no argument
 * has an axis for, a scalar window, closes to 1 too: the input then fixes the output or
 * the sizes are refused; stage 7 used to make it a whole-input window in --dump-shapes
 * and refuse it in the projections' pass, which closes in another order.) */
static bool stage_conv_kernels(Solver *s) {
  bool changed = false;
  count_sweep(s, s->cons.len);
  for (int i = 0; i < s->cons.len && !s->failed; i++) {
    Constraint *c = VEC_AT(s->cons, Constraint, i);
    if (c->done || c->kind != C_CONV || c->padded || !c->d3) continue;
    bool in_known = dim_is_known(c->d1), out_known = dim_is_known(c->d2);
    if (in_known && out_known) continue;
    /* The same when the input is the open side: a result axis written through an affine
     * index ("h, w => h, 2*w<+k", a merge or a transposed convolution) whose kernel
     * nothing gives. Stage 7 closed the input to 1 as well, first or not, and refused the
     * sizes it made up ("input size 1 does not satisfy ..."); the kernel closing first
     * gives the input from the output, or names the kernel no argument has. With both the
     * input and the output open the output closes next, so the input follows. */
    DimNode *r;
    if (!in_known && out_known && dim_size(c->d2) > 1 && (r = root_or_null(c->d1)) != NULL) {
      /* An input with a bound from above takes it first: over an output above 1 the
       * input is at least stride+1, so it cannot be the 1 that broadcasts and must equal
       * its bound (a deduction, not a default): `{ y; o = [ 10 ] } =: x ~logic:"w =>
       * 2*w<+k"` over 4 cells is a window of 4, what y's size says, not of 1 (and then
       * a 7 that y refuses). */
      bounds_index(s);
      int lub = dim_lub(s, r, NULL);
      if (lub != LUB_NONE && lub >= 1) {
        set_dim(s, NULL, r, lub, "the size of what a convolution's result axis is assigned to");
        changed = true;
        continue;
      }
    }
    r = root_or_null(c->d3);
    if (r) default_dim_one(s, r), changed = true;
    if (!in_known && !out_known && !s->failed && (r = root_or_null(c->d2)) != NULL)
      default_dim_one(s, r), changed = true;
  }
  return changed;
}

/* Stage 7: everything left: dims 1, rows no further axes. */
static bool stage7(Solver *s) {
  bool changed = false;
  count_sweep(s, s->rvars.len + s->dims.len);
  for (int i = 0; i < s->rvars.len && !s->failed; i++) {
    RowVar *v = VEC_AT(s->rvars, RowVar, i);
    if (!v->solved) {
      rowvar_set(s, v, row_closed(s, 0, NULL));
      changed = true;
    }
  }
  for (int i = 0; i < s->dims.len && !s->failed; i++) {
    DimNode *d = VEC_AT(s->dims, DimNode, i);
    if (!d->parent && !d->known) {
      default_dim_one(s, d);
      changed = true;
    }
  }
  return changed;
}

/* Loop indices are 32-bit (AxisIndex): a convolution's window, stride*(out-1) +
 * dilation*(kernel-1) plus its offset, must be addressable. A valid convolution's input
 * size bounds it already; a padded one's does not (its padding grows with the dilation:
 * "o=+1073741824*k" over a kernel of 3 overflowed and read the wrong cells). */
static bool conv_spans_fit(Solver *s) {
  for (int n = 0; n < s->ninfos; n++) /* the steps' lists: s->cons drops done constraints */
  for (int i = 0; s->infos && s->infos[n] && i < s->infos[n]->affine.len; i++) {
    Constraint *c = VEC_AT(s->infos[n]->affine, Constraint, i);
    long long out = dim_size(c->d2), ker = dim_size(c->d3);
    if (out <= 0 || ker <= 0) continue; /* dynamic: refused by simp_conv */
    long long span = (long long)c->stride * (out - 1) + (long long)c->dilation * (ker - 1) + (c->k < 0 ? -c->k : c->k);
    if (span > 0x7fffffffLL) {
      solver_fail(s, c,
                  "convolution (%s): its window spans %lld positions (stride %d x (output %lld - 1) + dilation %d x "
                  "(kernel %lld - 1)), beyond the 2147483647 an index can address",
                  what(c->what1), span, c->stride, out, c->dilation, ker);
      return false;
    }
  }
  return true;
}

/* After stage 1: an assignment's number gives the left-hand side's output row at least one
 * axis where that row is still open (s->numbers holds the constraints, not yet made). */
static void number_rows(Solver *s) {
  for (int i = 0; i < s->numbers.len; i++) {
    Constraint *p = VEC_AT(s->numbers, Constraint, i);
    if (!row_norm(s, p->r1)->var) continue;
    Constraint *c = con_row_ineq(s, p->r1, p->r2, p->step, p->what1, p->what2);
    c->slot1 = p->slot1, c->slot2 = p->slot2;
  }
}

bool solver_close(Solver *s) {
  if (!solver_run(s)) return false;
  number_rows(s);
  if (!solver_run(s)) return false;
  stage2(s);
  if (!solver_run(s)) return false;
  /* Stage 3a (doc/inference.md), before stage 3 proper, alternately: a computed row's
   * variable that nothing can give axes (y = x + b leaves y's output row a variable for
   * leading axes an argument might broadcast in; nothing below it has any) gets no
   * further axes, and terminal rows whose least upper bound is then fully known take it
   * (strict stage 3). Stage 3 alone counted only the known axes of a bound whose
   * variable was still open: the kernel of `p +* "... | oh=+kh, ow=+kw, ..ic..; kh, kw,
   * ..ic.. -> oc => ..."` over a pooled, computed p took ..ic.. empty (one kernel shared
   * by every channel) while p's channel axes stood behind such a variable. */
  Round subr = {0}, rows = {0};
  rounds_begin(s);
  for (int round = 0; round < 4 * MAX_RANK; round++) {
    bool changed = close_subr_round(s, &subr, true);
    if (!solver_run(s)) return false;
    changed = stage3_strict_round(s, &rows) || changed;
    if (!solver_run(s)) return false;
    if (!changed) break;
  }
  s->logging = false;
  for (int round = 0; round < 4 * MAX_RANK && stage3(s); round++)
    if (!solver_run(s)) return false;
  if (s->failed) return false;
  bool (*later[])(Solver *) = {stage4, stage5, stage6, stage_conv_kernels, stage7};
  for (size_t i = 0; i < sizeof later / sizeof *later; i++) {
    later[i](s);
    if (!solver_run(s)) return false;
  }
  /* A second sweep: stage 7 may have unlocked constraints that leave variables. */
  stage7(s);
  if (!solver_run(s)) return false;
  for (int i = 0; i < s->cons.len; i++) {
    Constraint *c = VEC_AT(s->cons, Constraint, i);
    if (!c->done) {
      solver_fail(s, c, "unsatisfiable shape constraint (%s vs %s)", what(c->what1), what(c->what2));
      return false;
    }
  }
  return conv_spans_fit(s);
}

void solver_free(Solver *s) { bounds_free(s); }
