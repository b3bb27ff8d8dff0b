/* Issue 14: stage 1 and the closing stages cost time linear in the number of
 * operations. A deep MLP (relu (b + w * h), then a hinge-like pointwise with a declared
 * target) is solved at depths n and 4n; the solver's simplification count must grow
 * at most ~4x (a quadratic solver grows 16x: every step re-simplified every pending
 * constraint), and the shapes must come out right at every depth. */
#include "infer_util.h"

/* Builds and solves the MLP of `layers` layers; returns the simplification count. */
static long long solve_mlp(int layers, bool *ok) {
  TB b;
  tb_init(&b);
  Tensor *h = tb_const(&b, "x", "8", "", "4");
  for (int i = 0; i < layers; i++) {
    Tensor *w = tb_term(&b, NULL, TK_PARAM, NULL, NULL, NULL);
    Tensor *bias = tb_term(&b, NULL, TK_PARAM, NULL, NULL, "4");
    Tensor *wh = tb_op(&b, NULL, LOGIC_COMPOSE, NULL, w, h, NULL);
    Tensor *sum = tb_op(&b, NULL, LOGIC_POINTWISE_BIN, NULL, bias, wh, NULL);
    h = tb_op(&b, NULL, LOGIC_POINTWISE_UN, NULL, sum, NULL, NULL);
  }
  Tensor *out = tb_op(&b, "out", LOGIC_COMPOSE, NULL, tb_term(&b, "w_out", TK_PARAM, NULL, NULL, NULL), h, NULL);
  tb_op(&b, "loss", LOGIC_POINTWISE_BIN, NULL, tb_const(&b, "y", "8", "", "3"), out, NULL);
  Solver s;
  solver_init(&s, &b.ctx.arena, &b.ctx.diag);
  *ok = infer_solve(&s, b.g);
  long long work = s.work;
  solver_free(&s);
  if (*ok) {
    *ok = infer_shapes(&b.ctx, b.g) && !strcmp(tb_shape(&b, out), "8|3");
    if (!*ok) fprintf(stderr, "%d layers: out is %s: %s\n", layers, tb_shape(&b, out), tb_errors(&b));
  }
  tb_free(&b);
  return work;
}

int main(void) {
  bool ok1, ok2;
  long long w1 = solve_mlp(100, &ok1), w4 = solve_mlp(400, &ok2);
  printf("simplifications: %lld at 100 layers, %lld at 400\n", w1, w4);
  CHECK(ok1 && ok2, "the MLPs should infer");
  CHECK(w4 <= 5 * w1, "superlinear: %lld at 100 layers, %lld at 400", w1, w4);
  if (failures) fprintf(stderr, "%d checks failed\n", failures);
  else printf("all checks passed\n");
  return failures != 0;
}
