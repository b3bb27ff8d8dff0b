/* The split compile's plan (backends/gccjit/jit_group.c) on hand-built modules: groups
 * are deterministic, hold every compiled function once, stay within their size bound,
 * change only around a local edit, and a group's cache key changes when its own
 * storage changes but not when storage elsewhere moves. */
#include <string.h>

#include "jit.h"
#include "testkit.h"

enum { NF = 600 };

/* NF functions f0..f(NF-1); fi fills buffer i (16 floats) fills[i] times. */
static IrModule *module(Arena *a, const int *fills, long size10) {
  IrModule *m = ANEW(a, IrModule);
  for (int i = 0; i < NF; i++) {
    IrBuf *b = ANEW(a, IrBuf);
    b->id = i;
    b->name = arena_printf(a, "b%d", i);
    b->size = i == 10 ? size10 : 16;
    b->rank = 1;
    b->dims = ANEWN(a, int, 1);
    b->dims[0] = (int)b->size;
    vec_push(a, &m->bufs, b);
    IrFunc *f = ANEW(a, IrFunc);
    f->id = i;
    f->name = arena_printf(a, "f%d", i);
    for (int k = 0; k < fills[i]; k++) {
      Stmt *s = ANEW(a, Stmt);
      s->kind = S_FILL;
      s->buf = i;
      s->value = k;
      vec_push(a, &f->body, s);
    }
    vec_push(a, &m->funcs, f);
  }
  return m;
}

static const JitOpts OPTS = {.name = "g", .opt_level = 2};

static int ncuts_differing(const JitPlan *a, const JitPlan *b, int *first_diff) {
  int n = 0;
  *first_diff = -1;
  for (int i = 1; i < NF; i++) {
    bool ca = a->group[i] != a->group[i - 1], cb = b->group[i] != b->group[i - 1];
    if (ca != cb) {
      n++;
      if (*first_diff < 0) *first_diff = i;
    }
  }
  return n;
}

int main(void) {
  Arena a = {0};
  int fills[NF];
  for (int i = 0; i < NF; i++) fills[i] = 1 + i % 3;
  JitPlan *p = jit_plan(&a, module(&a, fills, 16), &OPTS, false);
  JitPlan *q = jit_plan(&a, module(&a, fills, 16), &OPTS, false);

  /* every function in exactly one code group, groups within their bound, deterministic */
  CHECK(p->ngroups > JIT_GLUE_GROUPS + 4, "%d groups", p->ngroups);
  CHECK(p->ngroups == q->ngroups);
  long sum = 0;
  for (int g = JIT_GLUE_GROUPS; g < p->ngroups; g++) {
    sum += p->size[g];
    CHECK(p->size[g] <= 200 + 4, "group %d: %ld", g, p->size[g]);
    CHECK(!strcmp(jit_group_key(&a, p, &OPTS, g, false), jit_group_key(&a, q, &OPTS, g, false)), "group %d", g);
  }
  CHECK(sum == p->total, "%ld vs %ld", sum, p->total);
  for (int i = 0; i < NF; i++) {
    CHECK(p->group[i] >= JIT_GLUE_GROUPS && p->group[i] == q->group[i], "f%d", i);
    CHECK(i == 0 || p->group[i] >= p->group[i - 1], "f%d: groups follow the IR order", i);
  }

  /* a local edit (f300 grows by 80 statements) moves boundaries only near it */
  fills[300] += 80;
  JitPlan *e = jit_plan(&a, module(&a, fills, 16), &OPTS, false);
  int first;
  int nd = ncuts_differing(p, e, &first);
  CHECK(nd <= 4, "%d boundaries moved", nd);
  CHECK(nd == 0 || first > 200, "first moved boundary after f%d", first);
  fills[300] -= 80;

  /* buffer 10 grows: the groups far from it keep their keys (their storage moved
   * but not relative to their clusters), the group that fills it does not */
  JitPlan *w = jit_plan(&a, module(&a, fills, 1000), &OPTS, false);
  CHECK(w->ngroups == p->ngroups);
  int changed = 0, g10 = p->group[10];
  for (int g = JIT_GLUE_GROUPS; g < p->ngroups && w->ngroups == p->ngroups; g++) {
    bool same = !strcmp(jit_group_key(&a, p, &OPTS, g, false), jit_group_key(&a, w, &OPTS, g, false));
    changed += !same;
    if (g == g10) CHECK(!same, "the group of f10 (%d) kept its key", g);
  }
  CHECK(changed == 1, "%d groups changed", changed);
  /* ... and the storage moved: the base offsets (meta group) differ */
  int far = p->group[NF - 1];
  CHECK(p->store[far].n == 1 && w->store[far].n == 1 && w->store[far].base[0] > p->store[far].base[0]);

  /* twins (a tensor's .fwd and .bwd, IrFunc.twin) far apart in the IR share a group:
   * fi and f(NF-1-i) for i < 100, the others in IR order between */
  IrModule *tm = module(&a, fills, 16);
  for (int i = 0; i < 100; i++) {
    VEC_AT(tm->funcs, IrFunc, i)->twin = NF - i;
    VEC_AT(tm->funcs, IrFunc, NF - 1 - i)->twin = i + 1;
  }
  JitPlan *t = jit_plan(&a, tm, &OPTS, false);
  for (int i = 0; i < 100; i++) CHECK(t->group[i] == t->group[NF - 1 - i], "f%d and its twin", i);
  for (int i = 100; i < NF - 100; i++) CHECK(t->group[i] >= t->group[i - 1], "f%d: the rest in IR order", i);
  long tsum = 0;
  for (int g = JIT_GLUE_GROUPS; g < t->ngroups; g++) tsum += t->size[g];
  CHECK(tsum == t->total && t->ngroups > JIT_GLUE_GROUPS + 4);
  arena_free(&a);
  return tk_exit("test_jit_group");
}
