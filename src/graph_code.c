/* graph_code.c: code derived from the graph: the forward and backprop code of a
 * tensor's subgraph (what `t.forward` / `t.backprop` denote in %cd, and what
 * `--call T.forward` runs). */
#include <string.h>

#include "eval.h"

/* The tensors t reads: its step's arguments, and those of the other steps its forward
 * code uses (a stacked tensor has one step per element). */
static void leaves_of(Arena *a, const AExpr *e, PtrVec *out) {
  if (!e) return;
  if (e->kind == AE_BUF && e->buf.t) vec_push(a, out, e->buf.t);
  if (e->kind == AE_OP)
    for (int i = 0; i < 3; i++) leaves_of(a, e->args[i], out);
}

static void inputs_of(Arena *a, const Tensor *t, PtrVec *out) {
  out->len = 0;
  if (t->step)
    for (int i = 0; i < t->step->nrhs; i++) vec_push(a, out, t->step->rhs[i]);
  for (int k = 0; k < t->fwd.asgns.len; k++) {
    Asgn *as = VEC_AT(t->fwd.asgns, Asgn, k);
    if (as->kind == ASGN_OP) leaves_of(a, as->rhs, out);
    if (!as->step || as->step == t->step) continue;
    for (int i = 0; i < as->step->nrhs; i++) vec_push(a, out, as->step->rhs[i]);
  }
}

static bool stops(const Tensor *t, int mode, int new_from) {
  if (mode == 1 && t->id < new_from && (t->diff || t->kind != TK_OP)) return true;
  return mode == 2 && t->id < new_from;
}

/* u's inputs, computed once per walker (every walk from a later tensor of a chain
 * meets u again). */
static const PtrVec *walk_inputs(Arena *a, GraphWalk *w, const Tensor *u) {
  if (!w->memo) {
    inputs_of(a, u, &w->in);
    return &w->in;
  }
  if (!w->inputs[u->id]) {
    PtrVec *in = ANEW(a, PtrVec);
    inputs_of(a, u, in);
    w->inputs[u->id] = in;
  }
  return w->inputs[u->id];
}

/* Marks the tensors reachable from t in w->seen (iteratively: graphs can be deep). mode:
 * 0 = everything; 1 = stop at tensors older than new_from unless they are
 * non-differentiable computed tensors; 2 = stop at every tensor older than new_from.
 * The walk's memory lives in w and is reused by the next walk: a caller walking from
 * every named tensor of a chain would otherwise allocate the square of its length. */
void graph_walk(Arena *a, const Graph *g, const Tensor *t, int mode, int new_from, GraphWalk *w) {
  int nt = g->tensors.len;
  if (w->cap < nt + 1) {
    /* Staging walks while it adds tensors: growing by half at least keeps the
     * reallocations' cost linear in the graph. */
    w->cap = nt + 1 + (w->memo ? 0 : nt / 2);
    w->seen = ANEWN(a, char, w->cap);
    if (w->memo) w->inputs = ANEWN(a, PtrVec *, w->cap); /* the graph is only read: inputs stay valid */
  } else {
    /* only what the last walk marked: a small walk in a large graph stays small */
    for (int i = 0; i < w->marked.len; i++) w->seen[((Tensor *)w->marked.items[i])->id] = 0;
  }
  w->stack.len = 0;
  w->marked.len = 0;
  if (!stops(t, mode, new_from)) {
    w->seen[t->id] = 1;
    vec_push(a, &w->stack, (void *)t);
    vec_push(a, &w->marked, (void *)t);
  }
  while (w->stack.len) {
    Tensor *u = w->stack.items[--w->stack.len];
    const PtrVec *in = walk_inputs(a, w, u);
    for (int i = 0; i < in->len; i++) {
      Tensor *v = in->items[i];
      if (!w->seen[v->id] && !stops(v, mode, new_from)) {
        w->seen[v->id] = 1;
        vec_push(a, &w->stack, v);
        vec_push(a, &w->marked, v);
      }
    }
  }
}

char *graph_subgraph(Arena *a, const Graph *g, const Tensor *t, int mode, int new_from) {
  GraphWalk w = {0};
  graph_walk(a, g, t, mode, new_from, &w);
  return w.seen;
}

static void append(Arena *a, Code *dst, const Code *src) {
  for (int i = 0; i < src->asgns.len; i++) vec_push(a, &dst->asgns, src->asgns.items[i]);
}

void graph_forward_code(Arena *a, const Graph *g, const Tensor *t, Code *out) {
  char *seen = graph_subgraph(a, g, t, 0, 0);
  for (int i = 0; i < g->tensors.len; i++)
    if (seen[i]) append(a, out, &((const Tensor *)g->tensors.items[i])->fwd);
}

void graph_backprop_code(Arena *a, const Graph *g, const Tensor *t, Code *out) {
  if (!t->diff) return;
  char *seen = graph_subgraph(a, g, t, 0, 0);
  for (int i = g->tensors.len - 1; i >= 0; i--) {
    const Tensor *u = g->tensors.items[i];
    if (seen[i] && u->diff && u->kind == TK_OP) append(a, out, &u->bwd);
  }
}
