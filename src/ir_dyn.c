/* ir_dyn.c: dynamic dimensions in the loop IR: products of dims interned in
 * the module, so a Term, a loop extent, a guard or a buffer size names one by a number
 * and two equal products compare as equal numbers. */
#include <stdlib.h>
#include <string.h>

#include "ir.h"

static int cmp_int(const void *a, const void *b) { return *(const int *)a - *(const int *)b; }

int ir_prod(Arena *a, IrModule *m, const int *dims, int n) {
  if (n <= 0) return 0;
  int *d = ANEWN(a, int, n);
  memcpy(d, dims, sizeof(int) * (size_t)n);
  qsort(d, (size_t)n, sizeof(int), cmp_int);
  for (int i = 0; i < m->prods.len; i++) {
    const IrProd *p = m->prods.items[i];
    if (p->n == n && !memcmp(p->dims, d, sizeof(int) * (size_t)n)) return i + 1;
  }
  IrProd *p = ANEW(a, IrProd);
  p->n = n;
  p->dims = d;
  vec_push(a, &m->prods, p);
  return m->prods.len;
}

const IrProd *ir_prod_at(const IrModule *m, int p) { return p > 0 && p <= m->prods.len ? m->prods.items[p - 1] : NULL; }

int ir_prod_mul(Arena *a, IrModule *m, int p, int q) {
  const IrProd *x = ir_prod_at(m, p), *y = ir_prod_at(m, q);
  if (!x) return q;
  if (!y) return p;
  int *d = ANEWN(a, int, x->n + y->n);
  memcpy(d, x->dims, sizeof(int) * (size_t)x->n);
  memcpy(d + x->n, y->dims, sizeof(int) * (size_t)y->n);
  return ir_prod(a, m, d, x->n + y->n);
}

const char *ir_dim_name(Arena *a, const IrModule *m, int id) {
  const IrDim *d = id >= 0 && id < m->dims.len ? m->dims.items[id] : NULL;
  return d && d->name ? d->name : arena_printf(a, "?%d", id);
}

void ir_dim_print(FILE *out, const IrModule *m, int id) {
  const IrDim *d = id >= 0 && id < m->dims.len ? m->dims.items[id] : NULL;
  if (d && d->flag) {
    fputc('(', out);
    ir_dim_print(out, m, d->of);
    fputs(">1)", out);
  } else if (d && d->name) fputs(d->name, out);
  else fprintf(out, "?%d", id);
}

void ir_prod_print(FILE *out, const IrModule *m, int p) {
  const IrProd *x = ir_prod_at(m, p);
  for (int i = 0; x && i < x->n; i++) {
    if (i) fputc('*', out);
    ir_dim_print(out, m, x->dims[i]);
  }
}

static bool aff_dynamic(const Aff *f) {
  for (int i = 0; i < f->n; i++)
    if (f->t[i].dyn) return true;
  return false;
}

static bool access_dynamic(const IrModule *m, const Access *acc) {
  return aff_dynamic(&acc->flat) || VEC_AT(m->bufs, IrBuf, acc->buf)->dsize;
}

static bool expr_dynamic(const IrModule *m, const IrExpr *e) {
  if (e->kind == X_LOAD) return access_dynamic(m, &e->acc);
  if (e->kind != X_OP) return false;
  for (int i = 0; i < 3; i++)
    if (e->a[i] && expr_dynamic(m, e->a[i])) return true;
  return false;
}

bool ir_stmts_dynamic(const IrModule *m, const PtrVec *body) {
  for (int i = 0; i < body->len; i++) {
    const Stmt *s = body->items[i];
    switch (s->kind) {
    case S_LOOP:
      if (s->dext || ir_stmts_dynamic(m, &s->body)) return true;
      break;
    case S_IF:
      for (int k = 0; k < s->nguards; k++)
        if (s->guards[k].dext) return true;
      if (ir_stmts_dynamic(m, &s->body)) return true;
      break;
    case S_STORE:
      if (access_dynamic(m, &s->dst) || expr_dynamic(m, s->val)) return true;
      break;
    case S_FILL:
      if (VEC_AT(m->bufs, IrBuf, s->buf)->dsize) return true;
      break;
    default: break;
    }
  }
  return false;
}

bool ir_stmt_dynamic(const IrModule *m, const Stmt *s) {
  PtrVec one = {.items = (void **)&s, .len = 1, .cap = 1};
  return ir_stmts_dynamic(m, &one);
}
