/* eval_code.c: %cd code: assignments `LHS ASGN RHS [~logic:SPEC]`, the accessors
 * (.value .grad .forward .backprop .zero_grads .params) and ~~ comments.
 *
 * An assignment's right-hand side becomes an AExpr tree: the top-level primitive
 * application (infix `A OP B`, `relu A`, `where (A, B, C)`, ...) and nested uncurried
 * primitive applications are AE_OP nodes; numbers and `!.x` are AE_CONST, `!@s` AE_SYM;
 * every other operand is evaluated as a non-differentiable tensor expression, and the
 * forward code of the tensors this creates is emitted before the assignment.
 *
 * Slots: inside an op body an operand takes the slot of its slot name (v1 -> 1), a
 * scalar constant takes -1, and an intermediate tensor the slot of the first slot
 * tensor it is computed from (argument slots first, then the result). Outside op
 * bodies an assignment gets a fresh UpdateStep: lhs = the assigned tensor, rhs = the
 * distinct operand tensors in order of appearance. */
#include "eval.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

void code_append(St *st, Code *dst, const Code *src) {
  for (int i = 0; i < src->asgns.len; i++) vec_push(st->a, &dst->asgns, src->asgns.items[i]);
}

bool eval_code_body(St *st, const Frame *fr, const Expr *body, Code *dst, const char *what) {
  Value *b = eval(st, fr, body);
  if (!b) return false;
  if (b->kind == V_CODE) code_append(st, dst, &b->code);
  else if (b->kind != V_UNIT) {
    diag_error(&st->c->diag, body->loc, "the body of %s must be code, got %s", what, val_kind_name(b));
    return false;
  }
  return true;
}

/* ---- subgraphs ---- */

static char *subgraph(St *st, Tensor *t, int mode, int new_from) {
  return graph_subgraph(st->a, st->g, t, mode, new_from);
}

static bool was_emitted(St *st, Tensor *t) {
  for (int i = 0; i < st->emitted.len; i++)
    if (st->emitted.items[i] == t) return true;
  return false;
}

static int by_id(const void *x, const void *y) {
  int a = (*(Tensor *const *)x)->id, b = (*(Tensor *const *)y)->id;
  return (a > b) - (a < b);
}

/* The forward code of t's subgraph, in tensor order. Called for every leaf that is a new
 * intermediate: the walk's memory is reused and only what it met is sorted (a deep
 * model's update step made one walk per parameter, each as large as the graph). */
void subgraph_forward(St *st, Tensor *t, Code *out, int mode, int new_from) {
  GraphWalk *w = &st->walk;
  graph_walk(st->a, st->g, t, mode, new_from, w);
  int n = w->marked.len;
  Tensor **met = ANEWN(st->a, Tensor *, n + 1);
  memcpy(met, w->marked.items, sizeof(Tensor *) * (size_t)n);
  qsort(met, (size_t)n, sizeof *met, by_id);
  for (int k = 0; k < n; k++) {
    Tensor *u = met[k];
    int i = u->id;
    /* Mode 1 pulls in existing computations (a learning-rate schedule) once per item. */
    if (mode == 1 && i < new_from) {
      if (was_emitted(st, u)) continue;
      vec_push(st->a, &st->emitted, u);
    }
    code_append(st, out, &u->fwd);
  }
}

/* ---- accessors ---- */

/* "T is not differentiable: it has no WHAT". Library code asking for it (grad_update's
 * loss.grad) reports at the user's application, which names the tensor to fix, with
 * the function applied; no "in this application" note then. */
static void nodiff_error(St *st, Loc loc, const Tensor *t, const char *what) {
  const char *name = t->name ? arena_printf(st->a, "'%s'", t->name) : "this tensor";
  if (loc_in_library(st, loc) && st->user_loc.file && st->user_fn) {
    diag_error(&st->c->diag, st->user_loc, "%s is not differentiable: it has no %s (which '%s' needs)", name, what,
               graph_op_token(st->user_fn));
    st->noted = st->c->diag.errors;
  } else {
    diag_error(&st->c->diag, loc, "%s is not differentiable: it has no %s", name, what);
  }
}

static const char *tensor_what(St *st, const Tensor *t) {
  if (t->name) return arena_printf(st->a, "'%s'", t->name);
  if (t->kind == TK_OP && t->op_name) return arena_printf(st->a, "the result of '%s'", graph_op_token(t->op_name));
  if (t->kind == TK_CONST && t->init.kind == INIT_CONST && !t->dim_embed)
    return arena_printf(st->a, "the number %g", t->init.value);
  if (t->kind == TK_CONST && t->init.kind == INIT_VALUES) return "the literal";
  if (t->kind == TK_CONST && t->init.kind == INIT_RANGE) return "the range";
  return "the tensor created here";
}

/* After "T is not differentiable": why, at the tensor that broke the chain from the
 * parameters (a %cd input, a constant, a comparison, a let%cd), following the first
 * argument of tensors whose arguments all lack a gradient. A PyTorch user expects
 * requires_grad to flow; here the rule is in what created the tensor. */
static void note_nodiff(St *st, const Tensor *t) {
  const Tensor *first = t;
  const char *asked = t->name ? arena_printf(st->a, "'%s'", t->name) : "the tensor";
  for (int depth = 0; t && depth < 1000; depth++) {
    /* the tensor asked for is itself where the chain breaks */
    const char *so = t == first ? "" : arena_printf(st->a, ", so nothing %s is computed from has a gradient", asked);
    if (t->nodiff) {
      diag_note(&st->c->diag, t->loc, "%s has no gradient: %s", tensor_what(st, t), t->nodiff);
      return;
    }
    switch (t->kind) {
    case TK_TERM:
      diag_note(&st->c->diag, t->loc,
                "%s is declared in %%cd code: a host input, not a parameter%s; declare parameters in %%op "
                "({ w } in a let%%op)",
                tensor_what(st, t), so);
      return;
    case TK_CONST:
      diag_note(&st->c->diag, t->loc, "%s is a constant%s", tensor_what(st, t), *so ? so : " (not a parameter)");
      return;
    case TK_PARAM:
      return;
    case TK_OP:
      break;
    }
    const UpdateStep *s = t->step;
    if (!s || s->nrhs == 0) return;
    const Tensor *next = s->rhs[0];
    for (int k = 0; k < s->nrhs; k++) /* a named argument says more than a number */
      if (s->rhs[k]->kind != TK_CONST || s->rhs[k]->name) {
        next = s->rhs[k];
        break;
      }
    t = next;
  }
}

static Tensor *field_tensor(St *st, const Frame *fr, Value *v, const Expr *e) {
  if (v->kind == V_TENSOR) return v->t;
  return to_tensor(st, fr, v, e->a->loc, arena_printf(st->a, "the target of .%s", e->str));
}

/* After "unknown accessor": what a PyTorch method is here (x.sum, x.T, loss.backward),
 * a function of that name applied as a function (x.mean is mean x), or the accessor a
 * typo meant. */
static void note_accessor(St *st, const Frame *fr, const Expr *e) {
  static const struct { const char *method, *instead; } torch[] = {
      {"sum", "reduce with an einsum: x ++ \"...|...->... => 0\" sums every axis, a spec naming axes sums those"},
      {"max", "reduce with a max-einsum: x @^^ \"...|...->... => 0\""},
      {"T", "transpose x swaps the input and output axes; x ++ \"ij=>ji\" permutes axes"},
      {"t", "transpose x swaps the input and output axes; x ++ \"ij=>ji\" permutes axes"},
      {"permute", "permute axes with an einsum: x ++ \"ijk=>kij\""},
      {"backward", "gradients are code: let%cd step = grad_update loss (forward, zero grads, backprop)"},
      {"zero_grad", "the accessor is .zero_grads"},
      {"item", "a tensor's values are read by the host: tdslc --run --print NAME, or tdsl_tensor"},
      {"detach", "stop_gradient x, or compute it in %cd code (not differentiated)"},
  };
  const char *f = e->str;
  for (size_t i = 0; i < sizeof torch / sizeof *torch; i++)
    if (!strcmp(f, torch[i].method)) {
      diag_note(&st->c->diag, e->loc, "tensors have no methods: %s", torch[i].instead);
      return;
    }
  Value *fn = env_lookup(fr, st, f);
  if (fn && fn->kind == V_FN) {
    diag_note(&st->c->diag, e->loc, "'%s' is a function: apply it, as in %s x", f, f);
    return;
  }
  static const char *const names[] = {"value", "grad", "forward", "backprop", "zero_grads", "params"};
  int best_d = INT_MAX;
  const char *best = NULL;
  for (size_t i = 0; i < sizeof names / sizeof *names; i++)
    if (diag_near(st->a, f, names[i], &best_d)) best = names[i];
  if (best) diag_note(&st->c->diag, e->loc, "did you mean '.%s'?", best);
}

Value *eval_field(St *st, const Frame *fr, const Expr *e) {
  Value *v = eval(st, fr, e->a);
  if (!v) return NULL;
  const char *f = e->str;
  if (!strcmp(f, "value") || !strcmp(f, "grad")) {
    Tensor *t = field_tensor(st, fr, v, e);
    if (!t) return NULL;
    bool grad = f[0] == 'g';
    if (grad && !t->diff && !fr->op) {
      nodiff_error(st, e->loc, t, ".grad");
      note_nodiff(st, t);
      return NULL;
    }
    Value *r = val_tensor(st, t, e->loc);
    r->grad = grad;
    r->slot = v->kind == V_TENSOR ? v->slot : -1;
    return r;
  }
  bool fwd = !strcmp(f, "forward"), bwd = !strcmp(f, "backprop"), zero = !strcmp(f, "zero_grads"),
       params = !strcmp(f, "params");
  if (!fwd && !bwd && !zero && !params) {
    diag_error(&st->c->diag, e->loc,
               "unknown accessor '.%s' (expected value, grad, forward, backprop, zero_grads or params)", f);
    note_accessor(st, fr, e);
    return NULL;
  }
  Tensor *t = field_tensor(st, fr, v, e);
  if (!t) return NULL;
  if (v->kind == V_TENSOR && v->grad) {
    diag_error(&st->c->diag, e->loc, ".%s applies to a tensor, not to a gradient", f);
    return NULL;
  }
  char *seen = subgraph(st, t, 0, 0);
  int nt = st->g->tensors.len;
  if (params) {
    Value *l = val_new(st, V_LIST, e->loc);
    for (int i = 0; i < nt; i++) {
      Tensor *u = VEC_AT(st->g->tensors, Tensor, i);
      if (seen[i] && u->kind == TK_PARAM) vec_push(st->a, &l->items, val_tensor(st, u, e->loc));
    }
    return l;
  }
  Value *c = val_code(st, e->loc);
  if (fwd) {
    graph_forward_code(st->a, st->g, t, &c->code);
  } else if (bwd) {
    if (!t->diff) {
      nodiff_error(st, e->loc, t, "backprop code");
      note_nodiff(st, t);
      return NULL;
    }
    graph_backprop_code(st->a, st->g, t, &c->code);
  } else {
    for (int i = 0; i < nt; i++) {
      Tensor *u = VEC_AT(st->g->tensors, Tensor, i);
      if (!seen[i] || !u->diff) continue;
      UpdateStep *s = step_new(st, LOGIC_POINTWISE_UN, u, 0, NULL, e->loc);
      vec_push(st->a, &c->code.asgns, asgn_new(st->a, u, true, 0, OP_ARG2, false, ae_const(st->a, 0.0), s, e->loc));
    }
  }
  return c;
}

/* ---- comments ---- */

Value *eval_comment(St *st, const Frame *fr, const Expr *e) {
  const char *text = "";
  for (int i = 0; i < e->items.len; i++) {
    const Expr *pe = VEC_AT(e->items, Expr, i);
    Value *p = eval(st, fr, pe);
    if (!p) return NULL;
    const char *s;
    if (p->kind == V_STRING) s = p->s;
    else if (p->kind == V_TENSOR)
      s = arena_printf(st->a, "%s%s", p->t->name ? p->t->name : arena_printf(st->a, "#%d", p->t->id),
                       p->grad ? ".grad" : "");
    else {
      diag_error(&st->c->diag, pe->loc, "a comment part must be a string or a tensor, got %s", val_kind_name(p));
      return NULL;
    }
    text = *text ? arena_printf(st->a, "%s %s", text, s) : s;
  }
  Value *c = val_code(st, e->loc);
  Asgn *a = ANEW(st->a, Asgn);
  a->kind = ASGN_COMMENT;
  a->comment = text;
  a->loc = e->loc;
  vec_push(st->a, &c->code.asgns, a);
  if (e->a && !eval_code_body(st, fr, e->a, &c->code, "a ~~ comment")) return NULL;
  return c;
}

/* ---- assignments ---- */

typedef struct Rhs {
  const Frame *fr; /* %cd frame */
  Code pre;        /* forward code of intermediate tensors */
  Tensor *lhs;
  bool lhs_grad;   /* the left-hand side is lhs's gradient */
  Tensor *ops[3];  /* standalone assignments: the operand tensors (see positional) */
  int nops;
  /* A ~logic other than ".": the spec (or compose/transpose) gives each operand position
   * its own projection, so `x * x ~logic:"ij;jk=>ik"` has two operands, as in OCANNL's
   * rhs1/rhs2. Pointwise assignments share one slot per distinct tensor. */
  bool positional;
  bool reads_lhs;  /* the left-hand side is read on the right (through slot 0) */
  bool reads_lhs_other; /* ... as its other buffer (w.grad on the right of w =: ...) */
  bool scalar_leaf; /* a number (or index symbol value) is read, inlined as a constant */
  PrimOp top;      /* the top-level primitive */
} Rhs;

static bool parse_accum(const char *s, PrimOp *accum, bool *init) {
  if (s[0] != '=') return false;
  s++;
  *init = false;
  if (*s == ':') {
    *init = true;
    s++;
  }
  if (!*s) {
    *accum = OP_ARG2;
    *init = false; /* plain `=:` overwrites */
    return true;
  }
  int op = !strcmp(s, "?/") ? OP_RELU_GATE : !strcmp(s, "?^") ? OP_SAT01_GATE : op_by_infix(s);
  if (op < 0 || !op_info[op].accum_ok) return false;
  *accum = (PrimOp)op;
  return true;
}

static AExpr *leaf(St *st, Rhs *r, const Expr *e);

/* `prim A`, `prim A B`, `prim (A, B)`: returns false (no error) if e is not one. */
static bool prim_app(St *st, Rhs *r, const Expr *e, AExpr **out) {
  *out = NULL;
  if (e->kind != E_APP || e->a->kind != E_IDENT) return false;
  int op = op_by_name(e->a->str, 0);
  if (op < 0) return false;
  int arity = op_info[op].arity;
  const Expr *args[3];
  int n = e->args.len;
  for (int i = 0; i < n; i++)
    if (VEC_AT(e->args, Arg, i)->kind != A_POS) return false;
  if (n == 1 && arity > 1 && VEC_AT(e->args, Arg, 0)->e->kind == E_TUPLE) {
    const Expr *tup = VEC_AT(e->args, Arg, 0)->e;
    if (tup->items.len != arity) return false;
    for (int i = 0; i < arity; i++) args[i] = VEC_AT(tup->items, Expr, i);
  } else if (n == arity) {
    for (int i = 0; i < arity; i++) args[i] = VEC_AT(e->args, Arg, i)->e;
  } else
    return false;
  AExpr *a[3] = {NULL, NULL, NULL};
  for (int i = 0; i < arity; i++) {
    a[i] = leaf(st, r, args[i]);
    if (!a[i]) return true; /* error reported; *out stays NULL */
  }
  *out = ae_op(st->a, (PrimOp)op, a[0], a[1], a[2]);
  return true;
}

static bool scalar_const(const Tensor *t) {
  if (t->kind != TK_CONST || t->init.kind != INIT_CONST || t->dim_embed) return false;
  for (int k = 0; k < 3; k++) {
    if (!t->decl[k].given) return false;
    for (int i = 0; i < t->decl[k].n; i++)
      if (t->decl[k].dims[i].d != 1) return false;
  }
  return true;
}

/* The slot of an intermediate tensor inside an op body: that of the first slot tensor
 * it is computed from (it is pointwise over it in every prelude use). */
static int slot_from(const OpInst *inst, Tensor *t, int depth) {
  for (int k = 1; k < inst->nslots; k++)
    if (inst->slots[k] == t) return k;
  if (inst->slots[0] == t) return 0;
  if (depth > 32 || !t->step) return -2;
  for (int i = 0; i < t->step->nrhs; i++) {
    int s = slot_from(inst, t->step->rhs[i], depth + 1);
    if (s != -2) return s;
  }
  return -2;
}

static AExpr *buf_leaf(St *st, Rhs *r, Value *v, const Expr *e, int new_from) {
  Tensor *t = v->t;
  if (!r->positional && !v->grad && scalar_const(t) && t->decl[KIND_OUTPUT].n == 1 && !t->decl[KIND_OUTPUT].dims[0].label) {
    r->scalar_leaf = true;
    return ae_const(st->a, t->init.value);
  }
  /* A new intermediate: emit its forward code, and that of the existing
   * non-differentiable computed tensors it reads (e.g. a learning-rate schedule). */
  if (t->id >= new_from) subgraph_forward(st, t, &r->pre, r->fr->op ? 2 : 1, new_from);
  AExpr *a = ae_buf(st->a, t, v->grad, 0);
  if (v->grad && !t->diff && !r->fr->op) {
    diag_error(&st->c->diag, e->loc, "this tensor is not differentiable: it has no .grad");
    note_nodiff(st, t);
    return NULL;
  }
  const OpInst *inst = r->fr->op;
  if (inst) {
    if (v->slot >= 0) a->slot = v->slot;
    else if (scalar_const(t)) a->slot = -1;
    else if ((a->slot = slot_from(inst, t, 0)) == -2) {
      diag_error(&st->c->diag, e->loc, "this operand is not computed from the operation's arguments");
      diag_note(&st->c->diag, e->loc, "inside an op body, operands are slot tensors (v, v1, g2, ...) or constants");
      return NULL;
    }
    return a;
  }
  if (t == r->lhs) {
    a->slot = 0;
    r->reads_lhs = true;
    if (v->grad != r->lhs_grad) r->reads_lhs_other = true;
    return a;
  }
  for (int i = 0; i < r->nops && !r->positional; i++)
    if (r->ops[i] == t) {
      a->slot = i + 1;
      return a;
    }
  if (r->nops == 3) {
    diag_error(&st->c->diag, e->loc, r->positional ? "an assignment with ~logic can read at most 3 tensors besides its left-hand side"
                                                   : "an assignment can read at most 3 distinct tensors besides its left-hand side");
    return NULL;
  }
  r->ops[r->nops++] = t;
  a->slot = r->nops;
  return a;
}

static AExpr *leaf(St *st, Rhs *r, const Expr *e) {
  AExpr *p;
  if (prim_app(st, r, e, &p)) return p;
  if (e->kind == E_UNOP && (!strcmp(e->str, "!.") || !strcmp(e->str, "!..") || !strcmp(e->str, "!@"))) {
    Value *x = eval(st, r->fr, e->a);
    if (!x) return NULL;
    if (e->str[1] == '@') {
      if (x->kind != V_SYM) {
        diag_error(&st->c->diag, e->a->loc, "'!@' expects an index symbol, got %s", val_kind_name(x));
        return NULL;
      }
      AExpr *s = ANEW(st->a, AExpr);
      s->kind = AE_SYM;
      s->sym = x->sym;
      r->scalar_leaf = true;
      return s;
    }
    double c;
    if (!bang_number(st, e->str, x, e->loc, e->a->loc, &c)) return NULL;
    if (!r->positional) {
      r->scalar_leaf = true;
      return ae_const(st->a, c);
    }
    int from = st->g->tensors.len;
    Tensor *t = to_tensor(st, r->fr, val_float(st, c, e->loc), e->loc, "an assignment operand");
    return t ? buf_leaf(st, r, val_tensor(st, t, e->loc), e, from) : NULL;
  }
  int new_from = st->g->tensors.len;
  Value *v = eval(st, r->fr, e);
  if (!v) return NULL;
  if (val_is_number(v) && !r->positional) {
    r->scalar_leaf = true;
    return ae_const(st->a, val_number(v));
  }
  if (v->kind == V_SYM) {
    AExpr *s = ANEW(st->a, AExpr);
    s->kind = AE_SYM;
    s->sym = v->sym;
    r->scalar_leaf = true;
    return s;
  }
  /* With a ~logic that names its operands, a number is one of them: `d =: 2.5 < b
   * ~logic:"|->; |-> => |->"` has two (it was folded away: "the operation has 1"). */
  if (val_is_number(v) || v->kind == V_LIST || v->kind == V_TUPLE || v->kind == V_ARRAY || v->kind == V_NDLIT) {
    Tensor *t = to_tensor(st, r->fr, v, e->loc, "an assignment operand");
    if (!t) return NULL;
    v = val_tensor(st, t, e->loc);
  }
  if (v->kind != V_TENSOR) {
    diag_error(&st->c->diag, e->loc, "an assignment operand must be a tensor or a number, got %s", val_kind_name(v));
    return NULL;
  }
  return buf_leaf(st, r, v, e, new_from);
}

static AExpr *rhs_top(St *st, Rhs *r, const Expr *e) {
  r->top = OP_ID;
  if (e->kind == E_BINOP) {
    int op = op_by_infix(e->str);
    if (op >= 0) {
      AExpr *a = leaf(st, r, e->a);
      if (!a) return NULL;
      AExpr *b = leaf(st, r, e->b);
      if (!b) return NULL;
      r->top = (PrimOp)op;
      return ae_op(st->a, (PrimOp)op, a, b, NULL);
    }
  }
  AExpr *p;
  if (prim_app(st, r, e, &p)) {
    if (p) r->top = p->op;
    return p;
  }
  AExpr *a = leaf(st, r, e);
  return a ? ae_op(st->a, OP_ID, a, NULL, NULL) : NULL;
}

/* The projections of a standalone assignment: ~logic, else the primitive's default
 * (pointwise; fma composes). `*` and `/` have no default projection in OCANNL
 * ("none"); we use pointwise for them too rather than rejecting the code. */
static UpdateStep *standalone_step(St *st, Rhs *r, Value *logic, const Expr *e) {
  LogicKind kind;
  const Spec *spec = NULL;
  bool use_padding = false;
  Loc spec_loc = {0};
  if (logic) {
    if (logic->kind == V_STRING && !strcmp(logic->s, "@|")) { /* before its operand count */
      diag_error(&st->c->diag, logic->loc, "~logic:\"@|\" is not available in assignments");
      return NULL;
    }
    if (!logic_from_value(st, r->fr, logic, r->nops, &kind, &spec, &use_padding, &spec_loc)) {
      if (r->positional && r->reads_lhs) /* numpy's out= overlapping an operand */
        diag_note(&st->c->diag, e->loc, "the left-hand side read on the right%s is not an operand of ~logic: it is "
                                        "read at the cell being written; copy it into another tensor first",
                  !r->reads_lhs_other ? ""
                  : r->lhs_grad       ? " (as its value, indexed like the left-hand side)"
                                      : " (as its gradient, indexed like the left-hand side)");
      return NULL;
    }
  } else if (r->top == OP_FMA && r->nops == 3)
    kind = LOGIC_COMPOSE_TERN;
  else
    kind = r->nops <= 1 ? LOGIC_POINTWISE_UN : r->nops == 2 ? LOGIC_POINTWISE_BIN : LOGIC_POINTWISE_TERN;
  UpdateStep *s = step_new(st, kind, r->lhs, r->nops, r->ops, e->loc);
  /* OCANNL's %cd reads a number as a tensor of shape [1]: `{ t } =: !.2.0` gives t an axis
   * (infer_logic.c's scalar_operand). A gradient has its tensor's shape: `loss.grad =: 1`
   * seeds a 0-d loss as it is. */
  s->scalar_arg = r->scalar_leaf && !r->fr->op && !r->positional && !r->lhs_grad;
  s->spec = spec;
  s->use_padding = use_padding;
  s->spec_loc = spec_loc;
  return s;
}

/* OCANNL prohibits inline declarations on the right of an assignment (they would
 * get no label information there). Function bodies are their own scopes. */
static const Expr *find_record(const Expr *e) {
  if (!e || e->kind == E_FUN) return NULL;
  if (e->kind == E_RECORD) return e;
  const Expr *r;
  if ((r = find_record(e->a)) || (r = find_record(e->b)) || (r = find_record(e->c))) return r;
  for (int i = 0; i < e->items.len; i++)
    if ((r = find_record(VEC_AT(e->items, Expr, i)))) return r;
  for (int i = 0; i < e->args.len; i++)
    if ((r = find_record(VEC_AT(e->args, Arg, i)->e))) return r;
  return NULL;
}

/* ---- the assigned-to tensor ----
 *
 * What the left-hand side may be (as OCANNL's %cd, which refuses "an expression building
 * a new tensor" there): a tensor that existed before the left-hand side was evaluated (a
 * name, NAME.value, NAME.grad, a slot inside an op body, whatever a function returns of
 * those), a tensor it declares (`{ z }`: storage the assignment fills), or a row of one
 * of those, `T @| SYM`. Anything else it computes (`x + y`, `x ++ "i=>i"`, `range 3`) is
 * an anonymous temporary nothing reads: assigning to it compiled and did nothing. */

/* The slice `t @| sym` made by the prelude's `slice` op: forward code exactly
 * `v =: id v1` over a LOGIC_BATCH_SLICE step. A user op with ~logic:"@|" computing
 * something else is no view of its argument and is not written through. */
static bool plain_slice(const Tensor *t) {
  if (t->kind != TK_OP || !t->step || t->step->kind != LOGIC_BATCH_SLICE || t->step->nrhs != 1 ||
      t->fwd.asgns.len != 1)
    return false;
  const Asgn *a = t->fwd.asgns.items[0];
  const AExpr *r = a->rhs;
  return a->kind == ASGN_OP && a->accum == OP_ARG2 && !a->init_neutral && !a->lhs.grad && a->lhs_slot == 0 &&
         a->step == t->step && r && r->kind == AE_OP && r->op == OP_ID && r->args[0] &&
         r->args[0]->kind == AE_BUF && !r->args[0]->buf.grad && r->args[0]->slot == 1;
}

/* Checks that t (the value of the left-hand side, first made at tensor index new_from)
 * can be assigned. A slice of an assignable tensor is written through: *pre gets the
 * forward code of the slices (so that cells the assignment leaves, or accumulates into,
 * hold the row's values), *post the copies back into each sliced tensor's row, innermost
 * slice first. Reads on the right then all happen before the row changes, as numpy's
 * `a[n] += f(a)`. */
static bool assignable(St *st, Tensor *t, int new_from, const Expr *lhs, Code *pre, Code *post, int depth) {
  if (t->id < new_from || t->kind == TK_TERM || t->kind == TK_PARAM) return true;
  if (plain_slice(t) && depth < 64) {
    Tensor *base = t->step->rhs[0];
    if (!assignable(st, base, new_from, lhs, pre, post, depth + 1)) return false;
    code_append(st, pre, &t->fwd);
    AExpr *row = ae_op(st->a, OP_ID, ae_buf(st->a, t, false, 0), NULL, NULL);
    vec_push(st->a, &post->asgns, asgn_new(st->a, base, false, 1, OP_ARG2, false, row, t->step, lhs->loc));
    return true;
  }
  diag_error(&st->c->diag, lhs->loc,
             "the left-hand side of an assignment %s: assigning to it would change nothing visible",
             t->kind == TK_OP ? (depth ? "slices a new tensor it computes" : "computes a new tensor")
                              : (depth ? "slices a new constant tensor it creates" : "creates a new constant tensor"));
  diag_note(&st->c->diag, lhs->loc,
            "assign to a tensor name, NAME.grad, an inline declaration { NAME }, or a row NAME @| SYM of one");
  return false;
}

Value *eval_assign(St *st, const Frame *outer, const Expr *e) {
  Frame fr = *outer;
  fr.mode = M_CD; /* assignment operands are non-differentiable */
  PrimOp accum;
  bool init;
  if (!parse_accum(e->str, &accum, &init)) {
    diag_error(&st->c->diag, e->loc, "unknown assignment operator '%s'", e->str);
    return NULL;
  }
  Value *logic = NULL;
  for (int i = 0; i < e->args.len; i++) {
    const Arg *a = VEC_AT(e->args, Arg, i);
    if (a->label && !strcmp(a->label, "logic")) {
      if (!(logic = eval(st, &fr, a->e))) return NULL;
    } else if (!a->label || strcmp(a->label, "projections") != 0) {
      diag_error(&st->c->diag, a->loc, "an assignment accepts only ~logic and ~projections options");
      return NULL;
    }
  }
  const Expr *rec = find_record(e->b);
  if (rec) {
    diag_error(&st->c->diag, rec->loc, "an inline declaration ('%s') cannot appear on the right of an assignment",
               rec->str);
    diag_note(&st->c->diag, e->a->loc, "declare it on the left, or in a binding of its own");
    return NULL;
  }
  int lhs_from = st->g->tensors.len;
  Value *lv = eval(st, &fr, e->a);
  if (!lv) return NULL;
  if (lv->kind != V_TENSOR) {
    diag_error(&st->c->diag, e->a->loc, "the left-hand side of an assignment must be a tensor, got %s",
               val_kind_name(lv));
    return NULL;
  }
  Code through_pre = {0}, through_post = {0};
  if (!assignable(st, lv->t, lhs_from, e->a, &through_pre, &through_post, 0)) return NULL;
  Value *code = val_code(st, e->loc);
  /* Inside an op body, gradients of non-differentiable arguments get no code. */
  if (outer->op && lv->grad && !lv->t->diff) return code;
  Rhs r = {.fr = &fr, .lhs = lv->t, .lhs_grad = lv->grad, .positional = logic && !outer->op && logic->kind == V_STRING && strcmp(logic->s, ".") != 0};
  AExpr *rhs = rhs_top(st, &r, e->b);
  if (!rhs) return NULL;
  /* Compose sums a[i,k] op b[k] over k: with / or ** that reads as a matrix inverse or
   * power but computes neither, so it is refused as OCANNL's %cd refuses it (a semiring
   * such as + with "@" stays allowed). */
  if (logic && logic->kind == V_STRING && !strcmp(logic->s, "@") && (r.top == OP_DIV || r.top == OP_POW)) {
    const char *tok = op_info[r.top].infix;
    const char *shown = e->b->kind == E_BINOP ? tok : op_info[r.top].name;
    diag_error(&st->c->diag, logic->loc,
               "~logic:\"@\" (compose) with '%s' looks like a matrix inverse or power but computes neither", shown);
    diag_note(&st->c->diag, e->loc, "use ~logic:\".\" for a pointwise '%s', or an einsum spec for a custom contraction",
              shown);
    return NULL;
  }
  UpdateStep *step;
  int lhs_slot = 0;
  if (outer->op) {
    step = outer->op->step;
    lhs_slot = lv->slot;
    if (lhs_slot < 0) {
      diag_error(&st->c->diag, e->a->loc, "inside an op body the left-hand side must be a slot (v, g, g1, ...)");
      return NULL;
    }
    if (logic) {
      diag_error(&st->c->diag, e->loc, "inside an op body assignments use the operation's ~logic");
      return NULL;
    }
  } else if (!(step = standalone_step(st, &r, logic, e)))
    return NULL;
  code->code = r.pre;
  code_append(st, &code->code, &through_pre);
  vec_push(st->a, &code->code.asgns, asgn_new(st->a, lv->t, lv->grad, lhs_slot, accum, init, rhs, step, e->loc));
  for (int i = through_post.asgns.len - 1; i >= 0; i--) /* innermost slice first */
    vec_push(st->a, &code->code.asgns, through_post.asgns.items[i]);
  return code;
}
