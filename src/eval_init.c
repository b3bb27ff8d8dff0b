/* eval_init.c: initializer expressions (`{ w = (uniform () - 0.5) *. 0.18 }`, tdsl(7)
 * section 4). The expression is staged like any other: the prelude's pointwise
 * operations build a small graph over constant leaves. That graph is then turned into
 * a per-cell postfix program (InitOp, graph.h) that `init` evaluates for every cell of
 * the parameter, and the temporary tensors are dropped: the model's code never sees
 * them, the metadata carries the program. So random generators are drawn per cell of
 * the parameter itself (never broadcast from a smaller random tensor), and kaiming /
 * xavier read the parameter's fans after inference.
 * Leaves with a shape of their own (ranges, literals) must all have the same shape,
 * which becomes the parameter's declared shape; numbers broadcast. */
#include <string.h>

#include "eval.h"

enum { MAX_INIT_OPS = 4096, MAX_INIT_DEPTH = 64 };

typedef struct Conv {
  St *st;
  Loc loc;
  PtrVec ops;        /* InitOp* */
  const Tensor *shaped; /* the first leaf with a shape of its own */
  int depth, max_depth;
} Conv;

static bool conv_fail(Conv *c, const char *what) {
  diag_error(&c->st->c->diag, c->loc, "an initializer can only combine numbers, literals, ranges and random generators pointwise; %s", what);
  return false;
}

static bool push(Conv *c, InitOpKind k, int pops) {
  if (c->ops.len >= MAX_INIT_OPS) return conv_fail(c, "this one is too large");
  InitOp *o = ANEW(c->st->a, InitOp);
  o->kind = k;
  vec_push(c->st->a, &c->ops, o);
  c->depth += 1 - pops;
  if (c->depth > c->max_depth) c->max_depth = c->depth;
  return c->max_depth <= MAX_INIT_DEPTH || conv_fail(c, "this one nests too deeply");
}

static InitOp *last(Conv *c) { return VEC_AT(c->ops, InitOp, c->ops.len - 1); }

static bool same_decl(const Tensor *a, const Tensor *b) {
  for (int k = 0; k < 3; k++) {
    const RowDecl *x = &a->decl[k], *y = &b->decl[k];
    if (x->given != y->given || x->n != y->n) return false;
    for (int i = 0; i < x->n; i++)
      if (x->dims[i].d != y->dims[i].d) return false;
  }
  return true;
}

static bool shaped_leaf(Conv *c, const Tensor *t) {
  if (!c->shaped) c->shaped = t;
  else if (!same_decl(c->shaped, t))
    return conv_fail(c, "its ranges and literals have different shapes");
  return true;
}

static bool conv_tensor(Conv *c, const Tensor *t);

static bool conv_aexpr(Conv *c, const UpdateStep *s, const AExpr *e) {
  switch (e->kind) {
  case AE_CONST:
    if (!push(c, IO_CONST, 0)) return false;
    last(c)->value = e->value;
    return true;
  case AE_SYM: return conv_fail(c, "it reads an index symbol");
  case AE_BUF:
    if (e->buf.grad) return conv_fail(c, "it reads a gradient");
    if (e->slot == 0) return conv_fail(c, "it reads its own result");
    return conv_tensor(c, e->slot < 0 ? e->buf.t : s->rhs[e->slot - 1]);
  case AE_OP: {
    /* Every primitive is a function of its operands' cells alone, which init evaluates
     * as op_eval does (runtime/tdslrt.c, step_apply): so any of them may appear, as
     * LANGUAGE.md allows any expression of numbers, literals, ranges and generators
     * (a comparison makes a random mask: uniform () < 0.5). */
    int n = op_info[e->op].arity;
    for (int i = 0; i < n; i++)
      if (!conv_aexpr(c, s, e->args[i])) return false;
    if (!push(c, IO_PRIM, n)) return false;
    last(c)->op = e->op;
    return true;
  }
  }
  return false;
}

/* A constant leaf: its own init becomes part of the program. */
static bool conv_const(Conv *c, const Tensor *t) {
  const Init *in = &t->init;
  switch (in->kind) {
  case INIT_ZERO:
  case INIT_CONST:
    if (t->dim_embed) /* its value comes from shape inference, after init programs are made */
      return conv_fail(c, "dim of a captured label is not available to an initializer");
    if (!push(c, IO_CONST, 0)) return false;
    last(c)->value = in->kind == INIT_CONST ? in->value : 0.0;
    return true;
  case INIT_RANGE: return shaped_leaf(c, t) && push(c, IO_RANGE, 0);
  case INIT_VALUES:
    if (!shaped_leaf(c, t) || !push(c, IO_VALUES, 0)) return false;
    last(c)->values = in->values;
    last(c)->nvalues = in->nvalues;
    return true;
  case INIT_UNIFORM: return push(c, IO_UNIFORM, 0);
  case INIT_EXPR:
    for (int i = 0; i < in->nops; i++) {
      const InitOp *o = &in->ops[i];
      int pops = o->kind == IO_PRIM ? op_info[o->op].arity : 0;
      if (!push(c, o->kind, pops)) return false;
      *last(c) = *o;
    }
    return true;
  case INIT_FILE: return conv_fail(c, "it reads a file");
  }
  return false;
}

static bool conv_tensor(Conv *c, const Tensor *t) {
  if (t->kind == TK_CONST) return conv_const(c, t);
  if (t->kind != TK_OP) return conv_fail(c, arena_printf(c->st->a, "it reads the %s '%s'",
                                                         t->kind == TK_PARAM ? "parameter" : "input",
                                                         t->name ? t->name : "?"));
  const UpdateStep *s = t->step;
  bool pointwise = s && (s->kind == LOGIC_POINTWISE_UN || s->kind == LOGIC_POINTWISE_BIN ||
                         s->kind == LOGIC_POINTWISE_TERN);
  if (!pointwise || t->fwd.asgns.len != 1)
    return conv_fail(c, "it has an operation that is not pointwise");
  const Asgn *a = VEC_AT(t->fwd.asgns, Asgn, 0);
  bool overwrite = a->accum == OP_ARG2 || (a->init_neutral && a->accum == OP_ADD);
  if (a->kind != ASGN_OP || a->lhs.t != t || a->lhs.grad || !overwrite)
    return conv_fail(c, "it has an operation that is not pointwise");
  return conv_aexpr(c, s, a->rhs);
}

bool init_from_tensor(St *st, Tensor *t, const Tensor *root, Loc loc) {
  Conv c = {st, loc, {0}, NULL, 0, 0};
  if (!conv_tensor(&c, root)) return false;
  InitOp *ops = ANEWN(st->a, InitOp, c.ops.len);
  for (int i = 0; i < c.ops.len; i++) ops[i] = *VEC_AT(c.ops, InitOp, i);
  t->init = (Init){.kind = INIT_EXPR, .ops = ops, .nops = c.ops.len};
  if (c.shaped)
    for (int k = 0; k < 3; k++)
      if (c.shaped->decl[k].given) t->decl[k] = c.shaped->decl[k];
  return true;
}

/* The random generators other than uniform (), as programs; used as a tensor outside
 * an initializer, the fans are those of the tensor they fill. */
#define CONST(x) {IO_CONST, x, NULL, 0, OP_ID}
#define LEAF(k) {k, 0, NULL, 0, OP_ID}
#define PRIM(o) {IO_PRIM, 0, NULL, 0, o}
static const InitOp normal_ops[] = {LEAF(IO_NORMAL)};
/* uniform in [-bound, bound): (2u - 1) * sqrt(6 / fans) */
static const InitOp kaiming_ops[] = {LEAF(IO_UNIFORM), CONST(2), PRIM(OP_MUL), CONST(1), PRIM(OP_SUB),
                                     CONST(6), LEAF(IO_FAN_IN), PRIM(OP_DIV), PRIM(OP_SQRT), PRIM(OP_MUL)};
static const InitOp xavier_ops[] = {LEAF(IO_UNIFORM), CONST(2), PRIM(OP_MUL), CONST(1), PRIM(OP_SUB),
                                    CONST(6), LEAF(IO_FAN_IN), LEAF(IO_FAN_OUT), PRIM(OP_ADD),
                                    PRIM(OP_DIV), PRIM(OP_SQRT), PRIM(OP_MUL)};

static Value *random_builtin(St *st, const InitOp *ops, int nops, Loc loc) {
  Tensor *t = tensor_new(st, TK_CONST, loc);
  t->init = (Init){.kind = INIT_EXPR, .ops = ops, .nops = nops};
  return val_tensor(st, t, loc);
}

static Value *bi_normal(St *st, Fn *f, const Frame *call, Loc loc) {
  return random_builtin(st, normal_ops, 1, loc);
}
static Value *bi_kaiming(St *st, Fn *f, const Frame *call, Loc loc) {
  return random_builtin(st, kaiming_ops, sizeof kaiming_ops / sizeof kaiming_ops[0], loc);
}
static Value *bi_xavier(St *st, Fn *f, const Frame *call, Loc loc) {
  return random_builtin(st, xavier_ops, sizeof xavier_ops / sizeof xavier_ops[0], loc);
}

void install_init_builtins(St *st) {
  builtin_install(st, "normal", "()", bi_normal);
  builtin_install(st, "kaiming_uniform", "()", bi_kaiming);
  builtin_install(st, "xavier_uniform", "()", bi_xavier);
}
