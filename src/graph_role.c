/* graph_role.c: what each tensor is for, as a checkpoint or a host program sees it
 * (tdsl_tensor_info.role, the `role` lines of the model metadata). */
#include "graph.h"

static bool reads(const AExpr *e, const Tensor *t) {
  if (!e) return false;
  if (e->kind == AE_BUF) return e->buf.t == t && !e->buf.grad;
  if (e->kind != AE_OP) return false;
  for (int i = 0; i < 3; i++)
    if (reads(e->args[i], t)) return true;
  return false;
}

/* Marks, per tensor id, 1 = written by some code, 2 = written by code whose result
 * depends on the tensor's previous value (it reads itself or accumulates into itself):
 * state that must survive between calls. */
static void mark_writes(const Code *c, char *w) {
  for (int i = 0; i < c->asgns.len; i++) {
    const Asgn *as = VEC_AT(c->asgns, Asgn, i);
    if (as->kind != ASGN_OP || as->lhs.grad || !as->lhs.t) continue;
    const Tensor *t = as->lhs.t;
    bool keeps = reads(as->rhs, t) || (!as->init_neutral && as->accum != OP_ARG2);
    if (w[t->id] < (keeps ? 2 : 1)) w[t->id] = keeps ? 2 : 1;
  }
}

char *graph_roles(Arena *a, const Graph *g) {
  int nt = g->tensors.len;
  char *w = ANEWN(a, char, nt + 1), *role = ANEWN(a, char, nt + 1);
  for (int i = 0; i < nt; i++) {
    const Tensor *t = VEC_AT(g->tensors, Tensor, i);
    mark_writes(&t->fwd, w);
    mark_writes(&t->bwd, w);
  }
  for (int i = 0; i < g->routines.len; i++) mark_writes(&VEC_AT(g->routines, Routine, i)->code, w);
  for (int i = 0; i < nt; i++) {
    const Tensor *t = VEC_AT(g->tensors, Tensor, i);
    switch (t->kind) {
    case TK_PARAM: role[i] = ROLE_PARAM; break;
    case TK_CONST: role[i] = ROLE_CONST; break;
    case TK_OP: role[i] = ROLE_INTERMEDIATE; break;
    case TK_TERM:
      role[i] = w[i] == 0 ? ROLE_INPUT : w[i] == 2 ? ROLE_OPTIMIZER : ROLE_INTERMEDIATE;
      break;
    }
  }
  return role;
}

const char *role_name(TensorRole r) {
  static const char *const names[] = {"intermediate", "param", "grad", "optimizer", "input", "const"};
  return r >= 0 && r <= ROLE_CONST ? names[r] : "intermediate";
}
