/* Compile time: stage 1 and the closing stages cost time linear in the number of
 * operations. A deep MLP (relu (b + w * h), then a hinge-like pointwise with a declared
 * target) is solved at depths n and 4n; the solver's simplification count must grow
 * at most ~4x (a quadratic solver grows 16x: every step re-simplified every pending
 * constraint), and the shapes must come out right at every depth. The closing stages
 * count their work too (Solver.sweeps, .visits): a chain of d layers takes ~3d closing
 * rounds, so a round that swept every constraint made them O(depth x constraints); now a
 * bounded number of sweeps, and the entries their scans examine stay within a few per
 * constraint created. */
#include "infer_util.h"

/* Builds the MLP of `layers` layers (its output tensor). */
static Tensor *build_mlp(TB *b, int layers) {
  Tensor *h = tb_const(b, "x", "8", "", "4");
  for (int i = 0; i < layers; i++) {
    Tensor *w = tb_term(b, NULL, TK_PARAM, NULL, NULL, NULL);
    Tensor *bias = tb_term(b, NULL, TK_PARAM, NULL, NULL, "4");
    Tensor *wh = tb_op(b, NULL, LOGIC_COMPOSE, NULL, w, h, NULL);
    Tensor *sum = tb_op(b, NULL, LOGIC_POINTWISE_BIN, NULL, bias, wh, NULL);
    h = tb_op(b, NULL, LOGIC_POINTWISE_UN, NULL, sum, NULL, NULL);
  }
  Tensor *out = tb_op(b, "out", LOGIC_COMPOSE, NULL, tb_term(b, "w_out", TK_PARAM, NULL, NULL, NULL), h, NULL);
  tb_op(b, "loss", LOGIC_POINTWISE_BIN, NULL, tb_const(b, "y", "8", "", "3"), out, NULL);
  return out;
}

/* What solving one MLP cost. */
typedef struct Cost {
  long long work, made, sweeps, visits;
} Cost;

/* Builds and solves the MLP of `layers` layers; returns the simplification count (and
 * the constraints created, the closing stages' sweeps and visits). */
static long long solve_mlp(int layers, bool *ok, Cost *cost) {
  TB b;
  tb_init(&b);
  Tensor *out = build_mlp(&b, layers);
  Solver s;
  solver_init(&s, &b.ctx.arena, &b.ctx.diag);
  *ok = infer_solve(&s, b.g);
  long long work = s.work;
  *cost = (Cost){s.work, s.made, s.sweeps, s.visits};
  solver_free(&s);
  if (*ok) {
    *ok = infer_shapes(&b.ctx, b.g) && !strcmp(tb_shape(&b, out), "8|3");
    if (!*ok) fprintf(stderr, "%d layers: out is %s: %s\n", layers, tb_shape(&b, out), tb_errors(&b));
  }
  tb_free(&b);
  return work;
}

/* The divergence guard: a solver whose budget is spent stops at its next
 * simplification with a "does not converge" error at the constraint's step (a diverging
 * program would get there; the budget grows with the constraints created, far above
 * the ~2 per constraint that valid programs take). */
static void guard(void) {
  TB b;
  tb_init(&b);
  build_mlp(&b, 3);
  Solver s;
  solver_init(&s, &b.ctx.arena, &b.ctx.diag);
  s.work = 1LL << 50;
  CHECK(!infer_solve(&s, b.g), "a spent budget must stop the solver");
  CHECK(strstr(tb_errors(&b), "error: shape inference does not converge") != NULL, "got: %s", tb_errors(&b));
  solver_free(&s);
  tb_free(&b);
}

/* The closing stages: a bounded number of sweeps over everything (not one per round of
 * a chain's closing: solving each round from a sweep took 3115 here), and their visits
 * linear in the constraints created (the sweeps are most of them: each visits at most
 * every constraint, or every variable or dimension, of which there are fewer). */
static void closing_cost(int layers, const Cost *c) {
  printf("closing: %lld sweeps, %lld visits at %d layers (%lld constraints)\n", c->sweeps, c->visits, layers, c->made);
  CHECK(c->sweeps <= 64, "%lld sweeps over every constraint at %d layers: one per closing round?", c->sweeps, layers);
  CHECK(c->visits <= 64 * c->made, "%lld visits by the closing stages for %lld constraints at %d layers", c->visits,
        c->made, layers);
}

int main(void) {
  bool ok1, ok2;
  Cost c1, c4;
  long long w1 = solve_mlp(100, &ok1, &c1), w4 = solve_mlp(400, &ok2, &c4), m1 = c1.made, m4 = c4.made;
  printf("simplifications: %lld at 100 layers (%lld constraints), %lld at 400 (%lld)\n", w1, m1, w4, m4);
  CHECK(ok1 && ok2, "the MLPs should infer");
  CHECK(w4 <= 5 * w1, "superlinear: %lld at 100 layers, %lld at 400", w1, w4);
  CHECK(w4 <= 4 * m4, "%lld simplifications for %lld constraints: near the divergence guard's budget", w4, m4);
  closing_cost(100, &c1);
  closing_cost(400, &c4);
  CHECK(c4.visits <= 5 * c1.visits, "closing stages superlinear: %lld visits at 100 layers, %lld at 400", c1.visits,
        c4.visits);
  guard();
  return tk_exit("test_infer_scale");
}
