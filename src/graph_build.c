/* graph_build.c: the graph's constructors. Every node of a Graph is made here, from an
 * arena and the graph it joins; staging (src/eval*.c, which adds its own source
 * locations) and the unit tests build graphs only through these. */
#include "graph.h"

UpdateStep *graph_step(Arena *a, Graph *g, LogicKind kind, Tensor *lhs, int nrhs, Tensor **rhs, Loc loc) {
  UpdateStep *s = ANEW(a, UpdateStep);
  s->id = g->steps.len;
  s->kind = kind;
  s->lhs = lhs;
  s->nrhs = nrhs;
  for (int i = 0; i < nrhs && i < 3; i++) s->rhs[i] = rhs[i];
  s->loc = loc;
  vec_push(a, &g->steps, s);
  return s;
}

Tensor *graph_tensor(Arena *a, Graph *g, TensorKind kind, Loc loc) {
  Tensor *t = ANEW(a, Tensor);
  t->id = g->tensors.len;
  t->kind = kind;
  t->loc = loc;
  t->init.kind = INIT_ZERO;
  vec_push(a, &g->tensors, t);
  if (kind != TK_OP) t->step = graph_step(a, g, LOGIC_TERMINAL, t, 0, NULL, loc);
  return t;
}

void graph_name(Arena *a, Graph *g, const char *name, Tensor *t) {
  NamedTensor *n = ANEW(a, NamedTensor);
  n->name = name;
  n->t = t;
  vec_push(a, &g->names, n);
}

AExpr *ae_buf(Arena *a, Tensor *t, bool grad, int slot) {
  AExpr *e = ANEW(a, AExpr);
  e->kind = AE_BUF;
  e->buf.t = t;
  e->buf.grad = grad;
  e->slot = slot;
  return e;
}

AExpr *ae_const(Arena *a, double x) {
  AExpr *e = ANEW(a, AExpr);
  e->kind = AE_CONST;
  e->value = x;
  return e;
}

AExpr *ae_op(Arena *a, PrimOp op, AExpr *x, AExpr *y, AExpr *z) {
  AExpr *e = ANEW(a, AExpr);
  e->kind = AE_OP;
  e->op = op;
  e->args[0] = x;
  e->args[1] = y;
  e->args[2] = z;
  return e;
}

Asgn *asgn_new(Arena *a, Tensor *lhs, bool grad, int lhs_slot, PrimOp accum, bool init, AExpr *rhs,
               UpdateStep *step, Loc loc) {
  Asgn *as = ANEW(a, Asgn);
  as->kind = ASGN_OP;
  as->lhs.t = lhs;
  as->lhs.grad = grad;
  as->lhs_slot = lhs_slot;
  as->accum = accum;
  as->init_neutral = init;
  as->rhs = rhs;
  as->step = step;
  as->loc = loc;
  return as;
}
