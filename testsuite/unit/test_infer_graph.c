/* Shape inference over hand-built graphs: the conformance cases' shapes and errors. */
#include "infer_util.h"

static bool run(TB *b) { return infer_shapes(&b->ctx, b->g) && !b->ctx.diag.errors; }

static void compose_matrix(void) {
  TB b;
  tb_init(&b);
  Tensor *w = tb_const(&b, "w", "", "3", "2");
  Tensor *x = tb_const(&b, "x", "", "", "3");
  Tensor *y = tb_op(&b, "y", LOGIC_COMPOSE, NULL, w, x, NULL);
  Tensor *v = tb_const(&b, "v", "", "2", "1");
  Tensor *vw = tb_op(&b, "vw", LOGIC_COMPOSE, NULL, v, w, NULL);
  Tensor *a = tb_const(&b, "a", "", "3", "2");
  Tensor *bb = tb_const(&b, "b", "", "4", "3");
  Tensor *c = tb_op(&b, "c", LOGIC_COMPOSE, NULL, a, bb, NULL);
  Tensor *r4 = tb_const(&b, NULL, "", "", "4");
  Tensor *e = tb_op(&b, "e", LOGIC_COMPOSE, NULL, c, r4, NULL);
  CHECK(run(&b), "%s", tb_errors(&b));
  CHECK_SHAPE(&b, y, "2");
  CHECK_SHAPE(&b, vw, "3->1");
  CHECK_SHAPE(&b, c, "4->2");
  CHECK_SHAPE(&b, e, "2");
  tb_free(&b);
}

static void bcast(void) {
  TB b;
  tb_init(&b);
  Tensor *a = tb_const(&b, "a", "2", "", "3");
  Tensor *bb = tb_const(&b, "b", "", "4", "3");
  Tensor *c = tb_op(&b, "c", LOGIC_POINTWISE_BIN, NULL, a, bb, NULL);
  Tensor *col = tb_const(&b, "col", "", "", "3,1");
  Tensor *row = tb_const(&b, "row", "", "", "1,4");
  Tensor *m = tb_op(&b, "m", LOGIC_POINTWISE_BIN, NULL, col, row, NULL);
  Tensor *v4 = tb_const(&b, "v4", "", "", "4");
  Tensor *big = tb_const(&b, "big", "", "", "2,3,4");
  Tensor *r = tb_op(&b, "r", LOGIC_POINTWISE_BIN, NULL, v4, big, NULL);
  Tensor *xb = tb_const(&b, "xb", "2,2", "", "3");
  Tensor *p = tb_op(&b, "p", LOGIC_POINTWISE_BIN, NULL, xb, a, NULL);
  CHECK(run(&b), "%s", tb_errors(&b));
  CHECK_SHAPE(&b, c, "2|4->3");
  CHECK_SHAPE(&b, m, "3,4");
  CHECK_SHAPE(&b, r, "2,3,4");
  CHECK_SHAPE(&b, p, "2,2|3");
  tb_free(&b);
}

static void infer_mlp(void) {
  TB b;
  tb_init(&b);
  Tensor *x = tb_const(&b, "x", "5", "", "2");
  Tensor *target = tb_const(&b, "target", "5", "", "3");
  Tensor *b1 = tb_term(&b, "b1", TK_PARAM, NULL, NULL, "8");
  Tensor *w1 = tb_term(&b, "w1", TK_PARAM, NULL, NULL, NULL);
  Tensor *m1 = tb_op(&b, NULL, LOGIC_COMPOSE, NULL, w1, x, NULL);
  Tensor *p1 = tb_op(&b, NULL, LOGIC_POINTWISE_BIN, NULL, b1, m1, NULL);
  Tensor *h = tb_op(&b, "h", LOGIC_POINTWISE_UN, NULL, p1, NULL, NULL);
  Tensor *w2 = tb_term(&b, "w2", TK_PARAM, NULL, NULL, NULL);
  Tensor *out = tb_op(&b, "out", LOGIC_COMPOSE, NULL, w2, h, NULL);
  Tensor *diff = tb_op(&b, "diff", LOGIC_POINTWISE_BIN, NULL, out, target, NULL);
  CHECK(run(&b), "%s", tb_errors(&b));
  CHECK_SHAPE(&b, w1, "2->8");
  CHECK_SHAPE(&b, b1, "8");
  CHECK_SHAPE(&b, h, "5|8");
  CHECK_SHAPE(&b, w2, "8->3");
  CHECK_SHAPE(&b, out, "5|3");
  CHECK_SHAPE(&b, diff, "5|3");
  tb_free(&b);
}

static void labels(void) {
  TB b;
  tb_init(&b);
  Tensor *w = tb_term(&b, "w", TK_PARAM, NULL, NULL, NULL);
  Tensor *c = tb_term(&b, "c", TK_PARAM, NULL, NULL, "rgb=3");
  Tensor *m = tb_op(&b, NULL, LOGIC_COMPOSE, NULL, w, c, NULL);
  Tensor *r2 = tb_const(&b, NULL, "", "", "2");
  Tensor *y = tb_op(&b, "y", LOGIC_POINTWISE_BIN, NULL, m, r2, NULL);
  CHECK(run(&b), "%s", tb_errors(&b));
  CHECK_SHAPE(&b, c, "rgb=3");
  CHECK_SHAPE(&b, w, "rgb=3->2");
  CHECK_SHAPE(&b, y, "2");
  tb_free(&b);
}

static void param_from_compose(void) {
  TB b;
  tb_init(&b);
  Tensor *hey = tb_term(&b, "hey", TK_PARAM, NULL, NULL, NULL);
  Tensor *l23 = tb_const(&b, NULL, "", "", "2");
  Tensor *m = tb_op(&b, NULL, LOGIC_COMPOSE, NULL, hey, l23, NULL);
  Tensor *l456 = tb_const(&b, NULL, "", "", "3");
  Tensor *y = tb_op(&b, "y", LOGIC_POINTWISE_BIN, NULL, m, l456, NULL);
  CHECK(run(&b), "%s", tb_errors(&b));
  CHECK_SHAPE(&b, hey, "2->3");
  CHECK_SHAPE(&b, y, "3");
  tb_free(&b);
}

static void cd_input(void) {
  TB b;
  tb_init(&b);
  Tensor *w = tb_const(&b, "w", "", "2", "3");
  Tensor *point = tb_term(&b, "point", TK_TERM, NULL, NULL, NULL);
  Tensor *y = tb_op(&b, "y", LOGIC_COMPOSE, NULL, w, point, NULL);
  CHECK(run(&b), "%s", tb_errors(&b));
  CHECK_SHAPE(&b, point, "2");
  CHECK_SHAPE(&b, y, "3");
  tb_free(&b);
}

static void rowvar(void) {
  TB b;
  tb_init(&b);
  Tensor *x = tb_const(&b, "x", "", "", "2,3");
  Tensor *w = tb_term(&b, "w", TK_PARAM, NULL, NULL, NULL);
  Tensor *y = tb_op(&b, "y", LOGIC_EINSUM, "..r..; ..r.. => ..r..", w, x, NULL);
  Tensor *xb = tb_const(&b, "xb", "2", "", "3,4");
  Tensor *s = tb_op(&b, "s", LOGIC_PERMUTE, "...|..d.. => ...|0", xb, NULL, NULL);
  Tensor *c = tb_op(&b, "c", LOGIC_POINTWISE_BIN, NULL, xb, s, NULL);
  CHECK(run(&b), "%s", tb_errors(&b));
  CHECK_SHAPE(&b, w, "2,3");
  CHECK_SHAPE(&b, y, "2,3");
  CHECK_SHAPE(&b, s, "2|1");
  CHECK_SHAPE(&b, c, "2|3,4");
  tb_free(&b);
}

static void einsums(void) {
  TB b;
  tb_init(&b);
  Tensor *hey = tb_const(&b, "hey", "2", "3", "4");
  Tensor *ho = tb_op(&b, "ho", LOGIC_PERMUTE, "...|i->o => ...|o->i", hey, NULL, NULL);
  Tensor *ho2 = tb_op(&b, "ho2", LOGIC_PERMUTE, "b|...->o => o|...->b", hey, NULL, NULL);
  Tensor *hey2 = tb_const(&b, "hey2", "2,3", "4,5", "6,7");
  Tensor *ho3 = tb_op(&b, "ho3", LOGIC_PERMUTE, "...b|...i->...o => ...i|...o->...b", hey2, NULL, NULL);
  Tensor *ho4 = tb_op(&b, "ho4", LOGIC_PERMUTE, "...b|...i->...o => i|o->b", hey2, NULL, NULL);
  Tensor *ho5 = tb_op(&b, "ho5", LOGIC_PERMUTE, "...|...->...o => o", hey, NULL, NULL);
  Tensor *hey4 = tb_const(&b, "hey4", "", "2", "3,4");
  Tensor *ho7 = tb_op(&b, "ho7", LOGIC_PERMUTE, "i->...o => ...io", hey4, NULL, NULL);
  Tensor *a = tb_const(&b, "a", "3", "4", "2");
  Tensor *bb = tb_const(&b, "b", "3", "1", "4");
  Tensor *c = tb_op(&b, "c", LOGIC_EINSUM, "...|i->...; ...|...->i => ...|i", a, bb, NULL);
  Tensor *d = tb_const(&b, "d", "", "2", "3");
  Tensor *e = tb_const(&b, "e", "", "4", "3");
  Tensor *f = tb_op(&b, "f", LOGIC_EINSUM, "i->...; j->... => ...ij", d, e, NULL);
  /* permute, leftmost axes, matmul, multichar */
  Tensor *hp = tb_op(&b, "hp", LOGIC_PERMUTE, "ab|cd->ef => cf|ae->db", hey2, NULL, NULL);
  Tensor *a3 = tb_const(&b, "a3", "3", "4", "2");
  Tensor *b3 = tb_const(&b, "b3", "3", "2,3", "4");
  Tensor *c3 = tb_op(&b, "c3", LOGIC_EINSUM, "...|i->1; ...|j...->i => ...|ij", a3, b3, NULL);
  Tensor *a2 = tb_const(&b, "a2", "", "2", "2");
  Tensor *b2 = tb_const(&b, "b2", "", "2,3,4", "2");
  Tensor *c2 = tb_op(&b, "c2", LOGIC_EINSUM, "i->1; ij...->0 => ...->ji", a2, b2, NULL);
  Tensor *ma = tb_const(&b, "ma", "2", "3", "4");
  Tensor *mb = tb_const(&b, "mb", "2", "4", "5");
  Tensor *md = tb_op(&b, "md", LOGIC_EINSUM, "a|i->h; b|h->o => ab|i->o", ma, mb, NULL);
  Tensor *me = tb_op(&b, "me", LOGIC_EINSUM, "b|i->h; b|h->o => i->o", ma, mb, NULL);
  Tensor *p = tb_const(&b, "p", "", "", "2,3");
  Tensor *q = tb_const(&b, "q", "", "", "3,4");
  Tensor *r = tb_op(&b, "r", LOGIC_EINSUM, "row, inner; inner, col => row, col", p, q, NULL);
  Tensor *x = tb_const(&b, "x", "2", "", "2,2,3,4");
  Tensor *yv = tb_op(&b, "yv", LOGIC_PERMUTE, "..v..|...ijk => ..v..kji", x, NULL, NULL);
  Tensor *zv = tb_op(&b, "zv", LOGIC_PERMUTE, "..v..|..w.. => ..w..|..v..", x, NULL, NULL);
  Tensor *o1 = tb_const(&b, "o1", "", "", "2");
  Tensor *o2 = tb_const(&b, "o2", "", "", "3");
  Tensor *outer = tb_op(&b, "outer", LOGIC_EINSUM, "i; j => i->j", o1, o2, NULL);
  CHECK(run(&b), "%s", tb_errors(&b));
  CHECK_SHAPE(&b, ho, "2|4->3");
  CHECK_SHAPE(&b, ho2, "4|3->2");
  CHECK_SHAPE(&b, ho3, "2,5|4,7->6,3");
  CHECK_SHAPE(&b, ho4, "5|7->3");
  CHECK_SHAPE(&b, ho5, "4");
  CHECK_SHAPE(&b, ho7, "3,2,4");
  CHECK_SHAPE(&b, c, "3|4");
  CHECK_SHAPE(&b, f, "3,2,4");
  CHECK_SHAPE(&b, hp, "4,7|2,6->5,3");
  CHECK_SHAPE(&b, c3, "3|4,2");
  CHECK_SHAPE(&b, c2, "4->3,2");
  CHECK_SHAPE(&b, md, "2,2|3->5");
  CHECK_SHAPE(&b, me, "3->5");
  CHECK_SHAPE(&b, r, "2,4");
  CHECK_SHAPE(&b, yv, "2,4,3,2");
  CHECK_SHAPE(&b, zv, "2,2,3,4|2");
  CHECK_SHAPE(&b, outer, "2->3");
  tb_free(&b);
}

static void fixed_index(void) {
  TB b;
  tb_init(&b);
  Tensor *hey = tb_const(&b, "hey", "2", "3", "4");
  Tensor *ho = tb_op(&b, "ho", LOGIC_PERMUTE, "...|1->... => ...|...", hey, NULL, NULL);
  Tensor *ho2 = tb_op(&b, "ho2", LOGIC_PERMUTE, "...|...->... => ...|...->0", hey, NULL, NULL);
  Tensor *hey2 = tb_const(&b, "hey2", "", "2", "3");
  Tensor *ho3 = tb_op(&b, "ho3", LOGIC_PERMUTE, "...|...->... => 0", hey2, NULL, NULL);
  Tensor *ho4 = tb_op(&b, "ho4", LOGIC_PERMUTE, "i->j => i0j", hey2, NULL, NULL);
  Tensor *a = tb_const(&b, "a", "3", "4", "2");
  Tensor *bb = tb_const(&b, "b", "3", "1", "4");
  Tensor *c = tb_op(&b, "c", LOGIC_EINSUM, "...|i->1; ...|...->i => ...|i", a, bb, NULL);
  Tensor *r6 = tb_const(&b, "r6", "", "", "6");
  Tensor *tk = tb_op(&b, "tk", LOGIC_PERMUTE, "k=>k2", r6, NULL, NULL);
  Tensor *data = tb_const(&b, "data", "3", "", "2");
  Tensor *row2 = tb_op(&b, "row2", LOGIC_PERMUTE, "2...|... => ...|...", data, NULL, NULL);
  CHECK(run(&b), "%s", tb_errors(&b));
  CHECK_SHAPE(&b, ho, "2|4");
  CHECK_SHAPE(&b, ho2, "2|3->1");
  CHECK_SHAPE(&b, ho3, "1");
  CHECK_SHAPE(&b, ho4, "2,1,3");
  CHECK_SHAPE(&b, c, "3|4");
  CHECK_SHAPE(&b, tk, "6,3");
  CHECK_SHAPE(&b, row2, "2");
  tb_free(&b);
}

static void slice(void) {
  TB b;
  tb_init(&b);
  IndexSym *n = ANEW(&b.ctx.arena, IndexSym);
  n->name = "n";
  n->range = 3;
  Tensor *data = tb_const(&b, "data", "3", "", "2");
  Tensor *row = tb_op(&b, "row", LOGIC_BATCH_SLICE, NULL, data, NULL, NULL);
  row->step->sym = n;
  Tensor *xs = tb_const(&b, "xs", "4,5", "", "2");
  Tensor *r2 = tb_op(&b, "r2", LOGIC_BATCH_SLICE, NULL, xs, NULL, NULL);
  IndexSym *m = ANEW(&b.ctx.arena, IndexSym);
  m->name = "m";
  r2->step->sym = m;
  CHECK(run(&b), "%s", tb_errors(&b));
  CHECK_SHAPE(&b, row, "2");
  CHECK_SHAPE(&b, r2, "5|2");
  tb_free(&b);

  tb_init(&b);
  n = ANEW(&b.ctx.arena, IndexSym);
  n->name = "n";
  n->range = 3;
  data = tb_const(&b, "data", "4", "", "2");
  row = tb_op(&b, "row", LOGIC_BATCH_SLICE, NULL, data, NULL, NULL);
  row->step->sym = n;
  CHECK(!run(&b), "slice with a wrong range must fail");
  /* The range is an equation on the sliced axis (as OCANNL's Batch_slice): a mismatch of
   * the two sizes, its notes naming where each comes from. */
  CHECK(strstr(tb_errors(&b), "3 vs 4") && strstr(tb_errors(&b), "sliced axis") && strstr(tb_errors(&b), "dimension 4"), "%s",
        tb_errors(&b));
  tb_free(&b);
}

static void conv(void) {
  TB b;
  tb_init(&b);
  Tensor *w = tb_const(&b, "w", "", "", "3");
  Tensor *x = tb_const(&b, "x", "", "", "5");
  Tensor *y = tb_op(&b, "y", LOGIC_EINSUM, "o=+k; k => o", x, w, NULL);
  Tensor *x6 = tb_const(&b, "x6", "", "", "6");
  Tensor *yv = tb_op(&b, "yv", LOGIC_EINSUM, "o<+k; k => o", x6, w, NULL);
  Tensor *x7 = tb_const(&b, "x7", "", "", "7");
  Tensor *yd = tb_op(&b, "yd", LOGIC_EINSUM, "o<+2*k; k => o", x7, w, NULL);
  Tensor *x9 = tb_const(&b, "x9", "", "", "9");
  Tensor *ys = tb_op(&b, "ys", LOGIC_EINSUM, "2*o<+k; k => o", x9, w, NULL);
  Tensor *img = tb_const(&b, "img", "2", "", "5,5,2");
  Tensor *kern = tb_const(&b, "kern", "", "3,3,2", "3");
  Tensor *out = tb_op(&b, "out", LOGIC_EINSUM,
                      "... | 2*oh<+kh, 2*ow<+kw, ..ic..; kh, kw, ..ic.. -> ..oc.. => ... | oh, ow, ..oc..", img, kern,
                      NULL);
  Tensor *img7 = tb_const(&b, "img7", "", "", "7,7,2");
  Tensor *win = tb_const(&b, "win", "", "", "3,3");
  Tensor *pool = tb_op(&b, "pool", LOGIC_EINSUM, "... | 2*oh<+wh, 2*ow<+ww, ..c..; wh, ww => ... | oh, ow, ..c..",
                       img7, win, NULL);
  Tensor *x2 = tb_const(&b, "x2", "", "", "3,3");
  Tensor *ones = tb_const(&b, "ones", "", "", "3,3");
  Tensor *y2 = tb_op(&b, "y2", LOGIC_EINSUM, "oh=+kh, ow=+kw; kh, kw => oh, ow", x2, ones, NULL);
  CHECK(run(&b), "%s", tb_errors(&b));
  CHECK_SHAPE(&b, y, "5");
  CHECK_SHAPE(&b, yv, "4");
  CHECK_SHAPE(&b, yd, "3");
  CHECK_SHAPE(&b, ys, "4");
  CHECK_SHAPE(&b, out, "2|2,2,3");
  CHECK_SHAPE(&b, pool, "3,3,2");
  CHECK_SHAPE(&b, y2, "3,3");
  tb_free(&b);

  /* 5 = 2*(o-1) + 2 has no solution */
  tb_init(&b);
  Tensor *x5 = tb_const(&b, "x5", "", "", "5");
  Tensor *k2 = tb_const(&b, "k2", "", "", "2");
  tb_op(&b, "bad", LOGIC_EINSUM, "2*o<+k; k => o", x5, k2, NULL);
  CHECK(!run(&b), "invalid valid-convolution sizes must fail");
  CHECK(strstr(tb_errors(&b), "valid convolution") && strstr(tb_errors(&b), "5"), "%s", tb_errors(&b));
  tb_free(&b);
}

static void expect_error(const char *what, void (*build)(TB *), const char **subs, int line) {
  TB b;
  tb_init(&b);
  build(&b);
  CHECK(!run(&b), "%s: must fail", what);
  const char *e = tb_errors(&b);
  for (int i = 0; subs[i]; i++) CHECK(strstr(e, subs[i]) != NULL, "%s: '%s' missing in:\n%s", what, subs[i], e);
  char want[32];
  snprintf(want, sizeof want, "tdslc: error:");
  (void)line;
  CHECK(strstr(e, want) != NULL, "%s: no error line:\n%s", what, e);
  tb_free(&b);
}

static void b_compose_mismatch(TB *b) {
  Tensor *w = tb_const(b, "w", "", "3", "2");
  Tensor *x = tb_const(b, "x", "", "", "4");
  tb_op(b, "y", LOGIC_COMPOSE, NULL, w, x, NULL);
}
static void b_pointwise_mismatch(TB *b) {
  Tensor *a = tb_const(b, "a", "", "", "3");
  Tensor *x = tb_const(b, "b", "", "", "4");
  tb_op(b, "c", LOGIC_POINTWISE_BIN, NULL, a, x, NULL);
}
static void b_einsum_mismatch(TB *b) {
  Tensor *a = tb_const(b, "a", "", "", "2,3");
  Tensor *x = tb_const(b, "b", "", "", "4,5");
  tb_op(b, "c", LOGIC_EINSUM, "ij; jk => ik", a, x, NULL);
}
static void b_label_mismatch(TB *b) {
  Tensor *a = tb_term(b, "a", TK_PARAM, NULL, NULL, "rgb=3");
  Tensor *x = tb_term(b, "b", TK_PARAM, NULL, NULL, "xyz=3");
  tb_op(b, "y", LOGIC_POINTWISE_BIN, NULL, a, x, NULL);
}
static void b_param_free(TB *b) {
  Tensor *w = tb_term(b, "w", TK_PARAM, NULL, NULL, NULL);
  Tensor *x = tb_term(b, "x", TK_PARAM, NULL, NULL, NULL);
  Tensor *s = tb_op(b, "s", LOGIC_POINTWISE_BIN, NULL, w, x, NULL);
  Tensor *f = tb_const(b, "f", "", "", "3");
  tb_op(b, "z", LOGIC_EINSUM, "i; j => ij", s, f, NULL); /* nothing fixes i */
  (void)s;
}
static void b_cycle(TB *b) {
  Tensor *x = tb_term(b, "x", TK_TERM, NULL, NULL, NULL);
  Tensor *y = tb_op(b, "y", LOGIC_PERMUTE, "..r.. => ..r..a", x, NULL, NULL);
  /* a %cd step: x = y reversed shape relation */
  UpdateStep *st = graph_step(&b->ctx.arena, b->g, LOGIC_PERMUTE, x, 1, &y, tb_loc(b));
  st->spec = tb_spec(&b->ctx.arena, "..r.. => ..r..b");
}

static void errors(void) {
  const char *s1[] = {"3", "4", "dimension mismatch", NULL};
  expect_error("compose", b_compose_mismatch, s1, 0);
  expect_error("pointwise", b_pointwise_mismatch, s1, 0);
  expect_error("einsum", b_einsum_mismatch, s1, 0);
  const char *s2[] = {"rgb", "xyz", NULL};
  expect_error("labels", b_label_mismatch, s2, 0);
  const char *s3[] = {"parameter", NULL};
  expect_error("param", b_param_free, s3, 0);
  const char *s4[] = {"converge", NULL};
  expect_error("cycle", b_cycle, s4, 0);
}

int main(void) {
  compose_matrix();
  bcast();
  infer_mlp();
  labels();
  param_from_compose();
  cd_input();
  rowvar();
  einsums();
  fixed_index();
  slice();
  conv();
  errors();
  return tk_exit("test_infer_graph");
}
