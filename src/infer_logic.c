/* infer_logic.c: the constraints each operation contributes (doc/inference.md,
 * "Deriving the constraints"), stage 1
 * online in creation order, the closing stages, and Tensor.shape. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "infer.h"

static const char *kind_name[3] = {[KIND_BATCH] = "batch", [KIND_OUTPUT] = "output", [KIND_INPUT] = "input"};

typedef Row *RowTriple[3];

typedef struct Logic {
  Solver *s;
  Graph *g;
  RowTriple *rows; /* per tensor id */
} Logic;

/* An unnamed tensor by what the user wrote: the prelude's operations by their
 * operator, constants by kind (a number in `x * 2` is where a rank error comes from). */
static const char *tname(Solver *s, const Tensor *t) {
  if (t->name) return t->name;
  int line = t->loc.line, col = t->loc.col;
  if (t->kind == TK_OP && t->op_name)
    return arena_printf(s->a, "the result of '%s'%s%s%s at %d:%d", graph_op_token(t->op_name), t->in_fn ? " in '" : "",
                        t->in_fn ? t->in_fn : "", t->in_fn ? "'" : "", line, col);
  if (t->kind == TK_CONST && t->init.kind == INIT_CONST && !t->dim_embed)
    return arena_printf(s->a, "the number %g at %d:%d", t->init.value, line, col);
  if (t->kind == TK_CONST && t->init.kind == INIT_VALUES) return arena_printf(s->a, "the literal at %d:%d", line, col);
  if (t->kind == TK_CONST && t->init.kind == INIT_RANGE) return arena_printf(s->a, "the range at %d:%d", line, col);
  return arena_printf(s->a, "the tensor created at %d:%d", line, col);
}

static const char *row_what(Solver *s, const Tensor *t, int kind) {
  return arena_printf(s->a, "the %s row of %s", kind_name[kind], tname(s, t));
}

/* A tensor's three rows: declared rows are exact; parameters have no batch axes unless
 * declared; everything else is a row variable (terminal for non-computed tensors). */
static void tensor_rows(Logic *L, Tensor *t) {
  Solver *s = L->s;
  for (int k = 0; k < 3; k++) {
    RowDecl *rd = &t->decl[k];
    if (rd->given && rd->n > MAX_RANK) {
      diag_error(s->diag, rd->loc.file ? rd->loc : t->loc, "the %s row of %s has %d axes, more than the %d a shape may have",
                 kind_name[k], tname(s, t), rd->n, MAX_RANK);
      s->failed = true;
      return;
    }
    if (rd->given) {
      DimNode **dims = ANEWN(s->a, DimNode *, rd->n + 1);
      for (int i = 0; i < rd->n; i++) {
        DimNode *d = dim_known(s, rd->dims[i].d, rd->dims[i].label);
        d->origin.what = arena_printf(s->a, "%s axis %d of %s", kind_name[k], i, tname(s, t));
        d->origin.loc = rd->loc.file ? rd->loc : t->loc;
        d->origin.has_loc = true;
        d->owner = t;
        dims[i] = d;
      }
      L->rows[t->id][k] = row_closed(s, rd->n, dims);
    } else if (k == KIND_BATCH && t->kind == TK_PARAM) {
      L->rows[t->id][k] = row_closed(s, 0, NULL);
    } else {
      RowVar *v = row_var(s, k);
      v->terminal = t->kind != TK_OP;
      v->owner = t;
      L->rows[t->id][k] = row_of_var(s, v);
    }
  }
}

static Row *trow(Logic *L, Tensor *t, int k) { return L->rows[t->id][k]; }

/* cur >= subr for one kind of rows of two tensors. */
/* The tensor in slot `slot` of st (0 lhs, k rhs k). */
static Tensor *slot_tensor(UpdateStep *st, int slot) { return slot ? st->rhs[slot - 1] : st->lhs; }

/* slot sc's row kc >= slot ss's row ks. */
static void ineq(Logic *L, UpdateStep *st, int sc, int kc, int ss, int ks) {
  Tensor *cur = slot_tensor(st, sc), *sub = slot_tensor(st, ss);
  Constraint *c =
      con_row_ineq(L->s, trow(L, cur, kc), trow(L, sub, ks), st, row_what(L->s, cur, kc), row_what(L->s, sub, ks));
  c->slot1 = sc, c->slot2 = ss;
}

static void pointwise(Logic *L, UpdateStep *st, int slot) {
  for (int k = 0; k < 3; k++) ineq(L, st, 0, k, slot, k);
}

/* A number read by a pointwise assignment has shape [1] (as a number in %op does): the
 * result has at least one output axis where nothing else decides (`{ t } =: !.2.0`). The
 * number is no operand (its value is inlined), so it broadcasts into a row that other
 * operations close to no axes: the constraint waits for stage 1 (solver_close). */
static void scalar_operand(Logic *L, UpdateStep *st) {
  Solver *s = L->s;
  DimNode *one = dim_known(s, 1, NULL);
  one->origin.what = "a number's axis";
  one->origin.loc = st->loc, one->origin.has_loc = true;
  Constraint *c = ANEW(s->a, Constraint);
  c->kind = C_ROW_INEQ, c->step = st;
  c->r1 = trow(L, st->lhs, KIND_OUTPUT), c->r2 = row_closed(s, 1, &one);
  c->what1 = row_what(s, st->lhs, KIND_OUTPUT), c->what2 = "a number (shape 1)";
  c->slot1 = 0, c->slot2 = -1;
  vec_push(s->a, &s->numbers, c);
}

static void compose(Logic *L, UpdateStep *st) {
  ineq(L, st, 0, KIND_BATCH, 1, KIND_BATCH);
  ineq(L, st, 0, KIND_BATCH, 2, KIND_BATCH);
  ineq(L, st, 0, KIND_INPUT, 2, KIND_INPUT);
  ineq(L, st, 0, KIND_OUTPUT, 1, KIND_OUTPUT);
  ineq(L, st, 1, KIND_INPUT, 2, KIND_OUTPUT);
}

/* ---------------------------------------------------------------- einsum specs */

typedef struct SpecEnv {
  PtrVec names; /* const char*: axis variable names */
  PtrVec dims;  /* DimNode*, parallel */
  PtrVec rnames;
  PtrVec rvars; /* RowVar*, parallel */
  bool in_arg;  /* building an argument's rows (else the result's) */
} SpecEnv;

static DimNode *spec_dim(Solver *s, SpecEnv *e, const char *name) {
  for (int i = 0; i < e->names.len; i++)
    if (!strcmp(VEC_AT(e->names, char, i), name)) return VEC_AT(e->dims, DimNode, i);
  DimNode *d = dim_var(s);
  d->origin.what = arena_printf(s->a, "einsum axis %s", name);
  vec_push(s->a, &e->names, (void *)name);
  vec_push(s->a, &e->dims, d);
  return d;
}

static RowVar *spec_rowvar(Solver *s, SpecEnv *e, const char *name, int kind) {
  for (int i = 0; i < e->rnames.len; i++)
    if (!strcmp(VEC_AT(e->rnames, char, i), name)) return VEC_AT(e->rvars, RowVar, i);
  RowVar *v = row_var(s, kind);
  vec_push(s->a, &e->rnames, (void *)name);
  vec_push(s->a, &e->rvars, v);
  return v;
}

static int coef(SpecCoef c) { return c.value > 0 ? c.value : 1; }

/* One spec axis as a dim. `generative`: a fixed 0 is simply a dimension-1 axis. */
static DimNode *spec_axis(Logic *L, SpecEnv *e, StepInfo *info, SpecAxis *ax, bool generative) {
  Solver *s = L->s;
  UpdateStep *st = info->step;
  switch (ax->kind) {
  case AX_VAR: return spec_dim(s, e, ax->name);
  case AX_PLACEHOLDER: return dim_var(s);
  case AX_FIXED: {
    /* generative: a dimension-1 axis for the shape, still written at index 0 */
    DimNode *d = generative && ax->fixed == 0 ? dim_known(s, 1, NULL) : dim_var(s);
    if (d->known) {
      vec_push(s->a, &info->fixed, d);
      vec_push(s->a, &info->fixed_val, (void *)(intptr_t)0);
      return d;
    }
    d->origin.what = arena_printf(s->a, "the fixed index %d", ax->fixed);
    con_at_least(s, d, (long long)ax->fixed + 1, st, arena_printf(s->a, "fixed index %d in \"%s\"", ax->fixed, st->spec->text));
    if (e->in_arg) d->arg_fixed = ax->fixed + 1;
    vec_push(s->a, &info->fixed, d);
    vec_push(s->a, &info->fixed_val, (void *)(intptr_t)ax->fixed);
    return d;
  }
  case AX_AFFINE: {
    DimNode *in = dim_var(s);
    bool padded = ax->conv == CONV_PADDED || (ax->conv == CONV_SCOPE && st->use_padding);
    DimNode *out = spec_dim(s, e, ax->name);
    /* `2*o` and `o+1` have no kernel: a kernel of size 1 */
    DimNode *ker = ax->kernel ? spec_dim(s, e, ax->kernel) : dim_known(s, 1, NULL);
    padded = padded || ax->conv == CONV_NONE;
    const char *w = arena_printf(s->a, "convolution axis %s%s%s in \"%s\"", ax->name, padded ? "=+" : "<+",
                                 ax->kernel ? ax->kernel : "", st->spec->text);
    in->origin.what = w;
    Constraint *c = con_conv(s, in, out, ker, coef(ax->stride), coef(ax->dilation), padded, st, w);
    c->k = ax->offset;
    vec_push(s->a, &info->affine, c);
    return in;
  }
  }
  return dim_var(s);
}

static Row *spec_row(Logic *L, SpecEnv *e, StepInfo *info, SpecRow *sr, int kind, bool generative) {
  Solver *s = L->s;
  DimNode **beg = ANEWN(s->a, DimNode *, sr->left.len + 1);
  DimNode **end = ANEWN(s->a, DimNode *, sr->right.len + 1);
  for (int i = 0; i < sr->left.len; i++) beg[i] = spec_axis(L, e, info, VEC_AT(sr->left, SpecAxis, i), generative);
  for (int i = 0; i < sr->right.len; i++) end[i] = spec_axis(L, e, info, VEC_AT(sr->right, SpecAxis, i), generative);
  if (!sr->rowvar) return row_closed(s, sr->left.len, beg);
  RowVar *v = spec_rowvar(s, e, sr->rowvar, kind);
  return row_open(s, sr->left.len, beg, v, sr->right.len, end);
}

static bool arg_has_rowvar(const Spec *sp, int nargs, const char *name) {
  for (int j = 0; j < nargs; j++)
    for (int k = 0; k < 3; k++) {
      const char *v = spec_slot_row(sp->args[j], k)->rowvar;
      if (v && !strcmp(v, name)) return true;
    }
  return false;
}

/* tdsl(7), SHAPES AND INFERENCE: an operation creating its result cannot bind a row variable that no
 * argument mentions (a %cd assignment to an existing tensor can: its shape binds it). */
static bool check_result_rowvars(Logic *L, UpdateStep *st, int nargs) {
  const Spec *sp = st->spec;
  if (st->lhs->step != st) return true;
  for (int k = 0; k < 3; k++) {
    SpecRow *r = spec_slot_row(sp->result, k);
    if (!r->rowvar || arg_has_rowvar(sp, nargs, r->rowvar)) continue;
    Loc loc = st->spec_loc.file ? spec_error_loc(st->spec_loc, r->col) : st->loc;
    bool anon = !strcmp(r->rowvar, kind_name[k]);
    L->s->failed = true;
    diag_error(L->s->diag, loc, "row variable %s%s%s in the result of \"%s\" does not occur in any argument",
               anon ? "" : "..", anon ? "..." : r->rowvar, anon ? "" : "..", sp->text);
    return false;
  }
  return true;
}

/* tdsl(7), SHAPES AND INFERENCE: the result axes of row `sr` that no argument has (names from
 * `nargaxes` on in e) must get their size from another constraint. */
static void mark_result_only(Logic *L, UpdateStep *st, SpecEnv *e, int nargaxes, SpecRow *sr) {
  for (int side = 0; side < 2; side++) {
    PtrVec *axes = side ? &sr->right : &sr->left;
    for (int i = 0; i < axes->len; i++) {
      SpecAxis *ax = VEC_AT(*axes, SpecAxis, i);
      if (ax->kind != AX_VAR) continue;
      for (int j = nargaxes; j < e->names.len; j++) {
        DimNode *d = VEC_AT(e->dims, DimNode, j);
        if (strcmp(VEC_AT(e->names, char, j), ax->name) || d->result_only) continue;
        Origin *o = ANEW(L->s->a, Origin);
        o->what = arena_printf(L->s->a, "einsum result axis %s of \"%s\"", ax->name, st->spec->text);
        o->loc = st->spec_loc.file ? spec_error_loc(st->spec_loc, ax->col) : st->loc;
        o->has_loc = true;
        d->result_only = o;
      }
    }
  }
}

/* The first axis of a slot that names `name` (as an axis, a convolution output or kernel). */
static SpecAxis *slot_axis(SpecSlot *slot, const char *name) {
  for (int k = 0; k < 3; k++) {
    SpecRow *r = spec_slot_row(slot, k);
    for (int side = 0; side < 2; side++) {
      PtrVec *axes = side ? &r->right : &r->left;
      for (int i = 0; i < axes->len; i++) {
        SpecAxis *ax = VEC_AT(*axes, SpecAxis, i);
        if ((ax->kind == AX_VAR || ax->kind == AX_AFFINE) && !strcmp(ax->name, name)) return ax;
        if (ax->kind == AX_AFFINE && ax->kernel && !strcmp(ax->kernel, name)) return ax;
      }
    }
  }
  return NULL;
}

/* Axes that occur in one argument only (summed over in it): legal, but when such an
 * axis ends up undetermined it is likelier a misspelling than a parameter's fault. */
static void mark_lonely(Logic *L, UpdateStep *st, SpecEnv *e, int nargs, int nargaxes) {
  const Spec *sp = st->spec;
  for (int j = 0; j < nargaxes; j++) {
    const char *name = VEC_AT(e->names, char, j);
    int n = 0, in = -1;
    for (int a = 0; a < nargs; a++)
      if (slot_axis(sp->args[a], name)) n++, in = a;
    if (n != 1 || slot_axis(sp->result, name)) continue;
    SpecAxis *ax = slot_axis(sp->args[in], name);
    Origin *o = ANEW(L->s->a, Origin);
    o->what = arena_printf(L->s->a, "einsum axis %s of \"%s\" occurs only in argument %d", name, sp->text, in + 1);
    o->loc = st->spec_loc.file ? spec_error_loc(st->spec_loc, ax->col) : st->loc;
    o->has_loc = true;
    VEC_AT(e->dims, DimNode, j)->lonely = o;
  }
}

static void einsum(Logic *L, UpdateStep *st, StepInfo *info) {
  Solver *s = L->s;
  const Spec *sp = st->spec;
  SpecEnv e = {0};
  /* A bare shape (`~logic:"ij"`) is the shape of the result and of every argument. */
  int nargs = sp->nargs ? (sp->nargs < st->nrhs ? sp->nargs : st->nrhs) : st->nrhs;
  if (sp->nargs && !check_result_rowvars(L, st, nargs)) return;
  e.in_arg = true;
  for (int j = 0; j < nargs; j++)
    for (int k = 0; k < 3; k++) {
      SpecSlot *slot = sp->nargs ? sp->args[j] : sp->result;
      Row *r = spec_row(L, &e, info, spec_slot_row(slot, k), k, false);
      Tensor *arg = st->rhs[j];
      /* a stack's spec is internal: name the element instead */
      const char *w =
          st->stack_elem && j == 1
              ? arena_printf(s->a, "the %s row of element %d of the stack", kind_name[k], st->stack_elem)
              : arena_printf(s->a, "the %s row of argument %d of \"%s\"", kind_name[k], j + 1, sp->text);
      Constraint *c = con_row_ineq(s, r, trow(L, arg, k), st, w, row_what(s, arg, k));
      c->slot2 = j + 1;
    }
  int nargaxes = e.names.len;
  e.in_arg = false;
  for (int k = 0; k < 3; k++) {
    bool generative = !st->lhs->decl[k].given;
    SpecRow *sr = spec_slot_row(sp->result, k);
    Row *r = spec_row(L, &e, info, sr, k, generative);
    if (sp->nargs && st->lhs->step == st) mark_result_only(L, st, &e, nargaxes, sr);
    const char *rw = st->stack_elem
                         ? arena_printf(s->a, "the %s row of element %d of the stack", kind_name[k], st->stack_elem)
                         : arena_printf(s->a, "the %s row of the result of \"%s\"", kind_name[k], sp->text);
    Constraint *c = con_row_ineq(s, trow(L, st->lhs, k), r, st, row_what(s, st->lhs, k), rw);
    c->slot1 = 0;
  }
  if (sp->nargs > 1) mark_lonely(L, st, &e, nargs, nargaxes);
  info->names = e.names, info->dims = e.dims, info->rnames = e.rnames, info->rvars = e.rvars;
}

/* ---------------------------------------------------------------- other logics */

static void batch_slice(Logic *L, UpdateStep *st, StepInfo *info) {
  Solver *s = L->s;
  Tensor *t = st->lhs, *a = st->rhs[0];
  for (int k = KIND_OUTPUT; k <= KIND_INPUT; k++) { /* the rows other than batch */
    Constraint *c = con_row_eq(s, trow(L, t, k), trow(L, a, k), st, row_what(s, t, k), row_what(s, a, k));
    c->slot1 = 0, c->slot2 = 1;
  }
  DimNode *sl = dim_var(s);
  sl->origin.what = arena_printf(s->a, "the batch axis sliced by %s", st->sym ? st->sym->name : "@|");
  info->slice = sl;
  Row *lb = row_norm(s, trow(L, t, KIND_BATCH));
  Row *with = lb->var ? row_open(s, 0, NULL, lb->var, 0, NULL) : NULL;
  if (lb->var) { /* [sl] ++ beg ++ var ++ end */
    DimNode **beg = ANEWN(s->a, DimNode *, lb->nbeg + 1);
    beg[0] = sl;
    for (int i = 0; i < lb->nbeg; i++) beg[i + 1] = lb->beg[i];
    with = row_open(s, lb->nbeg + 1, beg, lb->var, lb->nend, lb->end);
  } else {
    DimNode **all = ANEWN(s->a, DimNode *, lb->nend + 1);
    all[0] = sl;
    for (int i = 0; i < lb->nend; i++) all[i + 1] = lb->end[i];
    with = row_closed(s, lb->nend + 1, all);
  }
  Constraint *c = con_row_eq(s, trow(L, a, KIND_BATCH), with, st, row_what(s, a, KIND_BATCH),
                             arena_printf(s->a, "the batch row of %s with the sliced axis", tname(s, t)));
  c->slot1 = 1, c->slot2 = 0; /* `with` holds the lhs's axes and the sliced one */
  /* As OCANNL's Batch_slice: a bounded symbol's range is the sliced axis's size, so an axis nothing
   * else determines (a `%cd` input, an argument row variable) takes it instead of closing to 1. */
  if (st->sym && st->sym->range > 0) {
    DimNode *r = dim_known(s, st->sym->range, NULL);
    r->origin = sl->origin;
    r->origin.what = arena_printf(s->a, "the range %d of index symbol '%s'", st->sym->range, st->sym->name);
    if (st->sym->loc.file) r->origin.loc = st->sym->loc, r->origin.has_loc = true;
    con_dim_eq(s, sl, r, st, sl->origin.what, r->origin.what);
  }
}

static void terminal(Logic *L, UpdateStep *st) {
  Tensor *t = st->lhs;
  long long n = t->init.kind == INIT_VALUES ? t->init.nvalues : t->init.kind == INIT_FILE ? t->init.file_elems : -1;
  if (n < 0 || (t->decl[0].given && t->decl[1].given && t->decl[2].given)) return;
  Row *rows[3];
  RowVar *carrier = NULL;
  for (int k = 0; k < 3; k++) rows[k] = trow(L, t, k);
  for (int k = 0; k < 3 && !carrier; k++) carrier = rows[k]->var; /* the first in memory order */
  con_total(L->s, rows, carrier, n, st,
            arena_printf(L->s->a, "%s (%s)", tname(L->s, t), t->init.kind == INIT_FILE ? t->init.path : "literal"));
}

static void step_constraints(Logic *L, UpdateStep *st, StepInfo *info) {
  switch (st->kind) {
  case LOGIC_TERMINAL: terminal(L, st); break;
  case LOGIC_POINTWISE_UN:
  case LOGIC_POINTWISE_BIN:
  case LOGIC_POINTWISE_TERN:
    for (int j = 1; j <= st->nrhs && j <= 3; j++) pointwise(L, st, j);
    if (st->scalar_arg) scalar_operand(L, st);
    break;
  case LOGIC_COMPOSE: compose(L, st); break;
  case LOGIC_COMPOSE_TERN:
    compose(L, st);
    if (st->nrhs > 2) pointwise(L, st, 3);
    break;
  case LOGIC_TRANSPOSE:
    ineq(L, st, 0, KIND_BATCH, 1, KIND_BATCH);
    ineq(L, st, 0, KIND_INPUT, 1, KIND_OUTPUT);
    ineq(L, st, 0, KIND_OUTPUT, 1, KIND_INPUT);
    break;
  case LOGIC_PERMUTE:
  case LOGIC_EINSUM:
    if (st->spec) einsum(L, st, info);
    else for (int j = 1; j <= st->nrhs && j <= 3; j++) pointwise(L, st, j);
    break;
  case LOGIC_BATCH_SLICE: batch_slice(L, st, info); break;
  }
}

/* ---------------------------------------------------------------- driver */

/* tdsl(7), SHAPES AND INFERENCE: a bounded symbol must match the axis it slices; an unbounded one takes
 * its size (then every slice with it must have that size). */
static bool check_slices(Solver *s, Graph *g) {
  for (int i = 0; i < s->ninfos; i++) {
    StepInfo *in = s->infos[i];
    if (!in || !in->slice || !in->step->sym) continue;
    int d = dim_size(in->slice);
    IndexSym *sym = in->step->sym;
    if (dim_is_known(in->slice) && d == 0) { /* no value of the symbol is in range (a range of 0 means unbounded) */
      s->failed = true;
      diag_error(s->diag, in->step->loc, "index symbol '%s' slices a leftmost batch axis of dimension 0 (of %s): "
                 "an empty axis has no index", sym->name, tname(s, in->step->rhs[0]));
      return false;
    }
    if (sym->range == 0) { /* a dynamic axis gives a dynamic range */
      sym->range = d;
      sym->range_inferred = true;
      sym->range_loc = in->step->loc;
      continue;
    }
    if (d == sym->range) continue;
    s->failed = true;
    if (sym->range_inferred) {
      diag_error(s->diag, in->step->loc,
                 "index symbol '%s' slices a leftmost batch axis of dimension %s here but one of dimension %s elsewhere",
                 sym->name, dim_str(s, d), dim_str(s, sym->range));
      diag_note(s->diag, sym->range_loc, "the slice of dimension %s", dim_str(s, sym->range));
    } else {
      diag_error(s->diag, in->step->loc,
                 "index symbol '%s' has range %d but the sliced leftmost batch axis of %s has dimension %s", sym->name,
                 sym->range, tname(s, in->step->rhs[0]), dim_str(s, d));
    }
    if (sym->loc.file) diag_note(s->diag, sym->loc, "'%s' declared here", sym->name);
    return false;
  }
  (void)g;
  return true;
}

static DimNode *info_label(Solver *s, const CaptureRef *r) {
  StepInfo *in = r->step && r->step->id >= 0 && r->step->id < s->ninfos ? s->infos[r->step->id] : NULL;
  for (int j = 0; in && j < in->names.len; j++)
    if (!strcmp(VEC_AT(in->names, char, j), r->name)) return VEC_AT(in->dims, DimNode, j);
  return NULL;
}

static const char *cap_what(Solver *s, const CaptureRef *r) {
  return arena_printf(s->a, "captured label %s of \"%s\"", r->name, r->step->spec->text);
}

/* The DimSets (graph.h) whose last step is st, once st's constraints exist: equations
 * between the captured label's dim and the size (or the other label). They are charged
 * to a copy of the step located at the set_dim / set_equal application and numbered -1,
 * so a conflict is reported there and no projection pairs them. */
static void apply_dimsets(Logic *L, UpdateStep *st) {
  Solver *s = L->s;
  for (int i = 0; i < L->g->dimsets.len; i++) {
    DimSet *ds = VEC_AT(L->g->dimsets, DimSet, i);
    if (!ds->ref->step || (ds->ref2 && !ds->ref2->step)) continue; /* check_captures reports it */
    int last = ds->ref2 && ds->ref2->step->id > ds->ref->step->id ? ds->ref2->step->id : ds->ref->step->id;
    if (last != st->id) continue;
    DimNode *a = info_label(s, ds->ref);
    DimNode *b = ds->ref2 ? info_label(s, ds->ref2) : dim_known(s, ds->value, NULL);
    if (!a || !b) continue; /* not an einsum after all: staging checked the names */
    UpdateStep *at = ANEW(s->a, UpdateStep);
    *at = *st;
    at->id = -1;
    at->loc = ds->loc;
    const char *name = ds->ref->name, *name2 = ds->ref2 ? ds->ref2->name : NULL;
    if (!ds->ref2) {
      b->origin.what = arena_printf(s->a, "set_dim %s %d", name, ds->value);
      b->origin.loc = ds->loc;
      b->origin.has_loc = true;
    }
    if (ds->ref2 && ds->factor > 1) { /* a = factor * b: a padded convolution's sizes, kernel 1 */
      const char *w = arena_printf(s->a, "set_scale ~factor:%d %s %s", ds->factor, name, name2);
      con_conv(s, a, b, dim_known(s, 1, NULL), ds->factor, 1, true, at, w)->scale = true;
      continue;
    }
    Constraint *c = con_add(s, C_DIM_EQ, at);
    c->d1 = a, c->d2 = b;
    c->what1 = cap_what(s, ds->ref);
    c->what2 = ds->ref2 ? cap_what(s, ds->ref2) : arena_printf(s->a, "set_dim %s %d", name, ds->value);
  }
}

/* A capture used (dim, set_dim, ...) whose einsum never ran (its binding was hoisted to
 * the scope, but the einsum sits in a branch not taken, say) has nothing to refer to. */
static bool check_captures(Solver *s, Graph *g) {
  bool ok = true;
  for (int i = 0; i < g->dimsets.len + g->dimembeds.len; i++) {
    CaptureRef *r[2];
    Loc loc;
    if (i < g->dimsets.len) {
      DimSet *ds = VEC_AT(g->dimsets, DimSet, i);
      r[0] = ds->ref, r[1] = ds->ref2, loc = ds->loc;
    } else {
      DimEmbed *de = VEC_AT(g->dimembeds, DimEmbed, i - g->dimsets.len);
      r[0] = de->ref, r[1] = NULL, loc = de->loc;
    }
    for (int k = 0; k < 2; k++) {
      if (!r[k] || r[k]->step) continue;
      diag_error(s->diag, loc, "%s is captured by an einsum that was never evaluated", r[k]->name);
      if (r[k]->loc.file) diag_note(s->diag, r[k]->loc, "captured here");
      ok = false;
    }
  }
  return ok;
}

/* After a step fails, the tensors it touches are poisoned: their rows may hold half of
 * its unifications, so a later step that touches one is skipped (and poisons its own),
 * while steps independent of every failure are still solved and their errors reported
 * too. Closing stages do not run after a failure (their sweeps cross components). */
static bool step_touches(const UpdateStep *st, const char *poisoned) {
  if (poisoned[st->lhs->id]) return true;
  for (int j = 0; j < st->nrhs; j++)
    if (poisoned[st->rhs[j]->id]) return true;
  return false;
}

static void poison_step(const UpdateStep *st, char *poisoned) {
  poisoned[st->lhs->id] = 1;
  for (int j = 0; j < st->nrhs; j++) poisoned[st->rhs[j]->id] = 1;
}

/* Builds and solves every constraint of g into s (which the caller initialized). */
bool infer_solve(Solver *s, Graph *g) {
  Logic L = {s, g, ANEWN(s->a, RowTriple, g->tensors.len + 1)};
  s->g = g;
  int nsteps = 0;
  for (int i = 0; i < g->steps.len; i++) {
    int id = VEC_AT(g->steps, UpdateStep, i)->id;
    if (id + 1 > nsteps) nsteps = id + 1;
  }
  s->ninfos = nsteps;
  s->infos = ANEWN(s->a, StepInfo *, nsteps + 1);
  if (!check_captures(s, g)) {
    s->failed = true;
    return false;
  }
  bool rows_failed = false; /* every declaration's error is reported */
  for (int i = 0; i < g->tensors.len; i++) {
    Tensor *t = VEC_AT(g->tensors, Tensor, i);
    if (t->id < 0 || t->id >= g->tensors.len) {
      diag_error(s->diag, t->loc, "internal error: tensor id %d out of range", t->id);
      return false;
    }
    tensor_rows(&L, t);
    rows_failed |= s->failed;
    s->failed = false;
  }
  if (rows_failed) {
    s->failed = true;
    return false;
  }
  char *poisoned = NULL; /* by tensor id, once a step failed */
  for (int i = 0; i < g->steps.len; i++) {
    UpdateStep *st = VEC_AT(g->steps, UpdateStep, i);
    if (poisoned && step_touches(st, poisoned)) {
      poison_step(st, poisoned);
      continue;
    }
    StepInfo *info = ANEW(s->a, StepInfo);
    info->step = st;
    if (st->id >= 0) s->infos[st->id] = info;
    info->slot_row[0][0] = trow(&L, st->lhs, 0);
    for (int k = 0; k < 3; k++) {
      info->slot_row[0][k] = trow(&L, st->lhs, k);
      for (int j = 0; j < st->nrhs && j < 3; j++) info->slot_row[j + 1][k] = trow(&L, st->rhs[j], k);
    }
    step_constraints(&L, st, info);
    s->online = true; /* stage 1: online, in creation order; bounds swept once at the end */
    bool ok = !s->failed && solver_run(s);
    /* Sizes set on its captured labels come after the operation itself, as in the
     * source: a conflict is then reported at the set_dim, not at the operation. */
    if (ok && L.g->dimsets.len) {
      apply_dimsets(&L, st);
      ok = !s->failed && solver_run(s);
    }
    s->online = false;
    if (ok) continue;
    if (diag_full(s->diag)) return false;
    if (!poisoned) poisoned = ANEWN(s->a, char, g->tensors.len + 1);
    poison_step(st, poisoned);
    s->failed = false;
  }
  if (poisoned) {
    s->failed = true;
    return false;
  }
  if (!solver_close(s)) return false;
  return check_slices(s, g);
}

static void fill_shape(Solver *s, Tensor *t, Row *rows[3]) {
  t->shape.solved = true;
  for (int k = 0; k < 3; k++) {
    Row *r = row_norm(s, rows[k]);
    int n = row_len(r);
    t->shape.n[k] = n;
    t->shape.open[k] = r->var != NULL;
    t->shape.dims[k] = ANEWN(s->a, DimDecl, n + 1);
    for (int i = 0; i < n; i++) {
      DimNode *d = dim_find(i < r->nbeg ? r->beg[i] : r->end[i - r->nbeg]);
      t->shape.dims[k][i].d = d->d;
      t->shape.dims[k][i].label = d->label;
      t->shape.dims[k][i].unknown = !d->known;
    }
  }
}

/* tdsl(7), SHAPES AND INFERENCE: the backends index a tensor with 32-bit integers. */
static bool check_elems(Solver *s, Tensor *t) {
  long long n = 1;
  bool over = false;
  for (int k = 0; k < 3; k++)
    for (int i = 0; i < t->shape.n[k]; i++) /* a dynamic size: the runtime checks what it is set to */
      if (!DIM_IS_DYN(t->shape.dims[k][i].d))
        over = over || __builtin_mul_overflow(n, (long long)t->shape.dims[k][i].d, &n);
  if (!over && n <= INT32_MAX) return true;
  char num[32];
  snprintf(num, sizeof num, over ? "more than 2^63" : "%lld", n);
  diag_error(s->diag, t->loc, "%s has %s elements: more than the 2147483647 a tensor may have", tname(s, t), num);
  return false;
}

/* xavier/kaiming-style initializers read a parameter's fans (the product of its input or
 * output axes) at compile time, into the metadata: a dynamic axis there has no value yet. */
static bool check_fans(Solver *s, Tensor *t) {
  if (t->init.kind != INIT_EXPR) return true;
  for (int i = 0; i < t->init.nops; i++) {
    InitOpKind k = t->init.ops[i].kind;
    if (k != IO_FAN_IN && k != IO_FAN_OUT) continue;
    int kind = k == IO_FAN_IN ? KIND_INPUT : KIND_OUTPUT;
    for (int j = 0; j < t->shape.n[kind]; j++) {
      if (!DIM_IS_DYN(t->shape.dims[kind][j].d)) continue;
      diag_error(s->diag, t->loc, "the initializer of %s reads its fan-%s, but its %s axis %d has a dynamic size",
                 tname(s, t), k == IO_FAN_IN ? "in" : "out", kind == KIND_INPUT ? "input" : "output", j);
      diag_note(s->diag, t->loc, "fans are fixed when the model is compiled: give that axis a static size");
      return false;
    }
  }
  return true;
}

/* `dim j` of a captured label (graph.h DimEmbed): the size of the label's axis, or the
 * product of a row variable's axes, into the constant; a size known only at run time
 * (or never determined) has no compile-time value to embed. */
static bool fill_dim_embeds(Solver *s, Graph *g) {
  bool ok = true;
  for (int i = 0; i < g->dimembeds.len; i++) {
    DimEmbed *de = VEC_AT(g->dimembeds, DimEmbed, i);
    const CaptureRef *ref = de->ref;
    StepInfo *in = ref->step && ref->step->id >= 0 && ref->step->id < s->ninfos ? s->infos[ref->step->id] : NULL;
    const PtrVec *names = in ? (ref->row ? &in->rnames : &in->names) : NULL;
    int at = -1;
    for (int j = 0; names && j < names->len; j++)
      if (!strcmp(VEC_AT(*names, char, j), ref->name)) at = j;
    long long n = 1;
    bool known = at >= 0;
    if (known && !ref->row) {
      DimNode *d = dim_find(VEC_AT(in->dims, DimNode, at));
      n = d->d;
      known = d->known && d->d >= 0; /* 0: an empty axis; < 0: dynamic */
    } else if (known) {
      Row *r = row_norm(s, row_of_var(s, VEC_AT(in->rvars, RowVar, at)));
      known = r->var == NULL;
      for (int k = 0; known && k < row_len(r); k++) {
        DimNode *d = dim_find(k < r->nbeg ? r->beg[k] : r->end[k - r->nbeg]);
        known = d->known && d->d >= 0;
        n *= d->d; /* at most the elements of a tensor: check_elems bounds those */
      }
    }
    if (!known) {
      diag_error(s->diag, de->loc, "dim %s: the size of the captured %s %s is not known at compile time",
                 ref->name, ref->row ? "row variable" : "label", ref->name);
      ok = false;
      continue;
    }
    de->t->init.value = (double)n;
  }
  return ok;
}

/* Tensor.shape from the solution; after an error, from what stage 1 had inferred (an
 * unknown dim is 0, printed `?` by --dump-shapes; tensors it never reached stay unsolved). */
bool infer_shapes(Ctx *c, Graph *g) {
  Solver s;
  solver_init(&s, &c->arena, &c->diag);
  bool ok = infer_solve(&s, g);
  solver_free(&s);
  g->dimchecks = s.checks;
  for (int i = 0; i < g->steps.len && s.infos; i++) {
    UpdateStep *st = VEC_AT(g->steps, UpdateStep, i);
    StepInfo *in = st->id >= 0 && st->id < s.ninfos ? s.infos[st->id] : NULL;
    if (!in || !in->slot_row[0][0]) continue;
    fill_shape(&s, st->lhs, in->slot_row[0]);
    for (int j = 0; j < st->nrhs && j < 3; j++) fill_shape(&s, st->rhs[j], in->slot_row[j + 1]);
  }
  if (!ok) return false;
  bool ok_size = true;
  for (int i = 0; i < g->tensors.len; i++) {
    Tensor *t = VEC_AT(g->tensors, Tensor, i);
    if (t->shape.solved) ok_size = check_elems(&s, t) && check_fans(&s, t) && ok_size;
  }
  return fill_dim_embeds(&s, g) && ok_size;
}
