/* graph_code.c: subgraphs and the code behind the .forward / .backprop accessors. */
#include "graph.h"

bool *graph_subgraph(Arena *a, const Graph *g, const Tensor *t) {
  int n = g->tensors.len;
  bool *mark = ANEWN(a, bool, n > 0 ? n : 1);
  if (!t || t->id < 0 || t->id >= n) return mark;
  /* A worklist rather than relying on arguments having smaller ids. */
  const Tensor **stack = ANEWN(a, const Tensor *, n);
  int sp = 0;
  mark[t->id] = true;
  stack[sp++] = t;
  while (sp > 0) {
    const Tensor *u = stack[--sp];
    if (!u->step) continue;
    for (int k = 0; k < u->step->nrhs; k++) {
      Tensor *r = u->step->rhs[k];
      if (r && r->id >= 0 && r->id < n && !mark[r->id]) {
        mark[r->id] = true;
        stack[sp++] = r;
      }
    }
  }
  return mark;
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
