/* graph_role.c: what each tensor is for, as a checkpoint or a host program sees it
 * (tdsl_tensor_info.role, the `role` lines of the model metadata). */
#include "graph.h"

/* Marks in `early` the tensors whose value e reads before `written` says this code
 * wrote them. */
static void reads_before(const AExpr *e, const char *written, char *early) {
  if (!e) return;
  if (e->kind == AE_BUF && e->buf.t && !e->buf.grad && !written[e->buf.t->id]) early[e->buf.t->id] = 1;
  if (e->kind == AE_OP)
    for (int i = 0; i < 3; i++) reads_before(e->args[i], written, early);
}

/* Walks code in execution order: w[t] = 1 for every tensor it writes; early[t] = 1 for
 * every tensor whose previous value it uses (read, directly or through an intermediate
 * computed earlier in the same code, or accumulated into before being overwritten):
 * state that must survive between calls. Routines are the code that runs as a whole. */
static void scan_code(Arena *a, const Code *c, int nt, char *w, char *early) {
  /* A tensor's own code alone, out of its routine, says nothing about order. */
  if (!early) {
    for (int i = 0; i < c->asgns.len; i++) {
      const Asgn *as = VEC_AT(c->asgns, Asgn, i);
      if (as->kind == ASGN_OP && !as->lhs.grad && as->lhs.t) w[as->lhs.t->id] = 1;
    }
    return;
  }
  char *written = ANEWN(a, char, nt + 1);
  for (int i = 0; i < c->asgns.len; i++) {
    const Asgn *as = VEC_AT(c->asgns, Asgn, i);
    if (as->kind != ASGN_OP) continue;
    reads_before(as->rhs, written, early);
    if (as->lhs.grad || !as->lhs.t) continue;
    int id = as->lhs.t->id;
    if (!written[id] && !as->init_neutral && as->accum != OP_ARG2) early[id] = 1;
    written[id] = w[id] = 1;
  }
}

char *graph_roles(Arena *a, const Graph *g) {
  int nt = g->tensors.len;
  char *w = ANEWN(a, char, nt + 1), *early = ANEWN(a, char, nt + 1), *role = ANEWN(a, char, nt + 1);
  for (int i = 0; i < nt; i++) {
    const Tensor *t = VEC_AT(g->tensors, Tensor, i);
    scan_code(a, &t->fwd, nt, w, NULL);
    scan_code(a, &t->bwd, nt, w, NULL);
  }
  for (int i = 0; i < g->routines.len; i++) scan_code(a, &VEC_AT(g->routines, Routine, i)->code, nt, w, early);
  for (int i = 0; i < nt; i++) {
    const Tensor *t = VEC_AT(g->tensors, Tensor, i);
    switch (t->kind) {
    case TK_PARAM: role[i] = ROLE_PARAM; break;
    case TK_CONST: role[i] = ROLE_CONST; break;
    case TK_OP: role[i] = ROLE_INTERMEDIATE; break;
    case TK_TERM:
      role[i] = !w[i] ? ROLE_INPUT : early[i] ? ROLE_OPTIMIZER : ROLE_INTERMEDIATE;
      break;
    }
  }
  return role;
}
