/* infer_proj.c: projection inference (doc/inference.md, "Projections").
 *
 * Shape inference is re-run from scratch (fresh identities), and every axis pairing
 * an operation's row constraints produced is kept with that operation (StepInfo.pairs),
 * so axes equated elsewhere never share an iterator here. Per step, a union-find over
 * the paired axes gives the projection classes: a pairing that broadcasts a
 * dimension-1 axis into a larger one fixes the small side at index 0 instead of
 * joining it; a class holding a fixed spec index, a convolution input or the sliced
 * batch axis is indexed by it; every other class is an iterator. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "infer.h"

void pc_init(ProjCtx *p, Solver *s) {
  memset(p, 0, sizeof *p);
  p->s = s;
  p->ndims = s->dims.len + 1;
  p->local = calloc((size_t)p->ndims * 5, sizeof *p->local);
  for (int sl = 0; sl < 4; sl++) p->ns[sl] = -1;
}

void pc_free(ProjCtx *p) {
  free(p->local);
  free(p->node);
}

int pc_find(ProjCtx *p, int i) {
  while (p->node[i].parent != i) i = p->node[i].parent = p->node[p->node[i].parent].parent;
  return i;
}

/* The projection node of an axis. Axes are identified by their DimNode: rows unified by
 * an equation share their axes, and then their projections. But a tensor in two slots
 * (`w * w`) must get distinct projections: a repeated tensor's slot has a namespace of
 * its own (p->ns; -1 is the shared one, also that of spec axes). */
int pc_node(ProjCtx *p, int slot, DimNode *d) {
  int ns = slot >= 0 && slot < 4 ? p->ns[slot] : -1;
  int key = (ns + 1) * p->ndims + d->id;
  if (p->local[key]) return p->local[key] - 1;
  if (p->n == p->cap) {
    p->cap = p->cap ? p->cap * 2 : 64;
    p->node = realloc(p->node, sizeof *p->node * (size_t)p->cap);
  }
  int i = p->n++;
  p->node[i] = (ProjNode){.dim = d, .parent = i, .ns = ns, .kind = CL_ITER, .iter = -1,
                             .size = dim_is_known(d) ? dim_size(d) : SIZE_UNKNOWN};
  p->local[key] = i + 1;
  return i;
}

/* The iterator size of a class holding axes of sizes a and b (SIZE_UNKNOWN: unknown):
 * the largest static size, else an empty axis (0: it does not broadcast, 1 does), else a
 * dynamic one (the run-time checks make them agree), else 1. */
static int size_join(int a, int b) {
  if (a == SIZE_UNKNOWN || a == b) return b;
  if (b == SIZE_UNKNOWN) return a;
  if (a > 1 || b > 1) return a > b ? a : b;
  if (a == 0 || b == 0) return 0;
  return DIM_IS_DYN(a) ? a : b;
}

void pc_union(ProjCtx *p, int a, int b) {
  a = pc_find(p, a), b = pc_find(p, b);
  if (a == b) return;
  ProjNode *ra = &p->node[a], *rb = &p->node[b];
  rb->parent = a;
  if (rb->kind > ra->kind) ra->kind = rb->kind, ra->fixed = rb->fixed, ra->aff = rb->aff;
  ra->size = size_join(ra->size, rb->size);
}

/* A dynamic subr axis broadcasting into a different cur (doc/inference.md, "Dynamic
 * dimensions"): it walks cur's iterator, and reads index 0 when it is 1 at run time.
 * The class keeps cur's size: subr's may be 1. */
static void pc_union_dyn_bcast(ProjCtx *p, int cur, int sub) {
  int size = p->node[pc_find(p, cur)].size;
  p->node[sub].dyn_bcast = true;
  pc_union(p, cur, sub);
  if (size != SIZE_UNKNOWN) p->node[pc_find(p, cur)].size = size;
}

void pc_mark(ProjCtx *p, int i, ClassKind k, int fixed, Constraint *aff) {
  ProjNode *r = &p->node[pc_find(p, i)];
  if (r->kind >= k && r->kind != CL_ITER) return;
  r->kind = k;
  r->fixed = fixed;
  r->aff = aff;
}

static void pc_reset(ProjCtx *p) {
  for (int i = 0; i < p->n; i++) p->local[(p->node[i].ns + 1) * p->ndims + p->node[i].dim->id] = 0;
  p->n = 0;
}

/* The axes of one slot in memory order (batch, output, input). */
static int slot_axes(Solver *s, StepInfo *in, int slot, DimNode **out, int max) {
  int n = 0;
  for (int k = 0; k < 3; k++) {
    Row *r = row_norm(s, in->slot_row[slot][k]);
    for (int i = 0; i < r->nbeg && n < max; i++) out[n++] = r->beg[i];
    for (int i = 0; i < r->nend && n < max; i++) out[n++] = r->end[i];
  }
  return n;
}

static int class_iter(ProjCtx *p, int cls, int *niters, PtrVec *sizes, Arena *a) {
  ProjNode *r = &p->node[pc_find(p, cls)];
  if (r->kind != CL_ITER) return -1;
  if (r->iter < 0) {
    r->iter = (*niters)++;
    vec_push(a, sizes, (void *)(intptr_t)(r->size != SIZE_UNKNOWN ? r->size : 1));
  }
  return r->iter;
}

static void add_term(AxisIndex *ix, int coef, int iter) {
  for (int i = 0; i < ix->nterms; i++)
    if (ix->iter[i] == iter) {
      ix->coef[i] += coef;
      return;
    }
  if (ix->nterms < MAX_AFFINE_TERMS) {
    ix->coef[ix->nterms] = coef;
    ix->iter[ix->nterms++] = iter;
  }
}

/* Index of a class that is an iterator or a fixed position, scaled by coef. */
static void add_class(ProjCtx *p, AxisIndex *ix, int cls, int coef, int *niters, PtrVec *sizes, Arena *a) {
  ProjNode *r = &p->node[pc_find(p, cls)];
  if (r->kind == CL_FIXED) ix->offset += coef * r->fixed;
  else if (r->kind == CL_ITER) add_term(ix, coef, class_iter(p, cls, niters, sizes, a));
}

static AxisIndex axis_index(ProjCtx *p, int cls, StepInfo *in, int *niters, PtrVec *sizes, Arena *a) {
  AxisIndex ix = {0};
  cls = pc_find(p, cls);
  switch (p->node[cls].kind) {
  case CL_ITER: ix.nterms = 1, ix.coef[0] = 1, ix.iter[0] = class_iter(p, cls, niters, sizes, a); break;
  case CL_FIXED: ix.offset = p->node[cls].fixed; break;
  case CL_SYM: ix.sym = in->step->sym; break;
  case CL_AFFINE: {
    Constraint *c = p->node[cls].aff;
    int ker = dim_size(c->d3);
    add_class(p, &ix, pc_node(p, -1, c->d2), c->stride, niters, sizes, a);
    add_class(p, &ix, pc_node(p, -1, c->d3), c->dilation, niters, sizes, a);
    ix.offset += (int)c->k;
    if (c->padded) ix.offset -= (c->dilation * (ker - 1)) / 2;
    break;
  }
  }
  return ix;
}

static Projections *step_projections(ProjCtx *p, StepInfo *in, Arena *a) {
  Solver *s = p->s;
  UpdateStep *st = in->step;
  pc_reset(p);
  for (int sl = 0; sl < 4; sl++) { /* a repeated tensor's slot gets its own namespace */
    p->ns[sl] = -1;
    Tensor *t = sl == 0 ? st->lhs : sl <= st->nrhs && sl <= 3 ? st->rhs[sl - 1] : NULL;
    for (int e = 0; e < sl && t; e++)
      if ((e == 0 ? st->lhs : st->rhs[e - 1]) == t) p->ns[sl] = sl;
  }
  /* fixed spec indices first: a result's fixed index selects where the lhs is written,
   * so its pairing joins even a bigger lhs axis instead of broadcasting */
  for (int i = 0; i < in->fixed.len; i++)
    pc_mark(p, pc_node(p, -1, VEC_AT(in->fixed, DimNode, i)), CL_FIXED, (int)(intptr_t)in->fixed_val.items[i], NULL);
  for (int i = 0; i < in->pairs.len; i++) {
    Pairing *pr = VEC_AT(in->pairs, Pairing, i);
    int c = pc_node(p, pr->cur_slot, pr->cur), d = pc_node(p, pr->subr_slot, pr->subr);
    bool fixed_subr = false;
    for (int j = 0; j < in->fixed.len && pr->subr_slot < 0 && !fixed_subr; j++)
      fixed_subr = VEC_AT(in->fixed, DimNode, j) == pr->subr;
    int ds = dim_size(pr->subr), cs = dim_size(pr->cur);
    if (!pr->eq && !fixed_subr && ds == 1 && cs != 1) pc_mark(p, d, CL_FIXED, 0, NULL);
    else if (!pr->eq && DIM_IS_DYN(ds) && cs != ds && cs != 1) pc_union_dyn_bcast(p, c, d);
    else pc_union(p, c, d);
  }
  for (int i = 0; i < in->affine.len; i++) {
    Constraint *c = VEC_AT(in->affine, Constraint, i);
    pc_mark(p, pc_node(p, -1, c->d1), CL_AFFINE, 0, c);
  }
  if (in->slice) pc_mark(p, pc_node(p, 0, in->slice), CL_SYM, 0, NULL); /* it sits in the lhs-side row */

  Projections *pj = ANEW(a, Projections);
  pj->nslots = 1 + (st->nrhs < 3 ? st->nrhs : 3);
  int niters = 0;
  PtrVec sizes = {0};
  DimNode *axes[4][3 * 64 + 8];
  int nax[4];
  for (int sl = 0; sl < pj->nslots; sl++) nax[sl] = slot_axes(s, in, sl, axes[sl], 3 * 64);
  /* iterators: the lhs axes first, in memory order, then the others by first use */
  for (int sl = 0; sl < pj->nslots; sl++)
    for (int i = 0; i < nax[sl]; i++) class_iter(p, pc_node(p, sl, axes[sl][i]), &niters, &sizes, a);
  for (int sl = 0; sl < pj->nslots; sl++) {
    pj->rank[sl] = nax[sl];
    pj->idx[sl] = ANEWN(a, AxisIndex, nax[sl] + 1);
    for (int i = 0; i < nax[sl]; i++) {
      int node = pc_node(p, sl, axes[sl][i]);
      pj->idx[sl][i] = axis_index(p, node, in, &niters, &sizes, a);
      pj->idx[sl][i].dyn_bcast = p->node[node].dyn_bcast;
    }
  }
  pj->niters = niters;
  pj->iter_size = ANEWN(a, int, niters + 1);
  for (int i = 0; i < niters; i++) pj->iter_size[i] = (int)(intptr_t)sizes.items[i];
  return pj;
}

bool infer_projections(Ctx *c, Graph *g) {
  Solver s;
  solver_init(&s, &c->arena, &c->diag);
  bool ok = infer_solve(&s, g);
  solver_free(&s);
  if (!ok) return false;
  ProjCtx p;
  pc_init(&p, &s);
  for (int i = 0; i < g->steps.len; i++) {
    UpdateStep *st = VEC_AT(g->steps, UpdateStep, i);
    StepInfo *in = st->id >= 0 && st->id < s.ninfos ? s.infos[st->id] : NULL;
    if (in) st->proj = step_projections(&p, in, &c->arena);
  }
  pc_free(&p);
  return true;
}
