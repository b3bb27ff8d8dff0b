/* sched_epi.c: kernel epilogues (sched_fuse.h): a pointwise nest that reads a
 * contraction's result right after it (bias + activation after a matmul) runs per cell
 * inside the kernel, once the cell is final, instead of as a pass of its own over the
 * result. */
#include "sched_fuse.h"

static bool same_flat(const Aff *x, const Aff *y) {
  if (x->off != y->off || x->n != y->n) return false;
  for (int i = 0; i < x->n; i++) {
    long c = 0;
    for (int k = 0; k < y->n; k++)
      if (y->t[k].var == x->t[i].var && !y->t[k].dyn) c += y->t[k].coef;
    if (x->t[i].var < 0 || x->t[i].dyn || c != x->t[i].coef) return false;
  }
  return true;
}

/* Buffers the epilogue writes (so far) and the kernel's: C (its target), A, B. */
typedef struct Epi {
  const Kernel *k;
  const Aff *cell; /* the kernel's target cell */
  int written[64];
  int nwritten;
} Epi;

static bool epi_writes(const Epi *e, int buf) {
  for (int i = 0; i < e->nwritten; i++)
    if (e->written[i] == buf) return true;
  return false;
}

/* Every load reads either the current cell of C or of a buffer the epilogue writes, or a
 * buffer neither writes (a bias), through loop variables only. */
static bool loads_ok(const Epi *e, const IrExpr *x) {
  if (x->kind == X_SYM) return false;
  if (x->kind == X_OP)
    for (int i = 0; i < op_info[x->op].arity; i++)
      if (!loads_ok(e, x->a[i])) return false;
  if (x->kind != X_LOAD) return true;
  for (int i = 0; i < x->acc.flat.n; i++)
    if (x->acc.flat.t[i].var < 0 || x->acc.flat.t[i].dyn) return false;
  bool mine = x->acc.buf == e->k->store->dst.buf || epi_writes(e, x->acc.buf);
  return !mine || same_flat(&x->acc.flat, e->cell);
}

/* The store renamed to the kernel's variables (map), if it writes the kernel's cell (the
 * same flat index as C) of a buffer other than C, A and B. */
static Stmt *epi_store(Arena *a, Epi *e, const Stmt *st, const int *map) {
  const Stmt *ks = e->k->store;
  Stmt *r = sched_stmt_renamed(a, st, map);
  int b = r->dst.buf;
  if (b == ks->dst.buf || b == ks->val->a[0]->acc.buf || b == ks->val->a[1]->acc.buf || !same_flat(&r->dst.flat, e->cell))
    return NULL;
  if (e->nwritten == 64) return NULL;
  if (!epi_writes(e, b)) e->written[e->nwritten++] = b;
  return r;
}

bool sched_fuse_epilogue(Arena *a, Stmt *kern, const Stmt *comment, const Stmt *nest) {
  Kernel *k = kern->kern;
  if (kern->kind != S_KERNEL || k->nm != 1 || k->nd.n != 1 || (k->kd.n != 1 && !k->kd.linear) || k->nrow_guards || k->epilogue.len)
    return false;
  /* nest: for a < m { for b < n { stores } }, a the rows and b the columns of C */
  if (nest->kind != S_LOOP || nest->body.len != 1 || nest->tile_var >= 0 || nest->accs > 1 || nest->ext != k->ext[0])
    return false;
  const Stmt *in = nest->body.items[0];
  if (in->kind != S_LOOP || in->tile_var >= 0 || in->accs > 1 || in->ext != k->ext[1]) return false;
  int nv = (nest->var > in->var ? nest->var : in->var) + 1; /* the nest's only variables */
  int *map = ANEWN(a, int, nv);
  for (int v = 0; v < nv; v++) map[v] = v;
  map[nest->var] = k->var[0], map[in->var] = k->var[1];
  Epi e = {.k = k, .cell = &k->store->dst.flat};
  PtrVec body = {0};
  if (comment) vec_push(a, &body, (void *)comment);
  for (int i = 0; i < in->body.len; i++) {
    const Stmt *s = in->body.items[i];
    Stmt *r = s->kind == S_STORE ? epi_store(a, &e, s, map) : s->kind == S_COMMENT ? (Stmt *)s : NULL;
    if (!r) return false;
    vec_push(a, &body, r);
  }
  for (int i = 0; i < body.len; i++) { /* every write known: each load on its own cell */
    const Stmt *s = body.items[i];
    if (s->kind == S_STORE && !loads_ok(&e, s->val)) return false;
  }
  k->epilogue = body;
  return true;
}
