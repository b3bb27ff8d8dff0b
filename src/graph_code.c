/* graph_code.c: subgraphs and the code behind the .forward / .backprop accessors. */
#include "graph.h"

typedef struct Walk {
  bool *mark;
  const Tensor **stack;
  int sp, n;
} Walk;

static void visit(Walk *w, const Tensor *r) {
  if (r && r->id >= 0 && r->id < w->n && !w->mark[r->id]) {
    w->mark[r->id] = true;
    w->stack[w->sp++] = r;
  }
}

static void visit_leaves(Walk *w, const AExpr *e) {
  if (!e) return;
  if (e->kind == AE_BUF) visit(w, e->buf.t);
  if (e->kind == AE_OP)
    for (int i = 0; i < 3; i++) visit_leaves(w, e->args[i]);
}

bool *graph_subgraph(Arena *a, const Graph *g, const Tensor *t) {
  int n = g->tensors.len;
  Walk w = {.mark = ANEWN(a, bool, n > 0 ? n : 1), .n = n};
  if (!t || t->id < 0 || t->id >= n) return w.mark;
  /* A worklist rather than relying on arguments having smaller ids. The arguments of a
   * tensor are those of its step and everything its forward code reads: a stacked
   * literal [a; b] reads b through a second step of its own. */
  w.stack = ANEWN(a, const Tensor *, n);
  visit(&w, t);
  while (w.sp > 0) {
    const Tensor *u = w.stack[--w.sp];
    if (u->step)
      for (int k = 0; k < u->step->nrhs; k++) visit(&w, u->step->rhs[k]);
    for (int i = 0; i < u->fwd.asgns.len; i++) {
      const Asgn *as = u->fwd.asgns.items[i];
      if (as->kind != ASGN_OP) continue;
      if (as->step)
        for (int k = 0; k < as->step->nrhs; k++) visit(&w, as->step->rhs[k]);
      visit_leaves(&w, as->rhs);
    }
  }
  return w.mark;
}

static void append(Arena *a, Code *dst, const Code *src) {
  for (int i = 0; i < src->asgns.len; i++) vec_push(a, &dst->asgns, src->asgns.items[i]);
}

Code graph_forward_code(Arena *a, const Graph *g, const Tensor *t) {
  Code c = {0};
  bool *mark = graph_subgraph(a, g, t);
  for (int i = 0; i < g->tensors.len; i++) {
    Tensor *u = VEC_AT(g->tensors, Tensor, i);
    if (mark[i] && u->kind == TK_OP) append(a, &c, &u->fwd);
  }
  return c;
}

Code graph_backprop_code(Arena *a, const Graph *g, const Tensor *t) {
  Code c = {0};
  bool *mark = graph_subgraph(a, g, t);
  for (int i = g->tensors.len - 1; i >= 0; i--) {
    Tensor *u = VEC_AT(g->tensors, Tensor, i);
    if (mark[i] && u->kind == TK_OP && u->diff) append(a, &c, &u->bwd);
  }
  return c;
}
