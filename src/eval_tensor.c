/* eval_tensor.c: building tensors: constants, ndarray literals, stacking, inline
 * declarations `{ w ... }`, naming, and the C builtins (index, range, range_of_shape,
 * uniform, file). */
#include "eval.h"

#include <ctype.h>
#include <limits.h>
#include <math.h>
#include <string.h>
#include <sys/stat.h>

/* ---- graph construction ---- */

bool loc_in_library(const St *st, Loc loc) {
  if (!loc.file || !st->stdlib_dir) return false;
  size_t n = strlen(st->stdlib_dir);
  return strncmp(loc.file->path, st->stdlib_dir, n) == 0 && loc.file->path[n] == '/';
}

Loc site_loc(const St *st, Loc loc) {
  if (loc.file == st->main_file || !st->user_loc.file || !loc_in_library(st, loc)) return loc;
  return st->user_loc;
}

/* Staging's constructors: the graph's (graph_build.c) at the user's site. */
UpdateStep *step_new(St *st, LogicKind kind, Tensor *lhs, int nrhs, Tensor **rhs, Loc loc) {
  UpdateStep *s = graph_step(st->a, st->g, kind, lhs, nrhs, rhs, site_loc(st, loc));
  /* A step made in the body of a function the user wrote is located there, the same for
   * every application: remember which application, so a shape error can say it (a
   * layer applied to inputs of two sizes). Library functions are located at the
   * application already (site_loc). */
  const Fn *f = st->calling;
  if (f && f->name && st->calling_loc.file && !loc_in_library(st, f->body->loc) &&
      (st->calling_loc.line != s->loc.line || st->calling_loc.col != s->loc.col || st->calling_loc.file != s->loc.file))
    s->via = st->calling_loc, s->via_fn = f->name;
  return s;
}

Tensor *tensor_new(St *st, TensorKind kind, Loc loc) {
  return graph_tensor(st->a, st->g, kind, site_loc(st, loc));
}

static void row_set(St *st, RowDecl *r, int n, const int *dims, const char **labels, Loc loc) {
  r->given = true;
  r->n = n;
  r->loc = loc;
  r->dims = ANEWN(st->a, DimDecl, n > 0 ? n : 1);
  for (int i = 0; i < n; i++) {
    r->dims[i].d = dims[i];
    r->dims[i].label = labels ? labels[i] : NULL;
  }
}

/* A number as a tensor: one output axis of dimension 1 (optionally labelled), no batch
 * or input axes (tdsl(7), SHAPES AND INFERENCE). */
Tensor *const_scalar(St *st, double x, const char *label, Loc loc) {
  Tensor *t = tensor_new(st, TK_CONST, loc);
  t->init.kind = INIT_CONST;
  t->init.value = x;
  int one = 1;
  row_set(st, &t->decl[KIND_BATCH], 0, NULL, NULL, loc);
  row_set(st, &t->decl[KIND_INPUT], 0, NULL, NULL, loc);
  row_set(st, &t->decl[KIND_OUTPUT], 1, &one, &label, loc);
  return t;
}

/* ---- names ---- */

bool name_used(St *st, const char *name) { return strtab_get(&st->tensor_names, name) != NULL; }

void add_name(St *st, const char *name, Tensor *t) { graph_name(st->a, st->g, name, t); }

/* Tensor names are unique: a label (from ~label) qualifies the identifier ("L1.w");
 * a remaining collision gets a numeric suffix ("w_2"). */
typedef struct Qualified {
  const char *ident;
  Tensor *t;
} Qualified;

void name_tensor(St *st, Tensor *t, const char *ident, const char *label) {
  const char *base = label ? arena_printf(st->a, "%s.%s", label, ident) : ident;
  const char *cand = base;
  for (int n = 2; name_used(st, cand); n++) cand = arena_printf(st->a, "%s_%d", base, n);
  t->name = cand;
  strtab_put(st->a, &st->tensor_names, cand, t);
  add_name(st, cand, t);
  if (label) {
    Qualified *q = ANEW(st->a, Qualified);
    q->ident = ident;
    q->t = t;
    vec_push(st->a, &st->qualified, q);
  }
}

/* The language qualifies a parameter's name by labels only when names collide
 * (tdsl(7)); labels are always part of the canonical name here, so that the name does
 * not change when a second application adds a collision later in the file. A bare
 * identifier is therefore added as an alias at the end, once it is known to be unique:
 * `--print w` finds the only w whether it is named "w" or "L1.w". */
void alias_unqualified(St *st) {
  if (!st->qualified.len) return;
  StrTab taken = {0}, seen = {0};
  for (int i = 0; i < st->g->names.len; i++) {
    NamedTensor *n = st->g->names.items[i];
    strtab_put(st->a, &taken, n->name, n->t);
  }
  /* ident -> its only Qualified, or st when several tensors share it */
  for (int i = 0; i < st->qualified.len; i++) {
    Qualified *q = st->qualified.items[i];
    strtab_put(st->a, &seen, q->ident, strtab_get(&seen, q->ident) ? (void *)st : (void *)q);
  }
  for (int i = 0; i < st->qualified.len; i++) {
    Qualified *q = st->qualified.items[i];
    if (strtab_get(&seen, q->ident) == q && !strtab_get(&taken, q->ident)) add_name(st, q->ident, q->t);
  }
}

/* ---- literals ---- */

static bool is_seq(const Value *v) {
  return v->kind == V_LIST || v->kind == V_TUPLE || v->kind == V_ARRAY;
}

static bool has_tensor(const Value *v) {
  if (v->kind == V_TENSOR) return true;
  if (!is_seq(v)) return false;
  for (int i = 0; i < v->items.len; i++)
    if (has_tensor(VEC_AT(v->items, Value, i))) return true;
  return false;
}

static int axis_kind(const Value *v) {
  return v->kind == V_LIST ? KIND_OUTPUT : v->kind == V_TUPLE ? KIND_INPUT : KIND_BATCH;
}

enum { MAX_LIT_AXES = 16 };
typedef struct Lit {
  int naxes;
  int kind[MAX_LIT_AXES], dim[MAX_LIT_AXES];
  long long stride[MAX_LIT_AXES];
  double *values;
} Lit;

static const char *kind_what(int kind) {
  return kind == KIND_OUTPUT ? "a list" : kind == KIND_INPUT ? "a tuple" : "an array";
}

/* got: what is there instead ("a list of 3", "a number"): a tuple where a list was
 * expected looks the same length-wise, and the message must say which differs. */
static bool ragged(St *st, const Lit *l, int depth, Loc loc, const char *got) {
  diag_error(&st->c->diag, loc, "ragged ndarray literal: expected %s of %d elements here, got %s",
             kind_what(l->kind[depth]), l->dim[depth], got);
  return false;
}

static const char *seq_what(St *st, int kind, long long n) {
  return arena_printf(st->a, "%s of %lld element%s", kind_what(kind), n, n == 1 ? "" : "s");
}

static int nd_kind(NdAxis k) { return k == ND_LIST ? KIND_OUTPUT : k == ND_TUPLE ? KIND_INPUT : KIND_BATCH; }

/* A packed literal at depth: lit_fill's checks on its leftmost path, where they would
 * fail first (every node of a packed literal has the shape of the leftmost one, and
 * NdLit.first locates that path's nodes as the values of ndlit_expand's tree are), then
 * its numbers into place. */
static bool lit_fill_packed(St *st, Lit *l, const NdLit *p, int depth, long long off) {
  for (int k = 0; k < p->naxes; k++) {
    int d = depth + k;
    if (d == l->naxes) {
      diag_error(&st->c->diag, p->first[k], "an ndarray literal element must be a number, got %s",
                 kind_what(nd_kind(p->kind[k])));
      return false;
    }
    if (nd_kind(p->kind[k]) != l->kind[d] || p->dim[k] != l->dim[d])
      return ragged(st, l, d, p->first[k], seq_what(st, nd_kind(p->kind[k]), p->dim[k]));
  }
  if (depth + p->naxes < l->naxes) return ragged(st, l, depth + p->naxes, p->first[p->naxes], "a number");
  long long idx[NDLIT_MAX_AXES] = {0}, at = off;
  const long long *stride = l->stride + depth;
  for (long long i = 0; i < p->n; i++) {
    l->values[at] = p->values[i];
    for (int k = p->naxes - 1; k >= 0; k--) { /* the next index in nesting order */
      at += stride[k];
      if (++idx[k] < p->dim[k]) break;
      at -= idx[k] * stride[k];
      idx[k] = 0;
    }
  }
  return true;
}

static bool lit_fill(St *st, Lit *l, Value *v, int depth, long long off) {
  if (v->kind == V_NDLIT) return lit_fill_packed(st, l, v->lit, depth, off);
  if (depth == l->naxes) {
    if (!val_is_number(v)) {
      diag_error(&st->c->diag, v->loc, "an ndarray literal element must be a number, got %s", val_kind_name(v));
      return false;
    }
    l->values[off] = val_number(v);
    return true;
  }
  if (!is_seq(v) || axis_kind(v) != l->kind[depth] || v->items.len != l->dim[depth])
    return ragged(st, l, depth, v->loc,
                  is_seq(v) ? seq_what(st, axis_kind(v), v->items.len)
                  : val_is_number(v) ? "a number" : val_kind_name(v));
  for (int i = 0; i < v->items.len; i++)
    if (!lit_fill(st, l, VEC_AT(v->items, Value, i), depth + 1, off + i * l->stride[depth])) return false;
  return true;
}

static bool lit_axis(St *st, Lit *l, int kind, int dim, Loc loc) {
  if (l->naxes == MAX_LIT_AXES) {
    diag_error(&st->c->diag, loc, "ndarray literal has too many axes");
    return false;
  }
  l->kind[l->naxes] = kind;
  l->dim[l->naxes++] = dim;
  return true;
}

/* The axes, from the first element at each level down (a packed literal has its own). */
static bool lit_axes(St *st, Lit *l, Value *v, Loc loc) {
  for (Value *x = v;; x = VEC_AT(x->items, Value, 0)) {
    if (x->kind == V_NDLIT) {
      for (int k = 0; k < x->lit->naxes; k++)
        if (!lit_axis(st, l, nd_kind(x->lit->kind[k]), x->lit->dim[k], loc)) return false;
      return true;
    }
    if (!is_seq(x)) return true;
    if (!lit_axis(st, l, axis_kind(x), x->items.len, loc)) return false;
    if (x->items.len == 0) return true;
  }
}

/* Nesting order gives the axes; values are stored in memory order batch, output,
 * input (each kind keeping its nesting order). An empty list or array is an axis of
 * dimension 0 and the last axis (nothing is nested in it): `[ ]` has output dims [0],
 * `[ [ ]; [ ] ]` [2; 0], `[| |]` batch dims [0]; an empty tuple is unit `()`, no axis. */
static Tensor *literal_tensor(St *st, Value *v, Loc loc) {
  Lit l = {0};
  if (!lit_axes(st, &l, v, loc)) return NULL;
  long long size = 1;
  for (int k = 2; k >= 0; k--) /* the last kind in memory order varies fastest */
    for (int d = l.naxes - 1; d >= 0; d--)
      if (l.kind[d] == k) {
        l.stride[d] = size;
        size *= l.dim[d];
      }
  l.values = ANEWN(st->a, double, size > 0 ? size : 1);
  if (!lit_fill(st, &l, v, 0, 0)) return NULL;
  Tensor *t = tensor_new(st, TK_CONST, loc);
  t->init.kind = INIT_VALUES;
  t->init.values = l.values;
  t->init.nvalues = (int)size;
  for (int k = 0; k < 3; k++) {
    int dims[MAX_LIT_AXES], n = 0;
    for (int d = 0; d < l.naxes; d++)
      if (l.kind[d] == k) dims[n++] = l.dim[d];
    row_set(st, &t->decl[k], n, dims, NULL, loc);
  }
  return t;
}

/* ---- stacking `[ a; b ]`, `[| a; b |]`, `(a, b)` ----
 * Element k of n is multiplied into the result by a binary EINSUM step
 *   "k; ... | ... -> ... => ... | ... -> k, ..."
 * with a one-hot constant (dimension n, 1 at position k) as its first argument: the
 * element's axes pass through and the new leftmost output axis gets dimension n from
 * the constant. As for literals (and OCANNL's block tensors), an array stacks along a new
 * leftmost batch axis ("=> k, ... | ... -> ...") and a tuple along a new leftmost input
 * axis ("=> ... | k, ... -> ..."). Every axis is an ordinary iterator, so this needs nothing beyond plain
 * einsum inference (a fixed index k in the result would express the same with less
 * arithmetic, but a fixed 0 there reads as a dimension-1 axis). The first assignment
 * zero-fills the result (=:+), the others accumulate (=+); element k's gradient is
 * `g2 =+ v1 * g` through the same step. */
static const Spec *stack_spec(St *st, VKind kind, Loc loc) {
  const char *text = kind == V_ARRAY ? "k; ... | ... -> ... => k, ... | ... -> ..."
                   : kind == V_TUPLE ? "k; ... | ... -> ... => ... | k, ... -> ..."
                                     : "k; ... | ... -> ... => ... | ... -> k, ...";
  int col;
  const char *msg;
  Spec *sp = spec_parse(st->a, text, &col, &msg);
  if (!sp) diag_error(&st->c->diag, loc, "internal error: stacking spec: %s", msg ? msg : "?");
  return sp;
}

static Tensor *one_hot(St *st, int n, int k, Loc loc) {
  Tensor *t = tensor_new(st, TK_CONST, loc);
  t->init.kind = INIT_VALUES;
  t->init.nvalues = n;
  t->init.values = ANEWN(st->a, double, n);
  t->init.values[k] = 1.0;
  row_set(st, &t->decl[KIND_BATCH], 0, NULL, NULL, loc);
  row_set(st, &t->decl[KIND_INPUT], 0, NULL, NULL, loc);
  row_set(st, &t->decl[KIND_OUTPUT], 1, &n, NULL, loc);
  return t;
}

static Tensor *stack_tensor(St *st, const Frame *fr, Value *v, Loc loc) {
  int n = v->items.len;
  Tensor **el = ANEWN(st->a, Tensor *, n);
  bool diff = false;
  for (int k = 0; k < n; k++) {
    el[k] = to_tensor(st, fr, VEC_AT(v->items, Value, k), loc, "a stacked element");
    if (!el[k]) return NULL;
    diff = diff || el[k]->diff;
  }
  const Spec *spec = stack_spec(st, v->kind, loc);
  if (!spec) return NULL;
  Tensor **hot = ANEWN(st->a, Tensor *, n);
  for (int k = 0; k < n; k++) hot[k] = one_hot(st, n, k, loc);
  Tensor *r = tensor_new(st, TK_OP, loc);
  r->diff = fr->mode == M_OP && diff;
  if (diff && !r->diff)
    r->nodiff = "it is computed in %cd code (let%cd, an assignment), which does not differentiate: compute it in a let%op";
  for (int k = 0; k < n; k++) {
    Tensor *args[2] = {hot[k], el[k]};
    UpdateStep *s = step_new(st, LOGIC_EINSUM, r, 2, args, loc);
    s->stack_elem = k + 1;
    s->spec = spec;
    s->spec_loc = loc;
    if (k == 0) r->step = s;
    AExpr *fwd = ae_op(st->a, OP_MUL, ae_buf(st->a, hot[k], false, 1), ae_buf(st->a, el[k], false, 2), NULL);
    vec_push(st->a, &r->fwd.asgns, asgn_new(st->a, r, false, 0, OP_ADD, k == 0, fwd, s, loc));
    if (r->diff && el[k]->diff) {
      AExpr *bwd = ae_op(st->a, OP_MUL, ae_buf(st->a, hot[k], false, 1), ae_buf(st->a, r, true, 0), NULL);
      vec_push(st->a, &r->bwd.asgns, asgn_new(st->a, el[k], true, 2, OP_ADD, false, bwd, s, loc));
    }
  }
  return r;
}

Tensor *to_tensor(St *st, const Frame *fr, Value *v, Loc loc, const char *what) {
  if (v->kind == V_TENSOR) {
    if (v->grad) {
      diag_error(&st->c->diag, v->loc, "a gradient cannot be used as %s", what);
      return NULL;
    }
    return v->t;
  }
  if (val_is_number(v)) return const_scalar(st, val_number(v), NULL, v->loc);
  if (v->kind == V_NDLIT) return literal_tensor(st, v, v->loc);
  if (is_seq(v)) {
    if (!has_tensor(v)) return literal_tensor(st, v, v->loc);
    return stack_tensor(st, fr, v, v->loc);
  }
  /* A function value's loc is its definition; the application is more useful. */
  Loc at = v->loc.file && v->kind != V_FN ? v->loc : loc;
  diag_error(&st->c->diag, at, "expected a tensor for %s, got %s", what, val_kind_name(v));
  return NULL;
}

Value *eval_literal_list(St *st, const Frame *fr, Value *v, Loc loc) {
  Tensor *t = to_tensor(st, fr, v, loc, "a tensor");
  return t ? val_tensor(st, t, loc) : NULL;
}

/* ---- declared rows ---- */

/* s for a message: control and non-ASCII bytes as \xNN, at most 40 characters. */
static const char *printable(Arena *a, const char *s) {
  char buf[4 * 40 + 4], *o = buf;
  for (int n = 0; *s && n < 40; s++, n++) {
    unsigned char c = (unsigned char)*s;
    o += c >= 0x20 && c < 0x7f ? snprintf(o, 2, "%c", c) : snprintf(o, 5, "\\x%02x", c);
  }
  snprintf(o, 4, "%s", *s ? "..." : "");
  return arena_strdup(a, buf);
}

bool label_ok(St *st, const char *label, Loc loc, const char *what) {
  bool ok = (isalpha((unsigned char)label[0]) || label[0] == '_');
  for (const char *p = label; ok && *p; p++)
    ok = isalnum((unsigned char)*p) || *p == '_';
  if (!ok)
    diag_error(&st->c->diag, loc, "%s '%s' is not identifier-like (letters, digits and '_', not starting with a digit)",
               what, printable(st->a, label));
  return ok;
}

/* [ 2; ("rgb", 3) ] */
bool rowdecl_from_value(St *st, Value *v, RowDecl *out, Loc loc, const char *what) {
  v = val_unpack(st, v);
  if (v->kind == V_INT || v->kind == V_DIM) { /* a single dimension */
    Value *l = val_new(st, V_LIST, v->loc);
    vec_push(st->a, &l->items, v);
    v = l;
  }
  if (v->kind != V_LIST) {
    diag_error(&st->c->diag, v->loc.file ? v->loc : loc, "%s must be a list of dimensions, got %s", what, val_kind_name(v));
    return false;
  }
  int n = v->items.len;
  int *dims = ANEWN(st->a, int, n > 0 ? n : 1);
  const char **labels = ANEWN(st->a, const char *, n > 0 ? n : 1);
  for (int i = 0; i < n; i++) {
    Value *x = VEC_AT(v->items, Value, i);
    Value *d = x;
    if (x->kind == V_TUPLE && x->items.len == 2 && VEC_AT(x->items, Value, 0)->kind == V_STRING) {
      labels[i] = VEC_AT(x->items, Value, 0)->s;
      d = VEC_AT(x->items, Value, 1);
      if (!label_ok(st, labels[i], x->loc.file ? x->loc : loc, "the dimension label"))
        return false;
    }
    if (d->kind == V_DIM) {
      dims[i] = DIM_DYN(d->dsym->id);
      continue;
    }
    if (d->kind != V_INT || d->i < 0 || d->i > INT_MAX) {
      diag_error(&st->c->diag, x->loc.file ? x->loc : loc,
                 "a dimension in %s must be a non-negative integer, a dynamic dimension or a (\"label\", dim) pair, got %s",
                 what, d->kind == V_INT ? arena_printf(st->a, "%lld (from 0 to 2147483647)", d->i) : val_kind_name(d));
      return false;
    }
    dims[i] = (int)d->i;
  }
  /* A row the library declares (mlp_layer's o = [ hid_dim ]) is where shape errors say
   * its dims come from: point at the user's number (~hid_dim:4) when one was passed
   * in, else at the user's application, not into the library. */
  if (loc_in_library(st, loc)) {
    Loc at = site_loc(st, loc);
    for (int i = 0; i < n; i++) {
      const Value *x = VEC_AT(v->items, Value, i);
      if (x->loc.file && !loc_in_library(st, x->loc)) {
        at = x->loc;
        break;
      }
    }
    loc = at;
  }
  row_set(st, out, n, dims, labels, loc);
  return true;
}

/* ---- inline declarations ---- */

static Tensor *scope_find(DeclScope *s, const Expr *key) {
  if (!s) return NULL;
  for (int i = 0; i < s->keys.len; i++)
    if (s->keys.items[i] == key) return VEC_AT(s->tensors, Tensor, i);
  return NULL;
}

/* Forgets the tensors (and their steps) created since the marks: an initializer like
 * `[1.; 2.]` or `uniform ()` builds a constant only to describe the init. */
static void drop_since(St *st, int ntensors, int nsteps) {
  st->g->tensors.len = ntensors;
  st->g->steps.len = nsteps;
}

static bool record_init(St *st, const Frame *fr, Tensor *t, const Expr *ie) {
  int nt = st->g->tensors.len, ns = st->g->steps.len;
  Value *v = eval(st, fr, ie);
  if (!v) return false;
  if (val_is_number(v) || (v->kind == V_TENSOR && v->is_number)) {
    t->init.kind = INIT_CONST;
    t->init.value = v->kind == V_TENSOR ? v->t->init.value : val_number(v);
    if (v->kind == V_TENSOR && st->g->tensors.len == nt + 1 && v->t->id == nt) drop_since(st, nt, ns);
    return true;
  }
  if ((is_seq(v) && !has_tensor(v)) || v->kind == V_NDLIT) {
    Tensor *lit = literal_tensor(st, v, ie->loc);
    if (!lit) return false;
    v = val_tensor(st, lit, ie->loc);
  }
  if (v->kind == V_TENSOR && v->t->dim_embed) { /* its value is known only after inference */
    diag_error(&st->c->diag, ie->loc, "dim of a captured label cannot initialize a parameter: use it in the expression instead");
    return false;
  }
  if (v->kind == V_TENSOR && v->t->kind == TK_CONST && !v->grad) {
    t->init = v->t->init;
    for (int k = 0; k < 3; k++)
      if (v->t->decl[k].given) t->decl[k] = v->t->decl[k];
    if (st->g->tensors.len == nt + 1 && v->t->id == nt) drop_since(st, nt, ns);
    return true;
  }
  /* An expression: its temporaries become t's init program (eval_init.c). */
  if (v->kind == V_TENSOR && v->t->kind == TK_OP && !v->grad) {
    if (!init_from_tensor(st, t, v->t, ie->loc)) return false;
    drop_since(st, nt, ns);
    return true;
  }
  diag_error(&st->c->diag, ie->loc,
             "an initializer must be a number, an ndarray literal, a constant such as uniform () or an expression of those, got %s",
             v->kind == V_TENSOR ? (v->grad ? "a gradient" : "a tensor that is not a constant") : val_kind_name(v));
  return false;
}

/* A field's row (KIND_*), 3 for prec, -1 for an unknown name. */
static int field_kind(const char *n) {
  return !strcmp(n, "o") || !strcmp(n, "output_dims") ? KIND_OUTPUT
       : !strcmp(n, "i") || !strcmp(n, "input_dims")  ? KIND_INPUT
       : !strcmp(n, "b") || !strcmp(n, "batch_dims")  ? KIND_BATCH
       : !strcmp(n, "prec")                            ? 3 : -1;
}

/* A field given twice (o and output_dims are one field): the later one would silently
 * replace the earlier, so which shape the user meant is unknown. */
static bool field_repeated(St *st, const PtrVec *fields, int i) {
  const Field *f = VEC_AT(*fields, Field, i);
  int kind = field_kind(f->name);
  if (kind < 0) return false;
  for (int j = 0; j < i; j++) {
    const Field *g = VEC_AT(*fields, Field, j);
    if (field_kind(g->name) != kind) continue;
    diag_error(&st->c->diag, f->loc, "field '%s' is given twice in this inline declaration", f->name);
    diag_note(&st->c->diag, g->loc, "'%s' first given here", g->name);
    return true;
  }
  return false;
}

static bool record_field(St *st, const Frame *fr, Tensor *t, const Field *f) {
  const char *n = f->name;
  int kind = field_kind(n);
  if (kind == 3) kind = -1;
  if (kind < 0 && strcmp(n, "prec") != 0) {
    diag_error(&st->c->diag, f->loc, "unknown field '%s' in an inline declaration (expected o, i, b or prec)", n);
    return false;
  }
  if (kind < 0) {
    const char *p = f->e->kind == E_IDENT || f->e->kind == E_STRING ? f->e->str : "";
    if (!strcmp(p, "single")) t->prec = PREC_SINGLE;
    else if (!strcmp(p, "double")) t->prec = PREC_DOUBLE;
    else {
      diag_error(&st->c->diag, f->e->loc, "prec must be single or double");
      return false;
    }
    return true;
  }
  Value *v = eval(st, fr, f->e);
  if (!v) return false;
  return rowdecl_from_value(st, v, &t->decl[kind], f->e->loc, n);
}

/* The dims of a declared row as written in a shape: "3,4" (labels aside). */
static const char *row_text(St *st, const RowDecl *r) {
  const char *s = "";
  for (int i = 0; i < r->n; i++) s = arena_printf(st->a, "%s%s%d", s, i ? "," : "", r->dims[i].d);
  return s;
}

/* A literal or range initializer fixes the rows it has; a field must declare the same
 * dims (labels may be added), or the values would be cut short or repeated. */
static bool fields_agree(St *st, const RowDecl *from_init, const Tensor *t) {
  static const char *kinds[3] = {[KIND_BATCH] = "batch", [KIND_OUTPUT] = "output", [KIND_INPUT] = "input"};
  for (int k = 0; k < 3; k++) {
    const RowDecl *a = &from_init[k], *b = &t->decl[k];
    bool same = a->n == b->n;
    for (int i = 0; same && i < a->n; i++) same = a->dims[i].d == b->dims[i].d;
    if (!a->given || same) continue;
    diag_error(&st->c->diag, b->loc, "the %s dims [%s] declared here contradict the initializer's [%s] (its values fix the shape)",
               kinds[k], row_text(st, b), row_text(st, a));
    diag_note(&st->c->diag, a->loc, "the initializer");
    return false;
  }
  return true;
}

/* `{ w ... }`: a parameter in %op, a non-differentiable term in %cd; created once per
 * declaration scope (see DeclScope). */
Value *eval_record(St *st, const Frame *fr, const Expr *e) {
  Tensor *t = scope_find(fr->decls, e);
  if (t) return val_tensor(st, t, e->loc);
  bool param = fr->mode == M_OP;
  if (!param && e->a) {
    diag_error(&st->c->diag, e->a->loc, "an inline declaration in %%cd cannot have an initializer ('%s')", e->str);
    diag_note(&st->c->diag, e->loc, "declare it in %%op to get an initialized parameter");
    return NULL;
  }
  t = tensor_new(st, param ? TK_PARAM : TK_TERM, e->loc);
  t->diff = param;
  if (param) t->init.kind = INIT_UNIFORM;
  bool ok = !e->a || record_init(st, fr, t, e->a);
  RowDecl from_init[3];
  memcpy(from_init, t->decl, sizeof from_init);
  for (int i = 0; ok && i < e->fields.len; i++)
    ok = !field_repeated(st, &e->fields, i) && record_field(st, fr, t, VEC_AT(e->fields, Field, i));
  ok = ok && fields_agree(st, from_init, t);
  if (!ok) {
    if (fr->decls && fr->decls->toplevel) env_poison(st, e->str);
    return NULL;
  }
  /* Parameters have no batch axes unless b = [...] is given (tdsl(7), SHAPES AND INFERENCE). */
  if (param && !t->decl[KIND_BATCH].given) row_set(st, &t->decl[KIND_BATCH], 0, NULL, NULL, e->loc);
  DeclScope *s = fr->decls;
  name_tensor(st, t, e->str, s ? s->label : NULL);
  if (s) {
    vec_push(st->a, &s->keys, (void *)e);
    vec_push(st->a, &s->tensors, t);
    vec_push(st->a, &s->idents, (void *)e->str);
  }
  /* Declared in a top-level binding: visible to every later top-level item. */
  if (s && s->toplevel) {
    env_bind_global(st, e->str, val_tensor(st, t, e->loc), e->loc);
  }
  return val_tensor(st, t, e->loc);
}

/* `!@sym`: a scalar whose forward code is `t =: sym`. */
Tensor *sym_tensor(St *st, IndexSym *sym, Loc loc) {
  Tensor *t = tensor_new(st, TK_OP, loc);
  int one = 1;
  row_set(st, &t->decl[KIND_BATCH], 0, NULL, NULL, loc);
  row_set(st, &t->decl[KIND_INPUT], 0, NULL, NULL, loc);
  row_set(st, &t->decl[KIND_OUTPUT], 1, &one, NULL, loc);
  t->step = step_new(st, LOGIC_POINTWISE_UN, t, 0, NULL, loc);
  AExpr *r = ANEW(st->a, AExpr);
  r->kind = AE_SYM;
  r->sym = sym;
  vec_push(st->a, &t->fwd.asgns, asgn_new(st->a, t, false, 0, OP_ARG2, false, r, t->step, loc));
  return t;
}

/* ---- builtins ---- */

static Value *arg_or_null(Fn *f, const char *name) { return fn_param(f, name); }

static Value *bi_index(St *st, Fn *f, const Frame *call, Loc loc) {
  Value *n = arg_or_null(f, "n");
  IndexSym *s = ANEW(st->a, IndexSym);
  if (n->kind == V_INT && n->i == 0) { /* range 0 would read as unbounded (IndexSym.range) */
    diag_error(&st->c->diag, n->loc, "index 0 has no value in range: an index symbol ranges over at least 1 value "
               "(an empty axis has no index; index () is unbounded)");
    return NULL;
  }
  if (n->kind == V_INT && n->i > 0 && n->i <= INT_MAX) s->range = (int)n->i;
  else if (n->kind != V_UNIT) {
    diag_error(&st->c->diag, n->loc, "index expects a positive integer or (), got %s",
               n->kind == V_INT ? arena_printf(st->a, "%lld (from 1 to 2147483647)", n->i) : val_kind_name(n));
    return NULL;
  }
  s->id = st->g->syms.len;
  s->loc = loc;
  vec_push(st->a, &st->g->syms, s);
  Value *v = val_new(st, V_SYM, loc);
  v->sym = s;
  return v;
}

Value *val_dyndim(St *st, Loc loc) {
  DimSym *d = ANEW(st->a, DimSym);
  d->id = st->g->dimsyms.len;
  d->loc = loc;
  vec_push(st->a, &st->g->dimsyms, d);
  Value *v = val_new(st, V_DIM, loc);
  v->dsym = d;
  return v;
}

/* Where a symbol of the runtime's one namespace (index symbols and dynamic dimensions:
 * --set, tdsl_set_index and tdsl_set_dim find them by name) is declared, or NULL. */
static const Loc *sym_named(const St *st, const char *name) {
  for (int i = 0; i < st->g->syms.len; i++) {
    const IndexSym *o = VEC_AT(st->g->syms, IndexSym, i);
    if (o->name && !strcmp(o->name, name)) return &o->loc;
  }
  return NULL;
}

static const Loc *dimsym_named(const St *st, const char *name) {
  for (int i = 0; i < st->g->dimsyms.len; i++) {
    const DimSym *o = VEC_AT(st->g->dimsyms, DimSym, i);
    if (o->name && !strcmp(o->name, name)) return &o->loc;
  }
  return NULL;
}

static bool same_place(Loc a, Loc b) {
  return a.line == b.line && a.col == b.col && a.file == b.file;
}

/* `let n = index ...` / `let n = dim ()` names a symbol the runtime finds by name, so a
 * second symbol of one name would be unreachable (--set reached the first, the one the
 * program no longer meant). Index symbols and dynamic dimensions share that namespace. */
bool runtime_sym_name(St *st, Value *v, const char *name, Loc loc) {
  bool dim = v->kind == V_DIM;
  const char **slot = dim ? &v->dsym->name : &v->sym->name;
  Loc own = dim ? v->dsym->loc : v->sym->loc;
  const char *noun = dim ? "a dynamic dimension" : "an index symbol";
  if (*slot) return true; /* `let m = n`: an alias of n */
  const Loc *same = dim ? dimsym_named(st, name) : sym_named(st, name);
  const Loc *other = dim ? sym_named(st, name) : dimsym_named(st, name);
  if (same) {
    diag_error(&st->c->diag, loc, "%s named '%s' already exists", noun, name);
    if (same_place(*same, own))
      diag_note(&st->c->diag, *same, "each evaluation of %s makes a new one, and --set and the runtime set them by name",
                dim ? "'dim ()'" : "'index'");
    else
      diag_note(&st->c->diag, *same, "'%s' is declared here; --set and the runtime set %ss by name", name,
                dim ? "dynamic dimension" : "index symbol");
    return false;
  }
  if (other) {
    diag_error(&st->c->diag, loc, "%s cannot be named '%s': %s has that name", noun, name,
               dim ? "an index symbol" : "a dynamic dimension");
    diag_note(&st->c->diag, *other, "'%s' is declared here; --set and the runtime set both by name", name);
    return false;
  }
  *slot = name;
  return true;
}

/* `dim ()`: a fresh dynamic dimension. `dim j` of a label an einsum captured (the seed's
 * embed_dim): a constant scalar whose value shape inference sets to the label's size. */
static Value *bi_dim(St *st, Fn *f, const Frame *call, Loc loc) {
  Value *x = arg_or_null(f, "x");
  if (x->kind == V_UNIT) return val_dyndim(st, loc);
  if (x->kind != V_CAPTURE) {
    diag_error(&st->c->diag, x->loc.file ? x->loc : loc,
               "dim expects () (a new dynamic dimension) or a label captured by an einsum, got %s",
               val_kind_name(x));
    return NULL;
  }
  Tensor *t = const_scalar(st, 0.0, NULL, loc);
  t->dim_embed = true;
  DimEmbed *d = ANEW(st->a, DimEmbed);
  d->t = t;
  d->ref = x->cap;
  d->loc = site_loc(st, loc);
  vec_push(st->a, &st->g->dimembeds, d);
  return val_tensor(st, t, loc);
}

/* `embed_dim j`: the seed's name for `dim j` (captured labels only). */
static Value *bi_embed_dim(St *st, Fn *f, const Frame *call, Loc loc) {
  Value *x = arg_or_null(f, "x");
  if (x->kind != V_CAPTURE) {
    diag_error(&st->c->diag, x->loc.file ? x->loc : loc, "embed_dim expects a label captured by an einsum, got %s",
               val_kind_name(x));
    return NULL;
  }
  return bi_dim(st, f, call, loc);
}

/* A captured axis label (not a row variable) given to set_dim / set_equal, or NULL + error. */
static Value *captured_label(St *st, Value *x, const char *fn, Loc loc) {
  if (x->kind != V_CAPTURE) {
    diag_error(&st->c->diag, x->loc.file ? x->loc : loc, "%s expects a label captured by an einsum, got %s", fn,
               val_kind_name(x));
    return NULL;
  }
  if (x->cap->row) {
    diag_error(&st->c->diag, loc, "%s of the row variable %s is not supported: capture one of its axes' labels instead",
               fn, x->s);
    if (x->loc.file) diag_note(&st->c->diag, x->loc, "%s captured here", x->s);
    return NULL;
  }
  return x;
}

/* `set_dim j 3`: the captured label j has size 3 (graph.h DimSet). */
static Value *bi_set_dim(St *st, Fn *f, const Frame *call, Loc loc) {
  Value *x = captured_label(st, arg_or_null(f, "x"), "set_dim", loc), *n = arg_or_null(f, "n");
  if (!x) return NULL;
  /* 0 is an ordinary size (an empty axis), as in `o = [ 0 ]` (tdsl(7), Empty tensors) */
  if (n->kind != V_INT || n->i < 0 || n->i > INT_MAX) {
    diag_error(&st->c->diag, n->loc.file ? n->loc : loc, "set_dim expects a size from 0 to 2147483647, got %s",
               n->kind == V_INT ? arena_printf(st->a, "%lld", n->i) : val_kind_name(n));
    return NULL;
  }
  DimSet *d = ANEW(st->a, DimSet);
  d->ref = x->cap, d->value = (int)n->i, d->loc = site_loc(st, loc);
  vec_push(st->a, &st->g->dimsets, d);
  return val_new(st, V_UNIT, loc);
}

/* `set_equal j k`: the captured labels j and k have one size. */
static Value *bi_set_equal(St *st, Fn *f, const Frame *call, Loc loc) {
  Value *x = captured_label(st, arg_or_null(f, "x"), "set_equal", loc);
  Value *y = x ? captured_label(st, arg_or_null(f, "y"), "set_equal", loc) : NULL;
  if (!y) return NULL;
  DimSet *d = ANEW(st->a, DimSet);
  d->ref = x->cap, d->ref2 = y->cap, d->loc = site_loc(st, loc);
  d->factor = 1;
  vec_push(st->a, &st->g->dimsets, d);
  return val_new(st, V_UNIT, loc);
}

/* `set_scale ~factor:2 j k`: the captured label j is factor times k. */
static Value *bi_set_scale(St *st, Fn *f, const Frame *call, Loc loc) {
  Value *fa = arg_or_null(f, "factor");
  if (fa->kind != V_INT || fa->i < 1 || fa->i > INT_MAX) {
    diag_error(&st->c->diag, fa->loc.file ? fa->loc : loc, "set_scale expects a ~factor from 1 to 2147483647, got %s",
               fa->kind == V_INT ? arena_printf(st->a, "%lld", fa->i) : val_kind_name(fa));
    return NULL;
  }
  Value *x = captured_label(st, arg_or_null(f, "x"), "set_scale", loc);
  Value *y = x ? captured_label(st, arg_or_null(f, "y"), "set_scale", loc) : NULL;
  if (!y) return NULL;
  DimSet *d = ANEW(st->a, DimSet);
  d->ref = x->cap, d->ref2 = y->cap, d->loc = site_loc(st, loc);
  d->factor = (int)fa->i;
  vec_push(st->a, &st->g->dimsets, d);
  return val_new(st, V_UNIT, loc);
}

static Value *bi_range(St *st, Fn *f, const Frame *call, Loc loc) {
  Value *n = arg_or_null(f, "n");
  if (n->kind != V_INT || n->i < 0 || n->i > INT_MAX) { /* range 0: an empty tensor */
    diag_error(&st->c->diag, n->loc, "range expects a non-negative integer, got %s",
               n->kind == V_INT ? arena_printf(st->a, "%lld", n->i) : val_kind_name(n));
    return NULL;
  }
  Tensor *t = tensor_new(st, TK_CONST, loc);
  t->init.kind = INIT_RANGE;
  int d = (int)n->i;
  row_set(st, &t->decl[KIND_BATCH], 0, NULL, NULL, loc);
  row_set(st, &t->decl[KIND_INPUT], 0, NULL, NULL, loc);
  row_set(st, &t->decl[KIND_OUTPUT], 1, &d, NULL, loc);
  return val_tensor(st, t, loc);
}

static Value *bi_range_of_shape(St *st, Fn *f, const Frame *call, Loc loc) {
  static const char *names[3] = {[KIND_BATCH] = "batch_dims", [KIND_OUTPUT] = "output_dims",
                                 [KIND_INPUT] = "input_dims"};
  Tensor *t = tensor_new(st, TK_CONST, loc);
  t->init.kind = INIT_RANGE;
  for (int k = 0; k < 3; k++) {
    Value *v = arg_or_null(f, names[k]);
    if (!v || v->kind == V_UNIT) row_set(st, &t->decl[k], 0, NULL, NULL, loc);
    else if (!rowdecl_from_value(st, v, &t->decl[k], loc, names[k])) return NULL;
    for (int i = 0; i < t->decl[k].n; i++)
      if (DIM_IS_DYN(t->decl[k].dims[i].d)) { /* a constant's values are laid out at compile time */
        diag_error(&st->c->diag, v->loc.file ? v->loc : loc, "range_of_shape needs static sizes: %s has a dynamic dimension",
                   names[k]);
        return NULL;
      }
  }
  return val_tensor(st, t, loc);
}

static Value *bi_uniform(St *st, Fn *f, const Frame *call, Loc loc) {
  Tensor *t = tensor_new(st, TK_CONST, loc);
  t->init.kind = INIT_UNIFORM;
  return val_tensor(st, t, loc);
}

static Value *bi_file(St *st, Fn *f, const Frame *call, Loc loc) {
  Value *p = arg_or_null(f, "path");
  if (p->kind != V_STRING) {
    diag_error(&st->c->diag, p->loc, "file expects a path string, got %s", val_kind_name(p));
    return NULL;
  }
  const char *path = p->s;
  if (path[0] != '/' && p->loc.file) {
    const char *sp = p->loc.file->path, *slash = strrchr(sp, '/');
    if (slash) path = arena_printf(st->a, "%.*s/%s", (int)(slash - sp), sp, path);
  }
  struct stat sb;
  if (stat(path, &sb) != 0 || !S_ISREG(sb.st_mode)) {
    diag_error(&st->c->diag, p->loc, "cannot read the data file '%s'", path);
    return NULL;
  }
  /* Its length is the tensor's size: a file without one would leave the shape to
   * inference alone, which must never size a tensor by a file it cannot measure. */
  if (sb.st_size == 0) {
    diag_error(&st->c->diag, p->loc, "the data file '%s' is empty or has no size (as files under /proc)", path);
    return NULL;
  }
  if (sb.st_size % 4 != 0) {
    diag_error(&st->c->diag, p->loc, "the data file '%s' has %lld bytes, not a whole number of float32 values",
               path, (long long)sb.st_size);
    return NULL;
  }
  ctx_add_dep(st->c, path);
  Tensor *t = tensor_new(st, TK_CONST, loc);
  t->init.kind = INIT_FILE;
  t->init.path = path;
  t->init.file_elems = (long long)sb.st_size / 4;
  return val_tensor(st, t, loc);
}

static Value *bi_float(St *st, Fn *f, const Frame *call, Loc loc) {
  Value *x = arg_or_null(f, "x");
  if (!val_is_number(x)) {
    diag_error(&st->c->diag, x->loc, "float expects a number, got %s", val_kind_name(x));
    return NULL;
  }
  return val_float(st, val_number(x), loc);
}

static Value *bi_int(St *st, Fn *f, const Frame *call, Loc loc) {
  Value *x = arg_or_null(f, "x");
  if (!val_is_number(x)) {
    diag_error(&st->c->diag, x->loc, "int expects a number, got %s", val_kind_name(x));
    return NULL;
  }
  double d = trunc(val_number(x));
  if (!(d >= -9.2e18 && d <= 9.2e18)) {
    diag_error(&st->c->diag, x->loc, "int: %g is out of range", val_number(x));
    return NULL;
  }
  return val_int(st, (long long)d, loc);
}

/* Parameters from a mini signature: "x" positional, "~x" labeled, "?x" optional, "()" unit. */
void builtin_install(St *st, const char *name, const char *sig, BuiltinFn fn) {
  Fn *f = ANEW(st->a, Fn);
  f->kind = FN_BUILTIN;
  f->name = name;
  f->builtin = fn;
  PtrVec ps = {0};
  char buf[128];
  snprintf(buf, sizeof buf, "%s", sig);
  for (char *tok = strtok(buf, " "); tok; tok = strtok(NULL, " ")) {
    Param *p = ANEW(st->a, Param);
    if (!strcmp(tok, "()")) p->kind = P_UNIT;
    else if (tok[0] == '~') { p->kind = P_LABELED; p->name = arena_strdup(st->a, tok + 1); }
    else if (tok[0] == '?') { p->kind = P_OPTIONAL; p->name = arena_strdup(st->a, tok + 1); }
    else { p->kind = P_POS; p->name = arena_strdup(st->a, tok); }
    vec_push(st->a, &ps, p);
  }
  f->nparams = ps.len;
  f->params = (Param **)ps.items;
  f->bound = ANEWN(st->a, Value *, ps.len > 0 ? ps.len : 1);
  Value *v = val_new(st, V_FN, (Loc){0});
  v->fn = f;
  env_bind_global(st, name, v, (Loc){0});
}

void install_builtins(St *st) {
  builtin_install(st, "index", "n", bi_index);
  builtin_install(st, "dim", "x", bi_dim);
  builtin_install(st, "embed_dim", "x", bi_embed_dim);
  builtin_install(st, "set_dim", "x n", bi_set_dim);
  builtin_install(st, "set_equal", "x y", bi_set_equal);
  builtin_install(st, "set_scale", "~factor x y", bi_set_scale);
  builtin_install(st, "range", "n", bi_range);
  builtin_install(st, "range_of_shape", "?batch_dims ?input_dims ?output_dims ()", bi_range_of_shape);
  builtin_install(st, "uniform", "()", bi_uniform);
  builtin_install(st, "file", "path", bi_file);
  builtin_install(st, "float", "x", bi_float);
  builtin_install(st, "float_of_int", "x", bi_float);
  builtin_install(st, "int", "x", bi_int);
  builtin_install(st, "int_of_float", "x", bi_int);
  install_math_builtins(st);
  install_init_builtins(st);
}
