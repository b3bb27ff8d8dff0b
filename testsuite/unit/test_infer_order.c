/* Declarativeness over whole graphs: random programs of pointwise, compose, transpose
 * and einsum operations over declared, partly declared and undeclared tensors are
 * inferred with their steps in creation order and in shuffled orders; the outcome
 * (shapes, or failure) must not change. Also: no crash, no hang on any of them. */
#include "infer_util.h"

static unsigned long long rng = 0x9E3779B97F4A7C15ULL;
static unsigned rnd(unsigned n) {
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  return (unsigned)(rng % n);
}

static const char *rand_row(void) {
  static const char *rows[] = {"", "2", "3", "1", "2,3", "3,2", "1,3", "2,2", "2,3,4", "3,4"};
  return rows[rnd(10)];
}

static const char *specs1[] = {"i => i", "ij => ji", "...|i->o => ...|o->i", "... => 0", "i... => ...i",
                               "..v..|... => ...|..v..", "ij => i"};
/* Two-argument specs and the same with the arguments swapped (row variables with flanking
 * axes on either side: the alignment must not depend on the argument order). */
enum { NSPECS2 = 10 };
static const char *specs2[2][NSPECS2] = {
    {"i; i => i", "ij; jk => ik", "i; j => ij", "...|i->j; ...|j => ...|i", "..r..; ..r.. => ..r..",
     "ij...; j... => ij...", "...kl; ...l => ...kl", "i...j; i...j => i...j", "ij...; jk... => ik...",
     "i...j; j => i..."},
    {"i; i => i", "jk; ij => ik", "j; i => ij", "...|j; ...|i->j => ...|i", "..r..; ..r.. => ..r..",
     "j...; ij... => ij...", "...l; ...kl => ...kl", "i...j; i...j => i...j", "jk...; ij... => ik...",
     "j; i...j => i..."}};

/* Builds random program number `seed` into b, with every einsum's arguments swapped when
 * `swap`; returns the tensors' count. */
static int build(TB *b, unsigned long long seed, bool swap, Tensor **ts) {
  rng = seed * 0x2545F4914F6CDD1DULL + 1;
  int n = 0;
  int nterm = 2 + (int)rnd(3);
  for (int i = 0; i < nterm; i++) {
    char *name = arena_printf(&b->ctx.arena, "t%d", i);
    switch (rnd(3)) {
    case 0: ts[n++] = tb_const(b, name, rnd(3) ? "" : rand_row(), rnd(2) ? "" : rand_row(), rand_row()); break;
    case 1: ts[n++] = tb_term(b, name, TK_TERM, NULL, NULL, NULL); break;
    default: ts[n++] = tb_term(b, name, TK_PARAM, NULL, NULL, rnd(2) ? rand_row() : NULL); break;
    }
  }
  int nops = 2 + (int)rnd(5);
  for (int i = 0; i < nops; i++) {
    char *name = arena_printf(&b->ctx.arena, "o%d", i);
    Tensor *x = ts[rnd((unsigned)n)], *y = ts[rnd((unsigned)n)];
    switch (rnd(5)) {
    case 0: ts[n++] = tb_op(b, name, LOGIC_POINTWISE_BIN, NULL, x, y, NULL); break;
    case 1: ts[n++] = tb_op(b, name, LOGIC_COMPOSE, NULL, x, y, NULL); break;
    case 2: ts[n++] = tb_op(b, name, LOGIC_TRANSPOSE, NULL, x, NULL, NULL); break;
    case 3: ts[n++] = tb_op(b, name, LOGIC_PERMUTE, specs1[rnd(7)], x, NULL, NULL); break;
    default: {
      const char *spec = specs2[swap][rnd(NSPECS2)];
      ts[n++] = swap ? tb_op(b, name, LOGIC_EINSUM, spec, y, x, NULL) : tb_op(b, name, LOGIC_EINSUM, spec, x, y, NULL);
      break;
    }
    }
  }
  return n;
}

/* Infers with the steps permuted by `shuffle` (0: creation order) and the einsum
 * arguments swapped when `swap`; renders the outcome. */
static void outcome(unsigned long long seed, unsigned shuffle, bool swap, char *out, size_t cap) {
  TB b;
  tb_init(&b);
  Tensor *ts[32];
  int n = build(&b, seed, swap, ts);
  if (shuffle) {
    rng = shuffle;
    PtrVec *v = &b.g->steps;
    for (int i = v->len - 1; i > 0; i--) {
      int j = (int)rnd((unsigned)i + 1);
      void *t = v->items[i];
      v->items[i] = v->items[j], v->items[j] = t;
    }
  }
  bool ok = infer_shapes(&b.ctx, b.g) && !b.ctx.diag.errors;
  size_t len = (size_t)snprintf(out, cap, "%s", ok ? "ok" : "error");
  for (int i = 0; ok && i < n && len + 40 < cap; i++) len += (size_t)snprintf(out + len, cap - len, " %s", tb_shape(&b, ts[i]));
  tb_free(&b);
}

/* The flanked specs over every pair of small closed rows, in both argument orders, with
 * each argument given directly or through a pointwise op (a row open during stage 1). */
static void directed(void) {
  static const char *rows[] = {"2", "3", "4", "2,3", "3,4", "2,4", "2,3,4", "3,4,5", "2,3,4,5"};
  int nrows = (int)(sizeof rows / sizeof *rows), nok = 0;
  for (int sp = 5; sp < NSPECS2; sp++)
    for (int i = 0; i < nrows * nrows * 4; i++) {
      char res[2][512];
      for (int swap = 0; swap < 2; swap++) {
        TB b;
        tb_init(&b);
        Tensor *x = tb_const(&b, "x", "", "", rows[i % nrows]), *y = tb_const(&b, "y", "", "", rows[i / nrows % nrows]);
        if (i / (nrows * nrows) & 1) x = tb_op(&b, "px", LOGIC_POINTWISE_UN, NULL, x, NULL, NULL);
        if (i / (nrows * nrows) & 2) y = tb_op(&b, "py", LOGIC_POINTWISE_UN, NULL, y, NULL, NULL);
        Tensor *r = swap ? tb_op(&b, "r", LOGIC_EINSUM, specs2[1][sp], y, x, NULL)
                         : tb_op(&b, "r", LOGIC_EINSUM, specs2[0][sp], x, y, NULL);
        bool ok = infer_shapes(&b.ctx, b.g) && !b.ctx.diag.errors;
        snprintf(res[swap], sizeof res[swap], "%s", ok ? tb_shape(&b, r) : "error");
        tb_free(&b);
      }
      nok += strcmp(res[0], "error") != 0;
      CHECK(!strcmp(res[0], res[1]), "\"%s\" with x=[%s] y=[%s]: %s, arguments swapped: %s", specs2[0][sp],
            rows[i % nrows], rows[i / nrows % nrows], res[0], res[1]);
    }
  printf("flanked specs over closed rows: %d satisfiable\n", nok);
}

int main(void) {
  directed();
  int nok = 0, nprog = 400;
  char want[4096], got[4096];
  for (int p = 0; p < nprog; p++) {
    outcome((unsigned long long)p + 1, 0, false, want, sizeof want);
    nok += !strncmp(want, "ok", 2);
    for (unsigned k = 0; k <= 8; k++) {
      bool swap = k & 1;
      outcome((unsigned long long)p + 1, k * 7919u, swap, got, sizeof got);
      CHECK(!strcmp(got, want), "program %d, order %u%s:\n  %s\nin creation order:\n  %s", p, k,
            swap ? ", einsum arguments swapped" : "", got, want);
    }
  }
  printf("random programs: %d of %d satisfiable\n", nok, nprog);
  CHECK(nok > 20, "the generator should give satisfiable programs: %d", nok);
  return tk_exit("test_infer_order");
}
