/* graph_code.c: code derived from the graph: the forward and backprop code of a
 * tensor's subgraph (what `t.forward` / `t.backprop` denote in %cd, and what
 * `--call T.forward` runs). */
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

/* Marks the tensors reachable from t (iteratively: graphs can be deep). mode: 0 =
 * everything; 1 = stop at tensors older than new_from unless they are
 * non-differentiable computed tensors; 2 = stop at every tensor older than new_from. */
char *graph_subgraph(Arena *a, const Graph *g, const Tensor *t, int mode, int new_from) {
  int nt = g->tensors.len;
  char *seen = ANEWN(a, char, nt + 1);
  PtrVec stack = {0}, in = {0};
  if (!stops(t, mode, new_from)) {
    seen[t->id] = 1;
    vec_push(a, &stack, (void *)t);
  }
  while (stack.len) {
    Tensor *u = stack.items[--stack.len];
    inputs_of(a, u, &in);
    for (int i = 0; i < in.len; i++) {
      Tensor *v = in.items[i];
      if (!seen[v->id] && !stops(v, mode, new_from)) {
        seen[v->id] = 1;
        vec_push(a, &stack, v);
      }
    }
  }
  return seen;
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
